// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The module's fork handlers. fork() in a multi-threaded program copies only the calling
// thread: a lock of the module another thread held at that moment would stay held in the
// child, and the child's next rdma_cm or verbs call would wait forever. The forking thread
// takes every lock an interposed call may take, in the order the module nests them (UD peers
// before the registries, the SA clients' map before the log), and releases them on both sides
// once the copy is made; where the child must also drop what the parent's other threads had
// under way (an SA query, a port's client), its own handler does that.
//
// An initialisation guard is such a lock too: a function-local static whose initialiser another
// thread runs at fork time stays "being initialised" in the child, and its first use there
// waits forever. So the module makes its statics before the program has threads: the port
// caches, the SA clients' map and the deciders' list are namespace-scope objects (no guard), the
// configuration and the policy are read at load (config.cpp), and the handlers' registration
// below makes the log's state and every locked table's singleton. The tables of real functions
// stay lazy (a librdmacm a plugin loads later must still be found) but are filled under a lock
// these handlers take (real_calls.cpp). Left lazy: the verbs interposers' hooks and the UD peers'
// map: each fills in microseconds on a program's first call of that kind.
#include <pthread.h>

#include <array>
#include <cstddef>

#include "config.h"
#include "ib_route_sa.h"
#include "log.h"
#include "plain_verbs.h"
#include "ports.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/rdmacm-qos/match_cache.h"
#include "real_calls.h"
#include "route_workers.h"
#include "rsockets.h"
#include "test_record.h"
#include "ud_peers.h"

namespace rdmaqos::preload {
namespace {

// The policy matches' cache (config.cpp makes it at load, with the policy); none without one.
void lock_match_cache_for_fork() {
  if (rdmacm::MatchCache* c = cm_config().settings.match_cache.get()) c->lock_for_fork();
}

void unlock_match_cache_after_fork() {
  if (rdmacm::MatchCache* c = cm_config().settings.match_cache.get()) c->unlock_after_fork();
}

struct ForkLock {
  void (*lock)();
  void (*unlock)();
  void (*child)() = nullptr;  // releases the lock in the child, if not `unlock`
};

// Outermost first.
const std::array<ForkLock, 14> kForkLocks{{
    // Taken with no other lock held (a route worker's job takes the others without them).
    {&lock_route_workers_for_fork, &unlock_route_workers_after_fork, &reset_route_workers_in_child},
    {&lock_pending_routes_for_fork, &unlock_pending_routes_after_fork,
     &reset_pending_routes_in_child},
    {&lock_ud_peers_for_fork, &unlock_ud_peers_after_fork},
    {[] { rdmacm::IdRegistry::instance().lock_for_fork(); },
     [] { rdmacm::IdRegistry::instance().unlock_after_fork(); }},
    {[] { providers::QpRegistry::instance().lock_for_fork(); },
     [] { providers::QpRegistry::instance().unlock_after_fork(); },
     [] { providers::QpRegistry::instance().reset_in_child_after_fork(); }},
    {&lock_plain_verbs_for_fork, &unlock_plain_verbs_after_fork, &reset_plain_verbs_in_child},
    {&lock_port_sa_clients_for_fork, &unlock_port_sa_clients_after_fork,
     &reset_port_sa_clients_in_child},
    {&lock_ports_for_fork, &unlock_ports_after_fork},
    {&lock_sockets_for_fork, &unlock_sockets_after_fork},
    {&lock_records_for_fork, &unlock_records_after_fork},
    {&lock_log_for_fork, &unlock_log_after_fork},
    // Taken inside the registries' and the plain-verbs decider's locks (a match under them).
    {&lock_match_cache_for_fork, &unlock_match_cache_after_fork},
    // Taken inside all of those (a match interns its level's name).
    {&rdmacm::lock_level_names_for_fork, &rdmacm::unlock_level_names_after_fork},
    // Innermost: a table of real functions is filled under it, with no other lock taken.
    {&lock_real_calls_for_fork, &unlock_real_calls_after_fork},
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

void release(bool in_child) noexcept {
  for (size_t i = kForkLocks.size(); i-- > 0;) {
    if (!held[i]) continue;
    held[i] = false;
    try {
      if (in_child && kForkLocks[i].child != nullptr)
        kForkLocks[i].child();
      else
        kForkLocks[i].unlock();
    } catch (...) {
    }
  }
}

void after_fork_in_parent() noexcept {
  release(false);
}

void after_fork_in_child() noexcept {
  release(true);
}

// At load: handlers registered later than a fork already under way would miss it. Without
// them (no memory) the module behaves as before. Taking each lock once here makes the
// singletons that hold them, while the program has one thread.
__attribute__((constructor)) void register_fork_handlers() {
  init_log_at_load();
  for (const ForkLock& l : kForkLocks) {
    try {
      l.lock();
      l.unlock();
    } catch (...) {
    }
  }
  pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
}

}  // namespace
}  // namespace rdmaqos::preload
