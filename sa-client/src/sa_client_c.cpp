// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The C API over SharedClient, for C programs: every entry point catches everything so no
// exception crosses into C; a handle may be shared between threads, each with its own deadline
// (rdma_qos_sa_set_thread_deadline).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>

#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_cache.h"
#include "rdma-qos/sa-client/sa_client.h"
#include "rdma-qos/sa-client/shared_client.h"

struct rdma_qos_sa_client {
  std::unique_ptr<rdmaqos::sa::SharedClient> client;
  // The process that opened it. A child after fork() shares the umad file with its parent (an
  // answer may reach either) and may inherit the client's lock held by a thread it does not
  // have, which it would wait for for ever: the child never uses the handle.
  pid_t owner = getpid();
};

namespace {

using namespace rdmaqos::sa;
using rdmaqos::Error;
using rdmaqos::ErrorCode;
using rdmaqos::Result;

// rdma_qos_sa_set_thread_deadline: this thread's bound, passed with each of its calls.
thread_local Deadline thread_deadline;

void copy_message(char* dst, size_t len, const std::string& text) {
  if (len == 0) return;
  size_t n = std::min(len - 1, text.size());
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

void set_error(rdma_qos_sa_error* err, rdma_qos_sa_error_code code, const std::string& message,
               uint16_t mad_status = 0) {
  if (!err) return;
  err->code = code;
  err->mad_status = mad_status;
  copy_message(err->message, sizeof err->message, message);
}

rdma_qos_sa_error_code c_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::kTruncated: return RDMA_QOS_SA_TRUNCATED;
    case ErrorCode::kMalformed: return RDMA_QOS_SA_MALFORMED;
    case ErrorCode::kMadStatus: return RDMA_QOS_SA_MAD_STATUS;
    case ErrorCode::kTimeout: return RDMA_QOS_SA_TIMEOUT;
    case ErrorCode::kTransport: return RDMA_QOS_SA_TRANSPORT;
    case ErrorCode::kInvalidArgument: return RDMA_QOS_SA_INVALID_ARGUMENT;
    // Not one the SA client returns; were something it opens missing, that is an open failing.
    // The C enum stays as it is: a new value would change what callers may receive.
    case ErrorCode::kNotFound: return RDMA_QOS_SA_TRANSPORT;
    // Nor this one (a local service's); the nearest the C enum has is "try again later".
    case ErrorCode::kBusy: return RDMA_QOS_SA_TIMEOUT;
  }
  return RDMA_QOS_SA_MALFORMED;
}

void set_error(rdma_qos_sa_error* err, const Error& e) {
  set_error(err, c_code(e.code), e.message, e.mad_status);
}

void clear_error(rdma_qos_sa_error* err) {
  set_error(err, RDMA_QOS_SA_OK, "");
}

// Runs an entry point's body so that no exception leaves the C API: one thrown is reported in
// *err as a transport error and the call answers `failed`.
template <typename Result, typename Body>
Result guarded(rdma_qos_sa_error* err, Result failed, Body body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    set_error(err, RDMA_QOS_SA_TRANSPORT, e.what());
  } catch (...) {
    set_error(err, RDMA_QOS_SA_TRANSPORT, "unknown exception");
  }
  return failed;
}

// False, with the error set, for a handle another process opened (see rdma_qos_sa_client).
bool of_this_process(const rdma_qos_sa_client* client, rdma_qos_sa_error* err) {
  if (client->owner == getpid()) return true;
  set_error(err, RDMA_QOS_SA_TRANSPORT,
            fmt::format("this SA client was opened by process {} before fork(): open one in "
                        "this process",
                        client->owner));
  return false;
}

}  // namespace

