// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Test program for the preload module: forks while another thread keeps taking a plain-verbs
 * QP of a stand-in InfiniBand device to RTR, so that the module's plain-verbs decider (its
 * cache's lock) and the per-port SA clients' map (its lock, held while a port's client opens)
 * are taken over and over; each child takes one more QP to RTR and exits. A child that
 * inherited one of those locks held would wait forever: an alarm ends it by a signal instead,
 * which the parent reports. Run with RDMA_QOS_CLASS set (so the module asks the SA) and
 * RDMA_QOS_CACHE_TTL=0 (so every RTR asks: the device is no umad CA, each open fails). The
 * provider's line per call goes to /dev/null; this program's own lines to stderr.
 *   fork_verbs_client FORKS */
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;

static int fake_query_port(struct ibv_context* ctx, uint8_t port, struct ibv_port_attr* attr,
                           size_t len) {
  (void)ctx;
  if (port != 1) return EINVAL;
  memset(attr, 0, len);
  attr->state = IBV_PORT_ACTIVE;
  attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
  attr->lid = 2;
  return 0;
}

static struct ibv_context* fake_context(void) {
  static struct verbs_context vctx;
  static struct ibv_device device;
  snprintf(device.name, sizeof(device.name), "rq_fork_ib0");
  vctx.sz = sizeof(vctx);
  vctx.query_port = fake_query_port;
  vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
  vctx.context.device = &device;
  return &vctx.context;
}

/* INIT (port 1) then RTR to LID 3: the module decides the plain-verbs QP's level at RTR. */
static int to_rtr(struct ibv_qp* qp) {
  struct ibv_qp_attr init, rtr;
  memset(&init, 0, sizeof init);
  memset(&rtr, 0, sizeof rtr);
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) != 0) return -1;
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = IBV_MTU_2048;
  rtr.dest_qp_num = 0x200;
  rtr.ah_attr.dlid = 3;
  rtr.ah_attr.port_num = 1;
  return ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN);
}

static void* busy(void* arg) {
  struct ibv_qp* qp = arg;
  while (!atomic_load(&stop)) to_rtr(qp);
  return NULL;
}

int main(int argc, char** argv) {
  static struct ibv_qp busy_qp, child_qp;
  if (argc != 2 || freopen("/dev/null", "w", stdout) == NULL) return 2;
  busy_qp.context = child_qp.context = fake_context();
  busy_qp.qp_num = 0x100;
  child_qp.qp_num = 0x101;
  if (to_rtr(&busy_qp) != 0) return 2; /* the module's state exists before the thread */
  pthread_t thread;
  if (pthread_create(&thread, NULL, busy, &busy_qp) != 0) return 2;
  int forks = atoi(argv[1]), normal = 0;
  for (int i = 0; i < forks; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(30); /* far beyond one RTR: only a lost lock gets there */
      _exit(to_rtr(&child_qp) == 0 ? 0 : 3);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child %d ended %s %d\n", i,
              WIFSIGNALED(status) ? "by signal" : "with status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      break; /* one is enough: do not wait out the alarm of every child */
    }
    ++normal;
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  fprintf(stderr, "%d of %d children exited normally\n", normal, forks);
  return normal == forks ? 0 : 1;
}
