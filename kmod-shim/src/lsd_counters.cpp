// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's counters, their metric table, and their JSON snapshot (see lsd_counters.h).
#include "rdma-qos/kmod-shim/lsd_counters.h"

#include <algorithm>
#include <string>
#include <vector>

#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::kmod {

static_assert(static_cast<size_t>(ErrorCode::kBusy) + 1 == kErrorCodes,
              "a new ErrorCode needs its path_failed_ counter");

using common::metrics::Type;

const common::metrics::Table& lsd_metric_table() {
  static const common::metrics::Table table(
      "rdma_qos_lsd_", {},
      {
          {"uptime_seconds", Type::kGauge, "Seconds since rdma-qos-lsd started."},
          {"requests_total",
           Type::kCounter,
           "Path queries from the kernel, by path_use (all, unidirectional, gmp) or malformed.",
           {"kind"}},
          {"answers_total",
           Type::kCounter,
           "Answers to the kernel: a path, or F_ERR (the kernel asks the SA itself) by reason.",
           {"status", "reason"}},
          {"paths_total",
           Type::kCounter,
           "Answers with a path, by the SL (QoS level) of the path the SA chose.",
           {"sl"}},
          {"answer_duration_seconds", Type::kHistogram,
           "Time from a decoded kernel request to its answer (a path or F_ERR)."},
          {"reloads_total",
           Type::kCounter,
           "Reloads of rdma-qos.conf (SIGHUP), by result.",
           {"result"}},
          {"path_questions_total",
           Type::kCounter,
           "Questions to the node path service, by op (class_port_info, path_record, "
           "multipath_record) or malformed.",
           {"op"}},
          {"path_answers_total",
           Type::kCounter,
           "Answers of the node path service: answered, or failed with the error's code.",
           {"status", "code"}},
          {"path_cache_hits_total", Type::kCounter,
           "Path questions answered from the node's path cache, without an SA request."},
          {"path_joined_total", Type::kCounter,
           "Questions that joined an identical one already in flight (one SA query for all)."},
          {"path_sa_requests_total",
           Type::kCounter,
           "MADs the node path service sent to the SA (retries included), by attribute.",
           {"attribute"}},
          {"path_connections_total",
           Type::kCounter,
           "Connections to the node path service, accepted or refused (at the limit).",
           {"result"}},
          {"path_connections", Type::kGauge, "Connections to the node path service open now."},
      });
  return table;
}

const char* fail_reason_name(FailReason r) {
  switch (r) {
    case FailReason::kMalformed: return "malformed";
    case FailReason::kSaError: return "sa_error";
    case FailReason::kNoPath: return "no_path";
    case FailReason::kTimeout: return "timeout";
    case FailReason::kUnencodable: return "unencodable";
    case FailReason::kShutdown: return "shutdown";
  }
  return "unknown";
}

const char* path_use_name(PathUse u) {
  switch (u) {
    case PathUse::kAll: return "all";
    case PathUse::kUnidirectional: return "unidirectional";
    case PathUse::kGmp: return "gmp";
  }
  return "unknown";
}

void LsdCounters::request(std::optional<PathUse> use) {
  const auto i = use ? static_cast<size_t>(*use) : requests_by_use_.size();
  bump(i < requests_by_use_.size() ? requests_by_use_[i] : malformed_);
}

void LsdCounters::answered(uint8_t sl) {
  bump(paths_);
  bump(paths_by_sl_[sl & 0xF]);
}

void LsdCounters::failed(FailReason why) {
  bump(failures_[static_cast<size_t>(why)]);
}

void LsdCounters::latency(std::chrono::nanoseconds took) {
  const double seconds = std::chrono::duration<double>(took).count();
  const auto bucket = static_cast<size_t>(
      std::lower_bound(kLsdLatencyBounds.begin(), kLsdLatencyBounds.end(), seconds) -
      kLsdLatencyBounds.begin());
  bump(latency_buckets_[bucket]);
  bump(latency_count_);
  bump(latency_sum_ns_, static_cast<uint64_t>(std::max<int64_t>(took.count(), 0)));
}

