// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* A fake osm_opensm_t for the layout check's unit tests; opaque to C++ (OpenSM's headers are C
 * only). */
#ifndef RDMA_QOS_TESTS_FAKE_OPENSM_H
#define RDMA_QOS_TESTS_FAKE_OPENSM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fake_opensm;
void fake_pr(void* context, void* data);
void fake_mpr(void* context, void* data);
/* OpenSM as it is when plugins load: SA initialised, its handlers fake_pr / fake_mpr. */
struct fake_opensm* fake_opensm_new(const char* version);
void fake_opensm_free(struct fake_opensm* f);
const void* fake_opensm_osm(const struct fake_opensm* f); /* the osm_opensm_t */
void fake_opensm_break_sa_subnet(struct fake_opensm* f);
void fake_opensm_replace_pr_handler(struct fake_opensm* f);
void fake_opensm_drop_mpr_handler(struct fake_opensm* f);

/* osm_check.h's function, declared without OpenSM's types. */
int rdma_qos_osmp_check_opensm(const void* osm, const char* version, const void* pr,
                               const void* mpr, char* why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
