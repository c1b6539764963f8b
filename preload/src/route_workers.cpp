// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The route workers and the pending routes' table (see route_workers.h). Their locks are
// constant-initialised (the fork handlers' registration takes them at load, before this file's
// other objects are made); the rest is made at load and never destroyed: no initialisation
// guard to hold at fork time (fork_guard.cpp), nothing destroyed at exit under a worker still
// running.
#include "route_workers.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace rdmaqos::preload {

struct PendingRoute {
  enum class State { kQuerying, kInstalling, kCancelled, kDone };
  rdma_cm_id* id;
  State state = State::kQuerying;
};

namespace {

std::mutex pool_mutex;
struct WorkerPool {
  std::condition_variable work;
  std::deque<std::function<void()>> jobs;
  size_t threads = 0;
  size_t idle = 0;
};
WorkerPool* pool = new WorkerPool;

void work_loop(WorkerPool* p) {
  std::unique_lock lock(pool_mutex);
  for (;;) {
    ++p->idle;
    p->work.wait(lock, [p] { return !p->jobs.empty(); });
    --p->idle;
    std::function<void()> job = std::move(p->jobs.front());
    p->jobs.pop_front();
    lock.unlock();
    try {
      job();
    } catch (...) {  // a job catches its own; nothing may end the thread (std::terminate)
    }
    job = nullptr;
    lock.lock();
  }
}

// Started with every signal blocked: the program's signals go to its own threads, as they did
// before the module started any.
bool start_worker(WorkerPool* p) {
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  bool started = true;
  try {
    std::thread(work_loop, p).detach();
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return started;
}

std::mutex pending_mutex;
struct PendingTable {
  std::condition_variable done;
  std::unordered_map<rdma_cm_id*, std::shared_ptr<PendingRoute>> routes;
};
PendingTable* pending = new PendingTable;
// Ids are destroyed far more often than a route is pending: most destroys skip the lock.
std::atomic<size_t> pending_count{0};

}  // namespace

bool run_on_route_worker(std::function<void()> job) {
  std::lock_guard lock(pool_mutex);
  WorkerPool* p = pool;
  if (p == nullptr) return false;  // a call made before the module finished loading
  if (p->idle <= p->jobs.size() && p->threads < kRouteWorkers) {
    if (start_worker(p))
      ++p->threads;
    else if (p->threads == 0)
      return false;
  }
  p->jobs.push_back(std::move(job));
  p->work.notify_one();
  return true;
}

std::shared_ptr<PendingRoute> start_pending_route(rdma_cm_id* id) {
  std::lock_guard lock(pending_mutex);
  if (pending == nullptr) return nullptr;  // a call made before the module finished loading
  auto [it, inserted] = pending->routes.try_emplace(id, nullptr);
  if (!inserted) return nullptr;
  it->second = std::make_shared<PendingRoute>(PendingRoute{id});
  pending_count.fetch_add(1);
  return it->second;
}

bool route_pending(rdma_cm_id* id) {
  if (pending_count.load() == 0) return false;
  std::lock_guard lock(pending_mutex);
  return pending->routes.contains(id);
}

bool begin_route_install(PendingRoute& route) {
  std::lock_guard lock(pending_mutex);
  if (route.state == PendingRoute::State::kCancelled) return false;
  route.state = PendingRoute::State::kInstalling;
  return true;
}

void end_pending_route(const std::shared_ptr<PendingRoute>& route) {
  {
    std::lock_guard lock(pending_mutex);
    auto it = pending->routes.find(route->id);
    if (it != pending->routes.end() && it->second == route) {
      pending->routes.erase(it);
      pending_count.fetch_sub(1);
    }
    route->state = PendingRoute::State::kDone;
  }
  pending->done.notify_all();
}

void cancel_pending_route(rdma_cm_id* id) {
  if (pending_count.load() == 0) return;
  std::unique_lock lock(pending_mutex);
  auto it = pending->routes.find(id);
  if (it == pending->routes.end()) return;
  std::shared_ptr<PendingRoute> route = it->second;
  if (route->state == PendingRoute::State::kQuerying) {
    // The worker sees this before it touches the id, and drops its answer.
    route->state = PendingRoute::State::kCancelled;
    pending->routes.erase(it);
    pending_count.fetch_sub(1);
    return;
  }
  // Installing: one rdma_set_option or non-blocking rdma_resolve_route on the id, then done.
  pending->done.wait(lock, [&] { return route->state == PendingRoute::State::kDone; });
}

void lock_route_workers_for_fork() {
  pool_mutex.lock();
}

void unlock_route_workers_after_fork() {
  pool_mutex.unlock();
}

void reset_route_workers_in_child() {
  // The parent's workers are not in the child; its pool is left as it is (its workers waited
  // on its condition variable).
  pool = new WorkerPool;
  pool_mutex.unlock();
}

void lock_pending_routes_for_fork() {
  pending_mutex.lock();
}

void unlock_pending_routes_after_fork() {
  pending_mutex.unlock();
}

void reset_pending_routes_in_child() {
  pending = new PendingTable;
  pending_count.store(0);
  pending_mutex.unlock();
}

}  // namespace rdmaqos::preload