namespace rdmaqos::sa {

Result<MultiPathQuery> multipath_query_from(const PathQuery& query) {
  const uint64_t m = query.comp_mask;
  if ((m & RDMA_QOS_PR_COMP_SGID) == 0 || (m & RDMA_QOS_PR_COMP_DGID) == 0)
    return Error{ErrorCode::kInvalidArgument,
                 "a MultiPathRecord query needs the SGID and the DGID components"};
  if (m & (RDMA_QOS_PR_COMP_DLID | RDMA_QOS_PR_COMP_SLID | RDMA_QOS_PR_COMP_PREFERENCE))
    return Error{ErrorCode::kInvalidArgument,
                 "DLID, SLID and Preference have no MultiPathRecord component"};
  // PathRecord component bit -> MultiPathRecord component bit (IBA 15.2.5.16 / 15.2.5.20).
  static constexpr std::pair<uint64_t, uint64_t> kBits[] = {
      {RDMA_QOS_PR_COMP_SERVICE_ID, mpr_mask::kServiceId},
      {RDMA_QOS_PR_COMP_RAW_TRAFFIC, mpr_mask::kRawTraffic},
      {RDMA_QOS_PR_COMP_FLOW_LABEL, mpr_mask::kFlowLabel},
      {RDMA_QOS_PR_COMP_HOP_LIMIT, mpr_mask::kHopLimit},
      {RDMA_QOS_PR_COMP_TCLASS, mpr_mask::kTClass},
      {RDMA_QOS_PR_COMP_REVERSIBLE, mpr_mask::kReversible},
      {RDMA_QOS_PR_COMP_NUMB_PATH, mpr_mask::kNumbPath},
      {RDMA_QOS_PR_COMP_PKEY, mpr_mask::kPKey},
      {RDMA_QOS_PR_COMP_QOS_CLASS, mpr_mask::kQosClass},
      {RDMA_QOS_PR_COMP_SL, mpr_mask::kSl},
      {RDMA_QOS_PR_COMP_MTU_SELECTOR, mpr_mask::kMtuSelector},
      {RDMA_QOS_PR_COMP_MTU, mpr_mask::kMtu},
      {RDMA_QOS_PR_COMP_RATE_SELECTOR, mpr_mask::kRateSelector},
      {RDMA_QOS_PR_COMP_RATE, mpr_mask::kRate},
      {RDMA_QOS_PR_COMP_PKT_LIFE_SELECTOR, mpr_mask::kPacketLifeSelector},
      {RDMA_QOS_PR_COMP_PKT_LIFE, mpr_mask::kPacketLife},
  };
  MultiPathQuery out;
  for (auto [pr, mpr] : kBits)
    if ((m & pr) == pr) out.comp_mask |= mpr;
  const PathRecord& r = query.record;
  MultiPathRecord& q = out.record;
  q.raw_traffic = r.raw_traffic;
  q.flow_label = r.flow_label;
  q.hop_limit = r.hop_limit;
  q.tclass = r.tclass;
  q.reversible = r.reversible;
  q.numb_path = r.numb_path;
  q.pkey = r.pkey;
  q.qos_class = r.qos_class;
  q.sl = r.sl;
  q.mtu_selector = r.mtu_selector;
  q.mtu = r.mtu;
  q.rate_selector = r.rate_selector;
  q.rate = r.rate;
  q.packet_life_selector = r.packet_life_selector;
  q.packet_life = r.packet_life;
  q.service_id = r.service_id;
  q.sgids = {r.sgid};
  q.dgids = {r.dgid};
  return out;
}

rdma_qos_sa_client* wrap_c_client(std::unique_ptr<Client> client) {
  auto* c = new rdma_qos_sa_client;
  c->client = std::make_unique<SharedClient>(std::move(client));
  return c;
}
}  // namespace rdmaqos::sa

namespace {

using namespace rdmaqos::sa;
using rdmaqos::Error;
using rdmaqos::ErrorCode;
using rdmaqos::Result;

// PathRecord Get (or, with `multipath`, the same query as a MultiPathRecord GetMulti) for the
// two C entry points: the answers copied out in wire format, their count returned.
int query_paths(rdma_qos_sa_client* client, const ibv_path_record* query, uint64_t comp_mask,
                ibv_path_record* paths, int max_paths, rdma_qos_sa_error* err, bool multipath) {
  return guarded(err, -1, [&] {
    if (!client || !query || (max_paths > 0 && !paths) || max_paths < 0) {
      set_error(err, RDMA_QOS_SA_INVALID_ARGUMENT, "NULL client/query/paths or max_paths < 0");
      return -1;
    }
    if (!of_this_process(client, err)) return -1;
    auto record = decode_path_record(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(query), sizeof *query));
    if (!record) {
      set_error(err, record.error());
      return -1;
    }
    PathQuery q;
    q.record = *record;
    q.comp_mask = comp_mask;
    auto answer = multipath ? client->client->multipath_records(q, thread_deadline)
                            : client->client->path_records(q, thread_deadline);
    if (!answer) {
      set_error(err, answer.error());
      return -1;
    }
    int n = 0;
    for (const auto& p : *answer) {
      if (n < max_paths) {
        auto bytes = encode_path_record(p);
        if (!bytes) {
          set_error(err, bytes.error());
          return -1;
        }
        std::memcpy(&paths[n], bytes->data(), sizeof paths[n]);
      }
      ++n;
    }
    clear_error(err);
    return n;
  });
}

