// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Test program for the preload module: loads librdmacm itself, as a plugin would, and calls it
 * through the global scope, where the module's interposers come first (as the plugin's own
 * calls would bind). Prints one line per call.
 *   rdmacm_plugin_client LIBRARY local|global */
#include <dlfcn.h>
#include <errno.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int scope = strcmp(argv[2], "local") == 0 ? RTLD_LOCAL : RTLD_GLOBAL;
  if (dlopen(argv[1], RTLD_NOW | scope) == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  int (*get_event)(struct rdma_event_channel*, struct rdma_cm_event**) = (int (*)(
      struct rdma_event_channel*, struct rdma_cm_event**))dlsym(RTLD_DEFAULT, "rdma_get_cm_event");
  int (*destroy)(struct rdma_cm_id*) =
      (int (*)(struct rdma_cm_id*))dlsym(RTLD_DEFAULT, "rdma_destroy_id");
  int (*get_class)(struct rdma_cm_id*, uint16_t*) =
      (int (*)(struct rdma_cm_id*, uint16_t*))dlsym(RTLD_DEFAULT, "rdma_qos_get_class");
  if (get_event == NULL || destroy == NULL || get_class == NULL) return 2;

  struct rdma_cm_event* event = NULL;
  errno = 0;
  int rc = get_event(NULL, &event);
  /* By name, not strerror: the message depends on the locale. */
  int error = errno;
  printf("rdma_get_cm_event %d %s\n", rc,
         error == ENODATA  ? "ENODATA"
         : error == ENOSYS ? "ENOSYS"
                           : "another errno");

  struct rdma_cm_id id;
  memset(&id, 0, sizeof id);
  rc = destroy(&id);
  uint16_t qos_class = 0;
  int found = get_class(&id, &qos_class);
  printf("rdma_destroy_id %d; class after it %s %u\n", rc, found == 0 ? "kept" : "lost",
         (unsigned)qos_class);
  return 0;
}
