// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA client: PathRecord / MultiPathRecord / ClassPortInfo queries with many requests
// outstanding at once, retries with backoff, BUSY handling, and the SA's QoS capability read
// once per SA (again after an SM LID change).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/multipath_record.h"
#include "rdma-qos/sa-client/path_record.h"
#include "rdma-qos/sa-client/transport.h"

namespace rdmaqos::sa {

class PathCache;

// The default back-off after a failed ClassPortInfo read (see ClientOptions). Fixed and short,
// not the path cache's TTL: an SA that does not answer is usually an SM starting or failing
// over, which takes seconds, while path answers stay valid for minutes; and a client without a
// path cache must not ask a silent SA on every query either.
constexpr std::chrono::milliseconds kClassPortInfoRetryAfter{5000};

struct ClientOptions {
  UmadOptions port;                // CA/port (used by Client::open only)
  std::optional<uint16_t> sa_lid;  // default: the port's SM LID
  // Per-attempt response timeout; default: from ClassPortInfo RespTimeValue (2x, clamped to
  // kMinTimeout..kMaxTimeout).
  std::optional<std::chrono::milliseconds> timeout;
  int retries = 3;     // resends after the first attempt (timeouts and BUSY alike)
  size_t window = 16;  // requests outstanding at once
  std::chrono::milliseconds backoff{10};  // first BUSY/failed-send backoff, doubled each time
  // How often an unchanged SM LID is re-read from the port (an SM change drops the cached
  // ClassPortInfo).
  std::chrono::milliseconds port_refresh{1000};
  // How long a failed ClassPortInfo read is remembered: until then class_port_info() returns
  // the same error at once instead of waiting timeout x (retries + 1) again.
  std::chrono::milliseconds class_port_info_retry_after{kClassPortInfoRetryAfter};
};

constexpr std::chrono::milliseconds kMinTimeout{100};
constexpr std::chrono::milliseconds kMaxTimeout{4000};
// Used for the ClassPortInfo query itself, before RespTimeValue is known.
constexpr std::chrono::milliseconds kBootstrapTimeout{1000};

struct PathQuery {
  PathRecord record;
  uint64_t comp_mask = 0;
  bool get_table = true;  // GetTable (every matching path) or Get (one path)
};

struct MultiPathQuery {
  MultiPathRecord record;
  uint64_t comp_mask = 0;  // SGIDCount and DGIDCount are always added
};

// One request the engine sends: the SA MAD itself (headers and data; the engine gives it its
// TID), encoded once when it is sent. Exposed for the CLI and tests.
struct SaRequest {
  SaMad mad;
  // This request's own bound, besides the client's (set_deadline): one stream may carry the
  // questions of many askers, each with its own time. Unanswered then: kTimeout. Not part of
  // what a cache keys on.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// One port's ClassPortInfo (or its last failure), shared by the clients of a pool
// (SharedClient): read by whichever asks first, not once per client. Valid for the SA LID it was
// read from.
struct ClassPortInfoShare {
  std::mutex mutex;
  uint16_t sa_lid = 0;
  std::optional<ClassPortInfo> cpi;
  std::optional<Error> failure;
  std::chrono::steady_clock::time_point retry_at{};
};

class Client {
 public:
  // Opens the umad port named in options.port.
  static Result<std::unique_ptr<Client>> open(const ClientOptions& options);
  Client(std::unique_ptr<Transport> transport, ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The SA this client queries now.
  uint16_t sa_lid() const;
  const PortAttributes& port() const;
  // Increases every time the SM LID of the port changes (caches key their validity on it).
  uint64_t sm_generation() const { return sm_generation_; }

  // Read once per SA and kept until the SM LID changes. A failure is kept too, for
  // options.class_port_info_retry_after (or until the SM LID changes).
  Result<ClassPortInfo> class_port_info();
  Result<bool> qos_supported();

  // Answers found in the cache (set_cache) are not asked again; fresh answers are stored.
  Result<std::vector<PathRecord>> path_records(const PathQuery& query);
  // Many queries with up to options.window outstanding; results in query order.
  std::vector<Result<std::vector<PathRecord>>> path_records(std::span<const PathQuery> queries);
  Result<std::vector<PathRecord>> multipath_records(const MultiPathQuery& query);

  // Bounds every call from now on by the caller's own deadline (rdma_resolve_route's timeout,
  // say): requests still unanswered then fail with kTimeout, whatever retries remain.
  // nullopt: no bound (the default).
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
    deadline_ = deadline;
  }

  // Shares a path cache with this client (nullptr: none).
  void set_cache(std::shared_ptr<PathCache> cache) { cache_ = std::move(cache); }
  // Shares the port's ClassPortInfo with the other clients of a pool (nullptr: none).
  void set_class_port_info_share(std::shared_ptr<ClassPortInfoShare> share) {
    cpi_share_ = std::move(share);
  }

  // Called with the round-trip time of every answered request (benchmarks, metrics).
  void set_latency_observer(std::function<void(std::chrono::nanoseconds)> observer) {
    latency_observer_ = std::move(observer);
  }

  // The engine: sends every request (windowed, retried) and returns each response MAD.
  // A non-zero MAD status is an error (kMadStatus, message with the status name).
  std::vector<Result<SaMad>> execute(std::span<const SaRequest> requests);
  // The engine for a stream of requests: pulls the next request from `next_request` whenever
  // the window has room (nullopt: none now), hands each response to `on_response` with the
  // request's index in pull order as soon as it completes, and returns once the source is empty
  // and nothing is outstanding. With `poll`, the source is asked again at least that often
  // while requests are outstanding, so new requests join a window held by a slow one.
  using RequestSource = std::function<std::optional<SaRequest>()>;
  using ResponseHandler = std::function<void(size_t, Result<SaMad>)>;
  void execute_stream(const RequestSource& next_request, const ResponseHandler& on_response,
                      std::optional<std::chrono::milliseconds> poll = std::nullopt);

 private:
  struct Impl;
  void maybe_refresh_port();
  std::chrono::milliseconds attempt_timeout();

  std::unique_ptr<Transport> transport_;
  ClientOptions options_;
  std::optional<ClassPortInfo> cpi_;
  bool cpi_tried_ = false;  // ClassPortInfo asked for (once per SA) before the first query
  // The last failed ClassPortInfo read and when it may be asked again.
  std::optional<Error> cpi_failure_;
  std::chrono::steady_clock::time_point cpi_retry_at_{};
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::shared_ptr<PathCache> cache_;
  std::shared_ptr<ClassPortInfoShare> cpi_share_;
  std::function<void(std::chrono::nanoseconds)> latency_observer_;
  uint64_t sm_generation_ = 0;
  uint32_t next_tid_;
  std::chrono::steady_clock::time_point last_refresh_;
};

// Builds the request for a PathRecord query (Service-ID mask bits always both or none).
Result<SaRequest> make_path_request(const PathQuery& query);
Result<SaRequest> make_multipath_request(const MultiPathQuery& query);
// The MultiPathRecord query with a PathRecord query's requirements: SGID and DGID (both
// required) become one-entry GID lists, every other PathRecord component its MultiPathRecord
// bit; DLID, SLID and Preference have none (kInvalidArgument).
Result<MultiPathQuery> multipath_query_from(const PathQuery& query);
// Decodes every PathRecord of a response.
Result<std::vector<PathRecord>> decode_path_response(const SaMad& response);
Result<ClassPortInfo> decode_class_port_info_response(const SaMad& response);

}  // namespace rdmaqos::sa