// The two capability questions (QoS, MultiPathRecord) for their C entry points: 1 or 0, or -1
// with *err. `ask` puts the question to the client.
template <typename Ask>
int capability(rdma_qos_sa_client* client, rdma_qos_sa_error* err, Ask ask) {
  return guarded(err, -1, [&] {
    if (!client) {
      set_error(err, RDMA_QOS_SA_INVALID_ARGUMENT, "NULL client");
      return -1;
    }
    if (!of_this_process(client, err)) return -1;
    auto answer = ask(*client->client);
    if (!answer) {
      set_error(err, answer.error());
      return -1;
    }
    clear_error(err);
    return *answer ? 1 : 0;
  });
}

}  // namespace

extern "C" {

rdma_qos_sa_client* rdma_qos_sa_open(const rdma_qos_sa_options* options, rdma_qos_sa_error* err) {
  return guarded(err, static_cast<rdma_qos_sa_client*>(nullptr), [&]() -> rdma_qos_sa_client* {
    ClientOptions o;
    rdma_qos_sa_options none{};
    const rdma_qos_sa_options& c = options ? *options : none;
    if (c.ca) o.port.ca = c.ca;
    o.port.port = c.port;
    if (c.sa_lid) o.sa_lid = c.sa_lid;
    if (c.timeout_ms > 0) o.timeout = std::chrono::milliseconds(c.timeout_ms);
    if (c.retries >= 0 && options) o.retries = c.retries;
    PathCacheOptions co;
    co.ttl = std::chrono::milliseconds(c.cache_ttl_ms);
    if (c.cache_capacity) co.capacity = c.cache_capacity;
    auto client = SharedClient::open(o, c.cache_ttl_ms > 0 ? &co : nullptr);
    if (!client) {
      set_error(err, client.error());
      return nullptr;
    }
    clear_error(err);
    auto* handle = new rdma_qos_sa_client;
    handle->client = std::move(*client);
    return handle;
  });
}

void rdma_qos_sa_close(rdma_qos_sa_client* client) {
  // In a child after fork() the handle is left alone: destroying it would unregister the
  // parent's umad agent (the file is shared) and might find its lock held.
  if (client != nullptr && client->owner != getpid()) return;
  delete client;
}

int rdma_qos_sa_path_query(rdma_qos_sa_client* client, const ibv_path_record* query,
                           uint64_t comp_mask, ibv_path_record* paths, int max_paths,
                           rdma_qos_sa_error* err) {
  return query_paths(client, query, comp_mask, paths, max_paths, err, false);
}

int rdma_qos_sa_qos_supported(rdma_qos_sa_client* client, rdma_qos_sa_error* err) {
  return capability(client, err, [](SharedClient& c) { return c.qos_supported(thread_deadline); });
}

void rdma_qos_sa_set_thread_deadline(int budget_ms) {
  thread_deadline = deadline_after(std::chrono::milliseconds(budget_ms));
}

const char* rdma_qos_sa_mad_status_name(uint16_t mad_status, char* buf, size_t len) {
  try {
    copy_message(buf, len, mad_status_name(mad_status));
  } catch (...) {
    copy_message(buf, len, "?");
  }
  return buf;
}

int rdma_qos_sa_mpr_supported(rdma_qos_sa_client* client, rdma_qos_sa_error* err) {
  return capability(client, err,
                    [](SharedClient& c) { return c.multipath_supported(thread_deadline); });
}

int rdma_qos_sa_multipath_query(rdma_qos_sa_client* client, const ibv_path_record* query,
                                uint64_t comp_mask, ibv_path_record* paths, int max_paths,
                                rdma_qos_sa_error* err) {
  return query_paths(client, query, comp_mask, paths, max_paths, err, true);
}

}  // extern "C"
