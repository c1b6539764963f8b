// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA daemon's counters, their JSON form, and rdma-qos-sad's metric table.
#include "rdma-qos/sa-responder/counters.h"

#include <algorithm>

#include <fmt/format.h>

#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sad {
namespace {

constexpr const char* kNoLevel = "(no level)";

uint16_t slot_attribute(size_t slot) {
  switch (slot) {
    case 0: return sa::attr::kClassPortInfo;
    case 1: return sa::attr::kPathRecord;
    case 2: return sa::attr::kMultiPathRecord;
  }
  return 0;
}

}  // namespace

const char* rejection_name(Rejection r) {
  switch (r) {
    case Rejection::kNone: return "none";
    case Rejection::kNoRoute: return "no_route";
    case Rejection::kLevelSlDropped: return "level_sl_dropped";
    case Rejection::kSelector: return "selector";
    case Rejection::kPkeyNotShared: return "pkey_not_shared";
    case Rejection::kPkeyNotInLevel: return "pkey_not_in_level";
    case Rejection::kLevelPkeyNotShared: return "level_pkey_not_shared";
    case Rejection::kNoCommonPkey: return "no_common_pkey";
    case Rejection::kSlNotLevel: return "sl_not_level";
    case Rejection::kSlDropped: return "sl_dropped";
    case Rejection::kSlNotRouting: return "sl_not_routing";
  }
  return "?";
}

std::string method_name(uint8_t method) {
  switch (method) {
    case sa::method::kGet: return "Get";
    case 0x02: return "Set";
    case sa::method::kGetTable: return "GetTable";
    case sa::method::kGetMulti: return "GetMulti";
    case 0x15: return "Delete";
  }
  return fmt::format("{:#04x}", method);
}

std::string attribute_name(uint16_t attr_id) {
  switch (attr_id) {
    case sa::attr::kClassPortInfo: return "ClassPortInfo";
    case sa::attr::kPathRecord: return "PathRecord";
    case sa::attr::kMultiPathRecord: return "MultiPathRecord";
  }
  return "other";
}

SaCounters::SaCounters() {
  levels_by_name_[kNoLevel] = std::make_unique<LevelSlot>();
}

size_t SaCounters::method_slot(uint8_t method, uint16_t attr_id) {
  size_t a = 3;
  if (attr_id == sa::attr::kClassPortInfo) a = 0;
  if (attr_id == sa::attr::kPathRecord) a = 1;
  if (attr_id == sa::attr::kMultiPathRecord) a = 2;
  return size_t{method} * kAttributeSlots + a;
}

size_t SaCounters::status_slot(uint16_t mad_status) {
  if ((mad_status & 0xFF) == 0) return mad_status >> 8;
  return 256 + (mad_status & 0xFF);
}

std::shared_ptr<const SaCounters::LevelBinding> SaCounters::bind_policy(
    const policy::CompiledPolicy* policy) {
  auto binding = std::make_shared<LevelBinding>();
  std::lock_guard lock(names_mutex_);
  binding->no_level = levels_by_name_.at(kNoLevel).get();
  if (policy == nullptr) return binding;
  auto bind = [&](const policy::Level& level) {
    auto& slot = levels_by_name_[level.name];
    if (!slot) slot = std::make_unique<LevelSlot>();
    binding->slots[&level] = slot.get();
  };
  bind(policy->default_level());
  for (size_t i = 0; i < policy->rules().size(); ++i) bind(policy->rule_level(i));
  return binding;
}

void SaCounters::pair(const LevelBinding& binding, const policy::Level* level,
                      Rejection rejection) {
  LevelSlot* slot = binding.no_level;
  if (level != nullptr) {
    auto it = binding.slots.find(level);
    if (it != binding.slots.end()) slot = it->second;
  }
  if (rejection == Rejection::kNone) {
    bump(slot->records);
  } else {
    bump(slot->rejected);
    bump(rejections_[static_cast<size_t>(rejection)]);
  }
}

void SaCounters::latency(std::chrono::nanoseconds took) {
  const double seconds = std::chrono::duration<double>(took).count();
  size_t bucket = 0;
  while (bucket < kLatencyBounds.size() && seconds > kLatencyBounds[bucket]) ++bucket;
  bump(latency_buckets_[bucket]);
  bump(latency_count_);
  latency_sum_ns_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(took.count(), 0)),
                            std::memory_order_relaxed);
}

