// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Whose crash it was: only umad2sim's known start-up crash earns a second start.
#include "rdma-qos/testbed/start_failure.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>

namespace rdmaqos::testbed {
namespace {

constexpr int kSegv = 128 + SIGSEGV;

// The test bed's crash report (crash_report.c) around the given frames.
std::string crash_report(const std::string& frames) {
  return "rdma-qos-sad: discovery done\n"
         "rdma-qos testbed: fatal SIGSEGV, stack:\n" +
         frames + "rdma-qos testbed: end of stack\n";
}

const std::string kSimulatorStack =
    "/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f00aa03c050]\n"
    "/lib/x86_64-linux-gnu/libc.so.6(pthread_mutex_lock+0x4)[0x7f00aa089a94]\n"
    "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so(+0x3a1f)[0x7f00aa3a0a1f]\n"
    "/lib/x86_64-linux-gnu/libc.so.6(+0x89134)[0x7f00aa089134]\n";
const std::string kOurStack =
    "/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f00aa03c050]\n"
    "build/sa-responder/rdma-qos-sad(+0x5e21)[0x55d0c0a05e21]\n"
    "/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x85)[0x7f00aa027305]\n";

TEST(StartFailure, SegvOnAStackThroughUmad2simIsTheSimulators) {
  EXPECT_TRUE(classify_start_failure(kSegv, crash_report(kSimulatorStack)).simulator);
}

TEST(StartFailure, SegvOnAStackOfOursIsOurs) {
  EXPECT_FALSE(classify_start_failure(kSegv, crash_report(kOurStack)).simulator);
}

TEST(StartFailure, SegvWithoutACrashReportIsOurs) {
  EXPECT_FALSE(classify_start_failure(kSegv, "rdma-qos-sad: discovery done\n").simulator);
}

TEST(StartFailure, OnlyTheLastCrashReportCounts) {
  // umad2sim named in an earlier report (or a log line) does not excuse the crash that ended it.
  const std::string output = crash_report(kSimulatorStack) + crash_report(kOurStack);
  EXPECT_FALSE(classify_start_failure(kSegv, output).simulator);
}

TEST(StartFailure, UmadSimNamedOutsideTheReportDoesNotCount) {
  const std::string output =
      "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so\n" + crash_report(kOurStack);
  EXPECT_FALSE(classify_start_failure(kSegv, output).simulator);
}

TEST(StartFailure, OtherSignalsAreOurs) {
  for (int sig : {SIGABRT, SIGBUS, SIGILL, SIGFPE, SIGKILL}) {
    SCOPED_TRACE(sig);
    EXPECT_FALSE(classify_start_failure(128 + sig, crash_report(kSimulatorStack)).simulator);
  }
}

TEST(StartFailure, ExitStatusesAreOurs) {
  for (int code : {0, 1, 3, 78}) {
    SCOPED_TRACE(code);
    EXPECT_FALSE(classify_start_failure(code, "").simulator);
  }
}

const std::string kAsanSegvInSimulator =
    "==4242==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000030 (pc 0x7f00 "
    "T3)\n"
    "    #0 0x7f00aa089a94 in pthread_mutex_lock (/lib/x86_64-linux-gnu/libc.so.6+0x89a94)\n"
    "    #1 0x7f00aa3a0a1f  (/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so+0x3a1f)\n"
    "SUMMARY: AddressSanitizer: SEGV (/lib/x86_64-linux-gnu/libc.so.6+0x89a94) in "
    "pthread_mutex_lock\n";

// A sanitized daemon exits with the sanitizer's status (1), not by the signal.
TEST(StartFailure, SanitizerSegvThroughUmad2simIsTheSimulators) {
  EXPECT_TRUE(classify_start_failure(1, kAsanSegvInSimulator).simulator);
}

TEST(StartFailure, SanitizerSegvOfOursIsOurs) {
  const std::string report =
      "==4242==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n"
      "    #0 0x55d0c0a05e21 in rdmaqos::sad::answer(...) sa-responder/src/answer.cpp:42\n"
      "SUMMARY: AddressSanitizer: SEGV sa-responder/src/answer.cpp:42\n";
  EXPECT_FALSE(classify_start_failure(1, report).simulator);
}

TEST(StartFailure, OtherSanitizerReportsAreOurs) {
  for (std::string report : {
           "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020\n",
           "sa-responder/src/answer.cpp:42:7: runtime error: signed integer overflow\n",
           "==1==ERROR: LeakSanitizer: detected memory leaks\n",
       }) {
    SCOPED_TRACE(report);
    EXPECT_FALSE(classify_start_failure(1, report).simulator);
    EXPECT_FALSE(classify_start_failure(1, report + kAsanSegvInSimulator).simulator);
    EXPECT_FALSE(classify_start_failure(kSegv, report + crash_report(kSimulatorStack)).simulator);
  }
}

TEST(StartFailure, SaysWhy) {
  EXPECT_NE(classify_start_failure(128 + SIGABRT, "").why.find("signal 6"), std::string::npos);
  EXPECT_NE(classify_start_failure(3, "").why.find("exit status 3"), std::string::npos);
}

}  // namespace
}  // namespace rdmaqos::testbed
