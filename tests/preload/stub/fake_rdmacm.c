// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Stands in for librdmacm (soname librdmacm.so.1, its symbol versions) for a program that
 * dlopen()s it itself: its answers say the module reached it. rdma_get_cm_event fails with
 * ENODATA, which no missing library would give. rdma_destroy_id acts out another thread that
 * creates an id at the address just freed and gives it a QoS class (7) before the destroy
 * returns: an entry the module must not then erase. */
#include <dlfcn.h>
#include <errno.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

int rdma_get_cm_event(struct rdma_event_channel* channel, struct rdma_cm_event** event) {
  (void)channel;
  (void)event;
  errno = ENODATA;
  return -1;
}

int rdma_destroy_id(struct rdma_cm_id* id) {
  int (*set_class)(struct rdma_cm_id*, uint16_t) =
      (int (*)(struct rdma_cm_id*, uint16_t))dlsym(RTLD_DEFAULT, "rdma_qos_set_class");
  if (set_class != NULL) set_class(id, 7);
  return 0;
}
