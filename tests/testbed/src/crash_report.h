/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* The lines that frame the crash report crash_report.c writes, shared with the C++ code that
 * reads it (start_failure.cpp). */
#pragma once

#define RDMA_QOS_CRASH_REPORT_BEGIN "rdma-qos testbed: fatal SIGSEGV, stack:\n"
#define RDMA_QOS_CRASH_REPORT_END "rdma-qos testbed: end of stack\n"