CounterSnapshot SaCounters::snapshot() const {
  auto get = [](const Counter& c) { return c.load(std::memory_order_relaxed); };
  CounterSnapshot s;
  s.requests = get(requests_);
  s.responses = get(responses_);
  s.dropped_sm_key = get(dropped_sm_key_);
  s.dropped_unknown_requester = get(dropped_unknown_requester_);
  s.receive_errors = get(receive_errors_);
  s.send_errors = get(send_errors_);
  s.bounded_records = get(bounded_records_);
  s.bounded_time = get(bounded_time_);
  s.deferred = get(deferred_);
  s.busy = get(busy_);
  s.dropped_duplicate = get(dropped_duplicate_);
  for (size_t i = 0; i < methods_.size(); ++i) {
    if (uint64_t n = get(methods_[i])) {
      auto method = static_cast<uint8_t>(i / kAttributeSlots);
      size_t a = i % kAttributeSlots;
      std::string attr = a == 3 ? "other" : attribute_name(slot_attribute(a));
      s.methods[method_name(method) + " " + attr] = n;
    }
  }
  for (size_t i = 0; i < statuses_.size(); ++i) {
    if (uint64_t n = get(statuses_[i])) {
      auto status = static_cast<uint16_t>(i < 256 ? i << 8 : i - 256);
      s.statuses[sa::mad_status_name(status)] += n;
    }
  }
  for (size_t i = 0; i < latency_buckets_.size(); ++i)
    s.latency.buckets[i] = get(latency_buckets_[i]);
  s.latency.count = get(latency_count_);
  s.latency.sum_seconds = static_cast<double>(get(latency_sum_ns_)) / 1e9;
  std::lock_guard lock(names_mutex_);
  for (const auto& [name, slot] : levels_by_name_) {
    LevelCount c{get(slot->records), get(slot->rejected)};
    if (c.records != 0 || c.rejected != 0) s.levels[name] = c;
  }
  for (size_t i = 1; i < rejections_.size(); ++i) {
    if (i > static_cast<size_t>(Rejection::kSlNotRouting)) break;
    if (uint64_t n = get(rejections_[i]))
      s.rejections[rejection_name(static_cast<Rejection>(i))] = n;
  }
  return s;
}

using common::metrics::Type;

const common::metrics::Table& sad_metric_table() {
  static const common::metrics::Table table(
      "rdma_qos_sad_", {"ca", "port"},
      {
          {"info", Type::kGauge, "The daemon answering at this port (value 1).", {"lid"}},
          {"uptime_seconds", Type::kGauge, "Seconds since the daemon began answering."},
          {"requests_total",
           Type::kCounter,
           "SA requests by method and attribute.",
           {"method", "attribute"}},
          {"responses_total", Type::kCounter, "SA responses by MAD status.", {"status"}},
          {"dropped_total",
           Type::kCounter,
           "Requests not answered: an untrusted SM_Key, a MAD that does not decode, a path "
           "query from a LID the fabric model does not know, a retry of a request still being "
           "answered.",
           {"reason"}},
          {"mad_errors_total",
           Type::kCounter,
           "MADs the port failed to receive, or answers it refused to send.",
           {"direction"}},
          {"bounded_total",
           Type::kCounter,
           "Answers cut by a bound and answered ERR_NO_RESOURCES: records (a table longer "
           "than --max-records), time (still computed after --answer-time-limit).",
           {"bound"}},
          {"deferred_total", Type::kCounter,
           "Large answers computed on a worker thread, off the thread that answers the rest."},
          {"busy_total", Type::kCounter,
           "Large requests answered BUSY: every worker taken and the queue full."},
          {"pairs_total",
           Type::kCounter,
           "Source-destination pairs by QoS level: answered with a record, or rejected.",
           {"level", "result"}},
          {"rejections_total", Type::kCounter, "Pairs given no record, by reason.", {"reason"}},
          {"answer_duration_seconds", Type::kHistogram,
           "Time from a decoded request to its computed answer."},
          {"policy_rules", Type::kGauge, "Match rules of the policy in force."},
          {"reloads_total", Type::kCounter, "Policy reloads, by result.", {"result"}},
          {"fabric_endpoints", Type::kGauge, "Endpoints of the fabric model in force."},
          {"discoveries_total", Type::kCounter, "Fabric discoveries, by result.", {"result"}},
          {"sm_traps_subscribed", Type::kGauge,
           "SM traps this SA is subscribed to (InformInfo accepted by the SM)."},
          {"sm_trap_reports_total",
           Type::kCounter,
           "Reports (notices) from the SM, by trap.",
           {"trap"}},
      });
  return table;
}

