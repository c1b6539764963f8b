// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The module's fork handlers. fork() in a multi-threaded program copies only the calling
// thread: a lock of the module another thread held at that moment would stay held in the
// child, and the child's next rdma_cm or verbs call would wait forever. The forking thread
// takes every lock an interposed call may take, in the order the module nests them (UD peers
// before the registries), and releases them on both sides once the copy is made.
#include <pthread.h>

#include <array>
#include <cstddef>

#include "log.h"
#include "ports.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rsockets.h"
#include "test_record.h"
#include "ud_peers.h"

namespace rdmaqos::preload {
namespace {

struct ForkLock {
  void (*lock)();
  void (*unlock)();
};

// Outermost first.
const std::array<ForkLock, 7> kForkLocks{{
    {&lock_ud_peers_for_fork, &unlock_ud_peers_after_fork},
    {[] { rdmacm::IdRegistry::instance().lock_for_fork(); },
     [] { rdmacm::IdRegistry::instance().unlock_after_fork(); }},
    {[] { providers::QpRegistry::instance().lock_for_fork(); },
     [] { providers::QpRegistry::instance().unlock_after_fork(); }},
    {&lock_ports_for_fork, &unlock_ports_after_fork},
    {&lock_sockets_for_fork, &unlock_sockets_after_fork},
    {&lock_records_for_fork, &unlock_records_after_fork},
    {&lock_log_for_fork, &unlock_log_after_fork},
}};

// Which locks the forking thread got: a lock that failed (it throws) is not released. Written
// only while the first lock is held, so a second forking thread waits before touching it.
std::array<bool, kForkLocks.size()> held{};

// C callbacks: nothing may escape them.
void before_fork() noexcept {
  for (size_t i = 0; i < kForkLocks.size(); ++i) {
    try {
      kForkLocks[i].lock();
      held[i] = true;
    } catch (...) {
      held[i] = false;
    }
  }
}

void after_fork() noexcept {
  for (size_t i = kForkLocks.size(); i-- > 0;) {
    if (!held[i]) continue;
    held[i] = false;
    try {
      kForkLocks[i].unlock();
    } catch (...) {
    }
  }
}

// At load: handlers registered later than a fork already under way would miss it. Without
// them (no memory) the module behaves as before.
__attribute__((constructor)) void register_fork_handlers() {
  pthread_atfork(&before_fork, &after_fork, &after_fork);
}

}  // namespace
}  // namespace rdmaqos::preload
