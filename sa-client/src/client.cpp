// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The windowed SA query engine and the typed queries built on it.
#include "rdma-qos/sa-client/client.h"

#include "rdma-qos/sa-client/path_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace rdmaqos::sa {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Result<SaRequest> make_path_request(const PathQuery& query) {
  auto bytes = encode_path_record(query.record);
  if (!bytes) return bytes.error();
  SaRequest r;
  r.mad.mad.method = query.get_table ? method::kGetTable : method::kGet;
  r.mad.mad.attr_id = attr::kPathRecord;
  r.mad.sa.comp_mask = query.comp_mask;
  // OpenSM answers INSUF_COMPS to half a Service ID.
  if (r.mad.sa.comp_mask & pr_mask::kServiceId) r.mad.sa.comp_mask |= pr_mask::kServiceId;
  r.mad.data.assign(bytes->begin(), bytes->end());
  return r;
}

Result<SaRequest> make_multipath_request(const MultiPathQuery& query) {
  if (query.record.sgids.empty() || query.record.dgids.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      "a MultiPathRecord query needs at least one SGID and one DGID");
  auto bytes = encode_multipath_record(query.record);
  if (!bytes) return bytes.error();
  SaRequest r;
  r.mad.mad.method = method::kGetMulti;
  r.mad.mad.attr_id = attr::kMultiPathRecord;
  r.mad.sa.comp_mask = query.comp_mask | mpr_mask::kSgidCount | mpr_mask::kDgidCount;
  if (r.mad.sa.comp_mask & mpr_mask::kServiceId) r.mad.sa.comp_mask |= mpr_mask::kServiceId;
  r.mad.data = std::move(*bytes);
  // Sent RMPP-active, one segment (GetMulti).
  r.mad.rmpp.version = rmpp::kVersion;
  r.mad.rmpp.type = rmpp::kTypeData;
  r.mad.rmpp.flags = rmpp::kFlagActive | rmpp::kFlagFirst | rmpp::kFlagLast;
  r.mad.rmpp.segment = 1;
  r.mad.rmpp.payload_length = static_cast<uint32_t>(kSaHeaderSize + r.mad.data.size());
  return r;
}

Result<std::vector<PathRecord>> decode_path_response(const SaMad& response) {
  // A GetMultiResp keeps the MultiPathRecord attribute ID; its records are PathRecords.
  if (response.mad.attr_id != attr::kPathRecord && response.mad.attr_id != attr::kMultiPathRecord)
    return make_error(
        ErrorCode::kMalformed,
        fmt::format("response attribute 0x{:04x} is not PathRecord", response.mad.attr_id));
  auto records = response_records(response, kPathRecordSize);
  if (!records) return records.error();
  std::vector<PathRecord> out;
  out.reserve(records->size());
  for (auto bytes : *records) {
    auto r = decode_path_record(bytes);
    if (!r) return r.error();
    out.push_back(*r);
  }
  return out;
}

Result<ClassPortInfo> decode_class_port_info_response(const SaMad& response) {
  if (response.mad.attr_id != attr::kClassPortInfo)
    return make_error(
        ErrorCode::kMalformed,
        fmt::format("response attribute 0x{:04x} is not ClassPortInfo", response.mad.attr_id));
  return decode_class_port_info(response.data);
}

namespace {
uint32_t next_instance() {
  static std::atomic<uint32_t> instances{0};
  return instances.fetch_add(1, std::memory_order_relaxed) & 0xF;
}
}  // namespace

Result<std::unique_ptr<Client>> Client::open(const ClientOptions& options) {
  auto transport = open_umad_transport(options.port);
  if (!transport) return transport.error();
  return std::make_unique<Client>(std::move(*transport), options);
}

