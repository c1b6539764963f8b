// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Fault injection for the test bed: preloaded before umad2sim, it makes umad_send and umad_recv
 * fail on a schedule, as the kernel's umad device does when it refuses a MAD (EINVAL, a TID
 * still queued) or a receive fails. Faults apply only while the file named by UMAD_FAULT_FILE
 * exists, so a daemon starts and discovers its fabric untouched and the test decides when they
 * begin and end. UMAD_FAULT_EVERY=N fails one call in N of each kind (default 10), with EIO.
 * Built only for tests. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_ulong send_calls, recv_calls;

static int faulting(atomic_ulong* calls) {
  const char* file = getenv("UMAD_FAULT_FILE");
  if (file == NULL || access(file, F_OK) != 0) return 0;
  const char* every_text = getenv("UMAD_FAULT_EVERY");
  unsigned long every = every_text != NULL ? strtoul(every_text, NULL, 0) : 10;
  if (every == 0) every = 10;
  return atomic_fetch_add(calls, 1) % every == every - 1;
}

int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
  static int (*real)(int, int, void*, int, int, int);
  if (real == NULL) real = (int (*)(int, int, void*, int, int, int))dlsym(RTLD_NEXT, "umad_send");
  if (faulting(&send_calls)) {
    errno = EIO; /* as libibumad: -EIO, the kernel's reason in errno */
    return -EIO;
  }
  return real == NULL ? -ENOSYS : real(fd, agentid, umad, length, timeout_ms, retries);
}

int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
  static int (*real)(int, void*, int*, int);
  if (real == NULL) real = (int (*)(int, void*, int*, int))dlsym(RTLD_NEXT, "umad_recv");
  /* The MAD is taken off the device and lost, as when the read itself fails. */
  int rc = real == NULL ? -ENOSYS : real(fd, umad, length, timeout_ms);
  if (rc >= 0 && faulting(&recv_calls)) {
    errno = EIO;
    return -EIO;
  }
  return rc;
}