void LsdCounters::reload(bool ok) {
  bump(ok ? reloads_ : reload_failures_);
}

namespace {

constexpr std::array<const char*, 4> kPathOpNames = {"class_port_info", "path_record",
                                                     "multipath_record", "malformed"};
constexpr std::array<const char*, 4> kSaAttributeNames = {"path_record", "multipath_record",
                                                          "class_port_info", "other"};

size_t sa_attribute_index(uint16_t attr_id) {
  switch (attr_id) {
    case sa::attr::kPathRecord: return 0;
    case sa::attr::kMultiPathRecord: return 1;
    case sa::attr::kClassPortInfo: return 2;
    default: return 3;
  }
}

}  // namespace

void LsdCounters::path_question(std::optional<sa::path_service::Op> op) {
  const size_t i = op ? static_cast<size_t>(*op) - 1 : kPathOpNames.size() - 1;
  bump(path_questions_[std::min(i, kPathOpNames.size() - 1)]);
}

void LsdCounters::path_answer(std::optional<ErrorCode> failed) {
  if (!failed)
    bump(path_answered_);
  else
    bump(path_failed_[std::min(static_cast<size_t>(*failed), kErrorCodes - 1)]);
}

void LsdCounters::path_cache_hit() {
  bump(path_cache_hits_);
}

void LsdCounters::path_joined() {
  bump(path_joined_);
}

void LsdCounters::path_sa_request(uint16_t attr_id) {
  bump(path_sa_requests_[sa_attribute_index(attr_id)]);
}

void LsdCounters::path_connection(bool accepted) {
  bump(accepted ? path_accepted_ : path_refused_);
}

void LsdCounters::path_connection_closed() {
  bump(path_closed_);
}

nlohmann::json LsdCounters::snapshot() const {
  nlohmann::json s;
  s["uptime_seconds"] =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
          .count();
  nlohmann::json requests = nlohmann::json::object();
  for (PathUse u : {PathUse::kAll, PathUse::kUnidirectional, PathUse::kGmp})
    requests[path_use_name(u)] = get(requests_by_use_[static_cast<size_t>(u)]);
  requests["malformed"] = get(malformed_);
  s["requests"] = std::move(requests);
  nlohmann::json f_err = nlohmann::json::object();
  for (size_t i = 0; i < kFailReasons; ++i)
    f_err[fail_reason_name(static_cast<FailReason>(i))] = get(failures_[i]);
  s["answers"] = {{"path", get(paths_)}, {"f_err", std::move(f_err)}};
  // Only the SLs that were answered: sixteen zero lines help no one.
  nlohmann::json by_sl = nlohmann::json::object();
  for (size_t sl = 0; sl < paths_by_sl_.size(); ++sl)
    if (uint64_t n = get(paths_by_sl_[sl])) by_sl[std::to_string(sl)] = n;
  s["paths_by_sl"] = std::move(by_sl);
  std::vector<uint64_t> buckets;
  for (const auto& b : latency_buckets_) buckets.push_back(get(b));
  s["latency"] = {{"bounds_seconds", kLsdLatencyBounds},
                  {"buckets", buckets},
                  {"count", get(latency_count_)},
                  {"sum_seconds", static_cast<double>(get(latency_sum_ns_)) * 1e-9}};
  s["reloads"] = {{"ok", get(reloads_)}, {"failed", get(reload_failures_)}};
  nlohmann::json questions = nlohmann::json::object();
  for (size_t i = 0; i < kPathOpNames.size(); ++i)
    questions[kPathOpNames[i]] = get(path_questions_[i]);
  nlohmann::json failed = nlohmann::json::object();
  for (size_t i = 0; i < kErrorCodes; ++i)
    failed[error_code_name(static_cast<ErrorCode>(i))] = get(path_failed_[i]);
  nlohmann::json sa_requests = nlohmann::json::object();
  for (size_t i = 0; i < kSaAttributeNames.size(); ++i)
    sa_requests[kSaAttributeNames[i]] = get(path_sa_requests_[i]);
  const uint64_t accepted = get(path_accepted_);
  s["path_service"] = {
      {"questions", std::move(questions)},
      {"answers", {{"answered", get(path_answered_)}, {"failed", std::move(failed)}}},
      {"cache_hits", get(path_cache_hits_)},
      {"joined", get(path_joined_)},
      {"sa_requests", std::move(sa_requests)},
      {"connections",
       {{"open", accepted - std::min(accepted, get(path_closed_))},
        {"accepted", accepted},
        {"refused", get(path_refused_)}}}};
  s["metrics"] = common::metrics::to_json(metrics());
  return s;
}