Client::Client(std::unique_ptr<Transport> transport, ClientOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      // Distinct starting TIDs per process make a late answer to a previous run unmistakable,
      // and per client of the process one to another client's query (SharedClient opens
      // several on one port).
      next_tid_((static_cast<uint32_t>(getpid()) << 16) + (next_instance() << 12)),
      last_refresh_(Clock::now()) {
  if (options_.window == 0) options_.window = 1;
  if (options_.retries < 0) options_.retries = 0;
}

Client::~Client() = default;

uint16_t Client::sa_lid() const {
  return options_.sa_lid ? *options_.sa_lid : transport_->port().sm_lid;
}

const PortAttributes& Client::port() const {
  return transport_->port();
}

void Client::maybe_refresh_port() {
  auto now = Clock::now();
  if (now - last_refresh_ < options_.port_refresh) return;
  last_refresh_ = now;
  uint16_t before = transport_->port().sm_lid;
  auto fresh = transport_->refresh_port();
  if (fresh && fresh->sm_lid != before) {
    ++sm_generation_;
    if (!options_.sa_lid) {
      cpi_.reset();
      cpi_tried_ = false;
      cpi_failure_.reset();  // a new SA: ask it
    }
  }
}

milliseconds Client::attempt_timeout() {
  if (options_.timeout) return *options_.timeout;
  if (!cpi_) return kBootstrapTimeout;
  auto t = std::chrono::duration_cast<milliseconds>(2 * cpi_->resp_time());
  return std::clamp(t, kMinTimeout, kMaxTimeout);
}

Result<ClassPortInfo> Client::class_port_info() {
  maybe_refresh_port();
  if (cpi_) return *cpi_;
  // Another client of the pool may have read it (or failed to) from the same SA.
  if (cpi_share_) {
    std::lock_guard lock(cpi_share_->mutex);
    if (cpi_share_->sa_lid == sa_lid()) {
      if (cpi_share_->cpi) {
        cpi_ = cpi_share_->cpi;
        return *cpi_;
      }
      if (cpi_share_->failure && cpi_share_->retry_at > cpi_retry_at_) {
        cpi_failure_ = cpi_share_->failure;
        cpi_retry_at_ = cpi_share_->retry_at;
      }
    }
  }
  // A failure is remembered for a while: callers such as the preload module ask before every
  // connection, and each would otherwise wait the whole timeout x (retries + 1) again.
  if (cpi_failure_ && Clock::now() < cpi_retry_at_) return *cpi_failure_;
  cpi_failure_.reset();
  // This is the read execute() would make before its first query: without the flag it made it
  // too, and the first ClassPortInfo read went to the SA twice.
  cpi_tried_ = true;
  SaRequest req;
  req.mad.mad.method = method::kGet;
  req.mad.mad.attr_id = attr::kClassPortInfo;
  auto responses = execute(std::span<const SaRequest>(&req, 1));
  Result<ClassPortInfo> cpi = responses[0] ? decode_class_port_info_response(*responses[0])
                                           : Result<ClassPortInfo>(responses[0].error());
  if (!cpi) {
    cpi_failure_ = cpi.error();
    cpi_retry_at_ = Clock::now() + options_.class_port_info_retry_after;
  } else {
    cpi_ = *cpi;
  }
  if (cpi_share_) {
    std::lock_guard lock(cpi_share_->mutex);
    cpi_share_->sa_lid = sa_lid();
    cpi_share_->cpi = cpi_;
    cpi_share_->failure = cpi_ ? std::nullopt : cpi_failure_;
    cpi_share_->retry_at = cpi_retry_at_;
  }
  if (!cpi) return cpi.error();
  return *cpi_;
}

Result<bool> Client::qos_supported() {
  auto cpi = class_port_info();
  if (!cpi) return cpi.error();
  return cpi->qos_supported();
}

Result<std::vector<PathRecord>> Client::path_records(const PathQuery& query) {
  return std::move(path_records(std::span<const PathQuery>(&query, 1))[0]);
}

std::vector<Result<std::vector<PathRecord>>> Client::path_records(
    std::span<const PathQuery> queries) {
  std::vector<Result<std::vector<PathRecord>>> out;
  out.reserve(queries.size());
  std::vector<SaRequest> requests;
  std::vector<size_t> where;         // request index -> query index
  std::vector<PathCache::Key> keys;  // request index -> its cache key (with a cache)
  std::vector<std::optional<Error>> invalid(queries.size());
  std::vector<std::optional<std::vector<PathRecord>>> cached(queries.size());
  if (cache_) maybe_refresh_port();
  for (size_t i = 0; i < queries.size(); ++i) {
    // Encoded once: the cache's key is the request's bytes.
    auto r = make_path_request(queries[i]);
    if (!r) {
      invalid[i] = r.error();
      continue;
    }
    if (cache_) {
      PathCache::Key key = PathCache::key_of(*r);
      if ((cached[i] = cache_->lookup(key, sm_generation_))) continue;
      keys.push_back(key);
    }
    requests.push_back(std::move(*r));
    where.push_back(i);
  }
  auto responses = execute(requests);
  std::vector<std::optional<Result<std::vector<PathRecord>>>> slots(queries.size());
  for (size_t k = 0; k < responses.size(); ++k) {
    if (!responses[k])
      slots[where[k]] = responses[k].error();
    else
      slots[where[k]] = decode_path_response(*responses[k]);
    if (cache_ && *slots[where[k]])
      cache_->insert(keys[k], slots[where[k]]->value(), sm_generation_);
  }
  for (size_t i = 0; i < queries.size(); ++i) {
    if (cached[i]) {
      out.push_back(std::move(*cached[i]));
      continue;
    }
    out.push_back(invalid[i] ? Result<std::vector<PathRecord>>(*invalid[i]) : std::move(*slots[i]));
  }
  return out;
}

Result<std::vector<PathRecord>> Client::multipath_records(const MultiPathQuery& query) {
  auto req = make_multipath_request(query);
  if (!req) return req.error();
  auto responses = execute(std::span<const SaRequest>(&*req, 1));
  if (!responses[0]) return responses[0].error();
  return decode_path_response(*responses[0]);
}

namespace {

struct Pending {
  size_t index = 0;
  std::vector<uint8_t> bytes;
  int attempts = 0;       // sends so far
  Clock::time_point due;  // response deadline, or when to resend
  bool waiting_resend = false;
  uint16_t last_status = 0;  // BUSY seen on the previous attempt
  Clock::time_point first_sent;
  // The earlier of the request's own deadline and the client's; nullopt: neither.
  std::optional<Clock::time_point> deadline;
};

}  // namespace

std::vector<Result<SaMad>> Client::execute(std::span<const SaRequest> requests) {
  maybe_refresh_port();
  // The per-attempt timeout comes from the SA's RespTimeValue: read ClassPortInfo once per
  // SA first (that also answers qos_supported()). If the SA does not answer it, the queries
  // go ahead with the bootstrap timeout.
  if (!options_.timeout && !cpi_ && !cpi_tried_ && !requests.empty()) {
    cpi_tried_ = true;
    class_port_info().ignore_error();  // only its RespTimeValue is wanted, when it answers
  }
  std::vector<std::optional<Result<SaMad>>> results(requests.size());
  size_t next = 0;
  execute_stream(
      [&]() -> std::optional<SaRequest> {
        if (next == requests.size()) return std::nullopt;
        return requests[next++];
      },
      [&](size_t i, Result<SaMad> r) { results[i] = std::move(r); });
  std::vector<Result<SaMad>> out;
  out.reserve(results.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

void Client::execute_stream(const RequestSource& next_request, const ResponseHandler& on_response,
                            std::optional<std::chrono::milliseconds> poll) {
  maybe_refresh_port();
  const milliseconds timeout = attempt_timeout();
  const uint16_t dlid = sa_lid();
  const uint8_t sl = transport_->port().sm_sl;
  const int max_attempts = options_.retries + 1;

  std::unordered_map<uint32_t, Pending> active;
  size_t pulled = 0;
  bool source_empty = false;

  auto finish = [&](uint32_t tid, Result<SaMad> r) {
    auto it = active.find(tid);
    size_t index = it->second.index;
    active.erase(it);
    on_response(index, std::move(r));
  };
  auto backoff = [&](int attempts) { return options_.backoff * (1 << std::min(attempts, 10)); };
  // Sends (or resends) a pending request; a failed send is retried after a backoff.
  auto transmit = [&](uint32_t tid, Pending& p) {
    ++p.attempts;
    auto sent = transport_->send(p.bytes, dlid, sl, timeout);
    auto now = Clock::now();
    if (!sent) {
      if (p.attempts >= max_attempts) {
        finish(tid, sent.error());
        return;
      }
      p.waiting_resend = true;
      p.due = now + backoff(p.attempts);
      if (p.deadline) p.due = std::min(p.due, *p.deadline);
      return;
    }
    p.waiting_resend = false;
    p.due = now + timeout;
    if (p.deadline) p.due = std::min(p.due, *p.deadline);
  };
  // After a timeout or BUSY: resend after a backoff, or give up.
  auto past_deadline = [](const Pending& p) { return p.deadline && Clock::now() >= *p.deadline; };
  auto deadline_error = [&](const Pending& p) {
    return make_error(ErrorCode::kTimeout,
                      fmt::format("no answer from SA LID {} within the caller's deadline ({} "
                                  "attempt(s))",
                                  dlid, p.attempts));
  };
  auto retry_or_fail = [&](uint32_t tid, Pending& p, Error why) {
    if (past_deadline(p)) {
      finish(tid, deadline_error(p));
      return;
    }
    if (p.attempts >= max_attempts) {
      finish(tid, std::move(why));
      return;
    }
    p.waiting_resend = true;
    p.due = Clock::now() + backoff(p.attempts - 1);
    if (p.deadline) p.due = std::min(p.due, *p.deadline);
  };

  for (;;) {
    source_empty = false;
    while (active.size() < options_.window) {
      auto pulled_request = next_request();
      if (!pulled_request) {
        source_empty = true;
        break;
      }
      SaRequest& req = *pulled_request;
      uint32_t tid = ++next_tid_;
      req.mad.mad.tid = tid;
      Pending p;
      p.index = pulled++;
      p.bytes = encode_sa_mad(req.mad);
      p.first_sent = Clock::now();
      p.deadline = deadline_;
      if (req.deadline && (!p.deadline || *req.deadline < *p.deadline)) p.deadline = req.deadline;
      auto [it, inserted] = active.emplace(tid, std::move(p));
      (void)inserted;
      if (past_deadline(it->second))  // the caller's time is up: nothing more is sent
        finish(tid, deadline_error(it->second));
      else
        transmit(tid, it->second);
    }
    if (active.empty()) {
      if (source_empty) break;
      continue;
    }

    auto earliest = std::min_element(active.begin(), active.end(), [](auto& a, auto& b) {
                      return a.second.due < b.second.due;
                    })->second.due;
    auto now = Clock::now();
    auto wait = earliest > now ? std::chrono::ceil<milliseconds>(earliest - now) : milliseconds(0);
    if (poll && active.size() < options_.window) wait = std::min(wait, *poll);
    auto received = transport_->receive(wait);
    if (!received) {
      // The port itself failed: nothing outstanding, nor anything still in the source, can
      // complete.
      while (!active.empty()) finish(active.begin()->first, received.error());
      while (auto rest = next_request()) on_response(pulled++, received.error());
      break;
    }
    if (*received) {
      ReceivedMad& r = **received;
      auto mad = decode_sa_mad(r.bytes);
      if (mad) {
        auto it = active.find(static_cast<uint32_t>(mad->mad.tid));
        if (it != active.end()) {
          uint32_t tid = it->first;
          Pending& p = it->second;
          if (r.status != 0) {
            // The umad layer gave up on this send (its echo carries our request).
            retry_or_fail(tid, p,
                          make_error(ErrorCode::kTimeout,
                                     fmt::format("no answer from SA LID {} after {} attempt(s) "
                                                 "({})",
                                                 dlid, p.attempts, std::strerror(r.status))));
          } else if (!(mad->mad.method & method::kResponseBit)) {
            // Not an answer (a loopback of our own request): ignore.
          } else if (mad->mad.status & status::kBusy) {
            p.last_status = mad->mad.status;
            retry_or_fail(tid, p,
                          make_error(ErrorCode::kMadStatus,
                                     fmt::format("SA LID {} stayed BUSY after {} attempt(s)", dlid,
                                                 p.attempts),
                                     mad->mad.status));
          } else if (mad->mad.status != 0) {
            finish(tid, make_error(ErrorCode::kMadStatus,
                                   fmt::format("SA answered {} (status 0x{:04x})",
                                               mad_status_name(mad->mad.status), mad->mad.status),
                                   mad->mad.status));
          } else {
            if (latency_observer_) latency_observer_(Clock::now() - p.first_sent);
            finish(tid, std::move(*mad));
          }
        }
      }
      if (!mad && r.bytes.size() >= 16) {
        // Too damaged to use, but its TID names the request it answers: fail that one now
        // with the decoder's reason instead of letting it time out.
        auto it = active.find(wire::get32(r.bytes.data() + 12));
        if (it != active.end())
          finish(it->first, make_error(mad.error().code,
                                       "malformed response from SA: " + mad.error().message));
      }
    }
    now = Clock::now();
    std::vector<uint32_t> expired;
    for (auto& [tid, p] : active)
      if (p.due <= now) expired.push_back(tid);
    for (uint32_t tid : expired) {
      Pending& p = active.at(tid);
      if (past_deadline(p)) {
        finish(tid, deadline_error(p));
      } else if (p.waiting_resend) {
        transmit(tid, p);
      } else {
        retry_or_fail(
            tid, p,
            make_error(ErrorCode::kTimeout,
                       fmt::format("no answer from SA LID {} after {} attempt(s) of {} ms", dlid,
                                   p.attempts, timeout.count())));
      }
    }
  }
}

}  // namespace rdmaqos::sa