void add_answer_samples(const CounterSnapshot& s, common::metrics::Snapshot& m) {
  auto n = [](uint64_t v) { return static_cast<double>(v); };
  for (const auto& [key, count] : s.methods) {
    const auto space = key.find(' ');
    m.add("requests_total",
          {key.substr(0, space), space == std::string::npos ? "" : key.substr(space + 1)},
          n(count));
  }
  for (const auto& [status, count] : s.statuses) m.add("responses_total", {status}, n(count));
  m.add("dropped_total", {"sm_key"}, n(s.dropped_sm_key));
  m.add("dropped_total", {"unknown_requester"}, n(s.dropped_unknown_requester));
  m.add("dropped_total", {"duplicate"}, n(s.dropped_duplicate));
  m.add("mad_errors_total", {"receive"}, n(s.receive_errors));
  m.add("mad_errors_total", {"send"}, n(s.send_errors));
  m.add("bounded_total", {"records"}, n(s.bounded_records));
  m.add("bounded_total", {"time"}, n(s.bounded_time));
  m.add("deferred_total", {}, n(s.deferred));
  m.add("busy_total", {}, n(s.busy));
  for (const auto& [level, c] : s.levels) {
    m.add("pairs_total", {level, "record"}, n(c.records));
    m.add("pairs_total", {level, "rejected"}, n(c.rejected));
  }
  for (const auto& [reason, count] : s.rejections) m.add("rejections_total", {reason}, n(count));
  m.histogram("answer_duration_seconds", {}, {kLatencyBounds.begin(), kLatencyBounds.end()},
              {s.latency.buckets.begin(), s.latency.buckets.end()}, s.latency.sum_seconds);
}

common::metrics::Snapshot sad_metrics(const CounterSnapshot& s, const SadFigures& f) {
  common::metrics::Snapshot m(sad_metric_table(), {f.ca, std::to_string(f.port)});
  auto n = [](uint64_t v) { return static_cast<double>(v); };
  m.add("info", {std::to_string(f.lid)}, 1);
  m.add("uptime_seconds", {}, f.uptime_seconds);
  add_answer_samples(s, m);
  m.add("dropped_total", {"undecodable"}, n(f.undecodable));
  m.add("policy_rules", {}, n(f.policy_rules));
  m.add("reloads_total", {"ok"}, n(f.reloads));
  m.add("reloads_total", {"failed"}, n(f.reload_failures));
  m.add("fabric_endpoints", {}, n(f.fabric_endpoints));
  m.add("discoveries_total", {"ok"}, n(f.discoveries));
  m.add("discoveries_total", {"failed"}, n(f.discovery_failures));
  m.add("sm_traps_subscribed", {}, n(f.traps_subscribed));
  for (const auto& [trap, count] : f.trap_reports)
    m.add("sm_trap_reports_total", {std::to_string(trap)}, n(count));
  return m;
}

nlohmann::json to_json(const CounterSnapshot& s) {
  nlohmann::json levels = nlohmann::json::object();
  for (const auto& [name, c] : s.levels)
    levels[name] = {{"records", c.records}, {"rejected", c.rejected}};
  return {{"requests", s.requests},
          {"responses", s.responses},
          {"dropped",
           {{"sm_key", s.dropped_sm_key},
            {"unknown_requester", s.dropped_unknown_requester},
            {"duplicate", s.dropped_duplicate}}},
          {"mad_errors", {{"receive", s.receive_errors}, {"send", s.send_errors}}},
          {"bounded", {{"records", s.bounded_records}, {"time", s.bounded_time}}},
          {"workers", {{"deferred", s.deferred}, {"busy", s.busy}}},
          {"methods", s.methods},
          {"statuses", s.statuses},
          {"levels", levels},
          {"rejections", s.rejections},
          {"latency",
           {{"bounds_seconds", kLatencyBounds},
            {"buckets", s.latency.buckets},
            {"count", s.latency.count},
            {"sum_seconds", s.latency.sum_seconds}}}};
}

}  // namespace rdmaqos::sad