common::metrics::Snapshot LsdCounters::metrics() const {
  common::metrics::Snapshot m(lsd_metric_table());
  m.add("uptime_seconds", {},
        static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::steady_clock::now() - started_)
                                .count()));
  for (PathUse u : {PathUse::kAll, PathUse::kUnidirectional, PathUse::kGmp})
    m.add("requests_total", {path_use_name(u)},
          static_cast<double>(get(requests_by_use_[static_cast<size_t>(u)])));
  m.add("requests_total", {"malformed"}, static_cast<double>(get(malformed_)));
  m.add("answers_total", {"path", ""}, static_cast<double>(get(paths_)));
  for (size_t i = 0; i < kFailReasons; ++i)
    m.add("answers_total", {"f_err", fail_reason_name(static_cast<FailReason>(i))},
          static_cast<double>(get(failures_[i])));
  for (size_t sl = 0; sl < paths_by_sl_.size(); ++sl)
    if (uint64_t n = get(paths_by_sl_[sl]))
      m.add("paths_total", {std::to_string(sl)}, static_cast<double>(n));
  std::vector<uint64_t> buckets;
  for (const auto& b : latency_buckets_) buckets.push_back(get(b));
  m.histogram("answer_duration_seconds", {}, {kLsdLatencyBounds.begin(), kLsdLatencyBounds.end()},
              std::move(buckets), static_cast<double>(get(latency_sum_ns_)) * 1e-9);
  m.add("reloads_total", {"ok"}, static_cast<double>(get(reloads_)));
  m.add("reloads_total", {"failed"}, static_cast<double>(get(reload_failures_)));
  for (size_t i = 0; i < kPathOpNames.size(); ++i)
    m.add("path_questions_total", {kPathOpNames[i]}, static_cast<double>(get(path_questions_[i])));
  m.add("path_answers_total", {"answered", ""}, static_cast<double>(get(path_answered_)));
  for (size_t i = 0; i < kErrorCodes; ++i)
    m.add("path_answers_total", {"failed", error_code_name(static_cast<ErrorCode>(i))},
          static_cast<double>(get(path_failed_[i])));
  m.add("path_cache_hits_total", {}, static_cast<double>(get(path_cache_hits_)));
  m.add("path_joined_total", {}, static_cast<double>(get(path_joined_)));
  for (size_t i = 0; i < kSaAttributeNames.size(); ++i)
    m.add("path_sa_requests_total", {kSaAttributeNames[i]},
          static_cast<double>(get(path_sa_requests_[i])));
  const uint64_t accepted = get(path_accepted_);
  m.add("path_connections_total", {"accepted"}, static_cast<double>(accepted));
  m.add("path_connections_total", {"refused"}, static_cast<double>(get(path_refused_)));
  m.add("path_connections", {},
        static_cast<double>(accepted - std::min(accepted, get(path_closed_))));
  return m;
}

}  // namespace rdmaqos::kmod
