// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Test program for the preload module: forks while another thread keeps taking the module's
 * locks (rdma_destroy_id and the rdma_qos.h API on an id, over and over); each child goes
 * through the same calls and exits. A child that inherited a lock held by that thread would
 * wait forever: an alarm ends it by a signal instead, which the parent reports.
 *   fork_client LIBRDMACM FORKS */
#include <dlfcn.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int (*destroy)(struct rdma_cm_id*);
static int (*set_class)(struct rdma_cm_id*, uint16_t);
static atomic_int stop;

/* The module's path an id goes through: its entries set, read, forgotten. */
static void use_module(struct rdma_cm_id* id) {
  uint16_t qos_class = 0;
  set_class(id, 3);
  int (*get_class)(struct rdma_cm_id*, uint16_t*) =
      (int (*)(struct rdma_cm_id*, uint16_t*))dlsym(RTLD_DEFAULT, "rdma_qos_get_class");
  if (get_class != NULL) get_class(id, &qos_class);
  destroy(id);
}

static void* busy(void* arg) {
  struct rdma_cm_id id;
  memset(&id, 0, sizeof id);
  (void)arg;
  while (!atomic_load(&stop)) use_module(&id);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) return 2;
  destroy = (int (*)(struct rdma_cm_id*))dlsym(RTLD_DEFAULT, "rdma_destroy_id");
  set_class = (int (*)(struct rdma_cm_id*, uint16_t))dlsym(RTLD_DEFAULT, "rdma_qos_set_class");
  if (destroy == NULL || set_class == NULL) return 2;
  pthread_t thread;
  if (pthread_create(&thread, NULL, busy, NULL) != 0) return 2;
  int forks = atoi(argv[2]), normal = 0;
  for (int i = 0; i < forks; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      struct rdma_cm_id id;
      memset(&id, 0, sizeof id);
      alarm(30); /* far beyond the few calls a child makes: only a lost lock gets there */
      use_module(&id);
      _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      printf("child %d ended %s %d\n", i, WIFSIGNALED(status) ? "by signal" : "with status",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      break; /* one is enough: do not wait out the alarm of every child */
    }
    ++normal;
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  printf("%d of %d children exited normally\n", normal, forks);
  return normal == forks ? 0 : 1;
}
