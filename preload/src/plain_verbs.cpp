// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Plain-verbs QPs' levels and their per-destination cache (see plain_verbs.h).
#include "plain_verbs.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "rdma-qos/rdmacm-qos/ib_route.h"

namespace rdmaqos::preload {

using providers::LinkKind;
using providers::QosDecision;

namespace {

// -1: no class / no Service-ID, so "none" and "0" stay different keys.
using Key = std::tuple<std::string, uint8_t, uint16_t, int32_t, int32_t, bool, uint64_t>;

Key key_of(const PlainVerbsInputs& in) {
  return {in.device,
          in.port,
          in.dlid,
          in.pkey ? *in.pkey : -1,
          in.qos_class ? *in.qos_class : -1,
          in.service_id.has_value(),
          in.service_id.value_or(0)};
}

}  // namespace

// Answers (and failures) by key. A key being asked is an entry not yet done: other threads
// wait for it (bounded by their own deadline) instead of asking again, so a burst of QPs to
// one peer costs one query.
struct PlainVerbsDecider::Cache {
  struct Entry {
    bool done = false;
    std::optional<QosDecision> decision;
    Clock::time_point expires{};
  };
  std::mutex mutex;
  std::condition_variable answered;
  std::map<Key, std::shared_ptr<Entry>> entries;
};

namespace {

// Every live decider, so that the fork handlers reach their caches (the module has one; tests
// make more). Constant-initialised, the set made by the first decider and never destroyed: no
// initialisation guard another thread could hold at fork time, nothing destroyed at exit.
std::mutex deciders_mutex;
constinit std::set<PlainVerbsDecider*>* deciders = nullptr;

}  // namespace

sa::PathQuery plain_verbs_query(const PlainVerbsInputs& in, bool sa_advertises_qos) {
  namespace m = sa::pr_mask;
  sa::PathQuery q;
  q.get_table = false;
  q.record.slid = in.slid;
  q.record.dlid = in.dlid;
  q.record.reversible = true;
  q.record.numb_path = 1;
  q.comp_mask = m::kSlid | m::kDlid | m::kReversible | m::kNumbPath;
  if (in.pkey) {
    q.record.pkey = *in.pkey;
    q.comp_mask |= m::kPKey;
  }
  if (in.service_id) {
    q.record.service_id = *in.service_id;
    q.comp_mask |= m::kServiceId;
  }
  // An SA without QoS support may reject or ignore the field: send it only when advertised.
  if (in.qos_class && sa_advertises_qos) {
    q.record.qos_class = static_cast<uint16_t>(*in.qos_class & 0xFFF);
    q.comp_mask |= m::kQosClass;
  }
  return q;
}

PlainVerbsDecider::PlainVerbsDecider(PlainVerbsOptions options, std::unique_ptr<PlainVerbsSa> sa)
    : options_(options), sa_(std::move(sa)), cache_(std::make_unique<Cache>()) {
  std::lock_guard lock(deciders_mutex);
  if (deciders == nullptr) deciders = new std::set<PlainVerbsDecider*>;
  deciders->insert(this);
}

PlainVerbsDecider::~PlainVerbsDecider() {
  std::lock_guard lock(deciders_mutex);
  deciders->erase(this);
}

void lock_plain_verbs_for_fork() {
  deciders_mutex.lock();
  if (deciders != nullptr)
    for (PlainVerbsDecider* d : *deciders) d->cache_->mutex.lock();
}

void unlock_plain_verbs_after_fork() {
  if (deciders != nullptr)
    for (PlainVerbsDecider* d : *deciders) d->cache_->mutex.unlock();
  deciders_mutex.unlock();
}

void reset_plain_verbs_in_child() {
  if (deciders != nullptr)
    for (PlainVerbsDecider* d : *deciders) {
      PlainVerbsDecider::Cache* c = d->cache_.get();
      // A key another thread was asking would stay "being asked" for ever: every QP to it
      // would wait out verbs_sa_wait_ms and keep the stock path. Forget it; the child asks.
      std::erase_if(c->entries, [](const auto& kv) { return !kv.second->done; });
      // The parent's waiters are not in the child, but the condition variable still counts
      // them, and a notify (or its destructor) could wait for them to leave: a fresh one over
      // it, the old one deliberately not destroyed. No thread of the child waits on it: the
      // only thread runs this handler.
      new (&c->answered) std::condition_variable;
      c->mutex.unlock();
    }
  deciders_mutex.unlock();
}

std::optional<QosDecision> PlainVerbsDecider::decide(const PlainVerbsInputs& in) {
  // Without a class or a Service-ID the module knows nothing the policy could tell apart from
  // any other program: the QP stays as the program set it.
  if (!in.qos_class && !in.service_id) return std::nullopt;
  if (in.link == LinkKind::kRoceV1 || in.link == LinkKind::kRoceV2) {
    if (options_.settings == nullptr) return std::nullopt;
    auto d = rdmacm::decide_roce(in.service_id.value_or(0), in.qos_class, in.pkey.value_or(0xFFFF),
                                 *options_.settings);
    if (!d) return std::nullopt;
    return rdmacm::to_qos_decision(d);
  }
  if (in.link != LinkKind::kInfiniBand || !options_.query_sa) return std::nullopt;
  if (in.dlid == 0 || in.slid == 0) {
    sa_->log_once("verbs_no_lid",
                  "a plain-verbs QP on InfiniBand has no destination LID, or its port's LID is "
                  "unknown; it keeps the stock path (no SA query)");
    return std::nullopt;
  }

  const auto now = Clock::now();
  const Clock::time_point deadline = now + options_.wait;
  const Key key = key_of(in);
  std::shared_ptr<Cache::Entry> entry;
  {
    std::unique_lock lock(cache_->mutex);
    auto it = cache_->entries.find(key);
    if (it != cache_->entries.end() && it->second->done && it->second->expires <= now) {
      cache_->entries.erase(it);
      it = cache_->entries.end();
    }
    if (it != cache_->entries.end()) {
      std::shared_ptr<Cache::Entry> e = it->second;
      if (cache_->answered.wait_until(lock, deadline, [&] { return e->done; })) return e->decision;
      lock.unlock();
      sa_->log_once("verbs_sa_wait",
                    "the SA's answer for a plain-verbs QP took longer than "
                    "verbs_sa_wait_ms; such QPs keep the stock path");
      return std::nullopt;
    }
    if (cache_->entries.size() >= options_.capacity) {
      std::erase_if(cache_->entries,
                    [&](const auto& kv) { return kv.second->done && kv.second->expires <= now; });
      if (cache_->entries.size() >= options_.capacity)
        std::erase_if(cache_->entries, [](const auto& kv) { return kv.second->done; });
    }
    entry = std::make_shared<Cache::Entry>();
    cache_->entries.emplace(key, entry);
  }

  std::optional<QosDecision> decision;
  try {
    decision = ask_sa(in, deadline);
  } catch (...) {
    sa_->log_once("verbs_sa_exception",
                  "internal error asking the SA for a plain-verbs QP; "
                  "such QPs keep the stock path");
  }
  {
    std::lock_guard lock(cache_->mutex);
    entry->decision = decision;
    entry->expires = Clock::now() + options_.ttl;
    entry->done = true;
    if (options_.ttl.count() <= 0) {
      auto it = cache_->entries.find(key);
      if (it != cache_->entries.end() && it->second == entry) cache_->entries.erase(it);
    }
  }
  cache_->answered.notify_all();
  return decision;
}

std::optional<QosDecision> PlainVerbsDecider::ask_sa(const PlainVerbsInputs& in,
                                                     sa::Deadline deadline) {
  auto fail = [&](const std::string& why) -> std::optional<QosDecision> {
    sa_->log_once("verbs_sa:" + why,
                  fmt::format("cannot get a path for plain-verbs QPs from the SA ({}); they "
                              "keep the stock path",
                              why));
    return std::nullopt;
  };
  auto qos = sa_->qos_supported(in, deadline);
  if (!qos) return fail(qos.error().message);
  auto paths = sa_->path_query(in, plain_verbs_query(in, *qos), deadline);
  if (!paths) return fail(paths.error().message);
  if (paths->empty()) return fail("no path in the answer");
  const sa::PathRecord& p = paths->front();
  rdmacm::CmDecision d = rdmacm::decision_from_path(p, in.service_id.value_or(0), in.qos_class);
  d.packet_life = p.packet_life;
  return rdmacm::to_qos_decision(d);
}

}  // namespace rdmaqos::preload
