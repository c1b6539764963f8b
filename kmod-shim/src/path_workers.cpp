// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The path service's SA side (path_workers.h). Each port's client sends through a transport that
// counts the MADs it sends, in the counters by attribute and for the port: a ClassPortInfo
// question answered while the port sent nothing came from the client's copy.
//
// One stream per port, not a worker per question: ibsim's umad2sim hands every SA response of
// a process to its newest agent, so a simulated node has one agent per port, and with one
// question at a time on it a node asked its distinct paths one round trip after another. The
// stream keeps up to the SA window of them outstanding on the one agent, as rdma-qos-lsd's kernel
// listener does.
#include "path_workers.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "rdma-qos/sa-client/mad.h"
#include "umad_open.h"

namespace rdmaqos::kmod {

using Clock = std::chrono::steady_clock;
using sa::path_service::Op;

namespace {

// A port the service cannot open (a name no device has, a port down) is remembered for a
// while, but no more than this many ports are: a local user naming a new device in each
// question must not grow the table without bound.
constexpr size_t kMaxPorts = 256;

// How often a stream with answers outstanding looks for its port's new questions.
constexpr std::chrono::milliseconds kIntakePoll{5};

class CountingTransport final : public sa::Transport {
 public:
  CountingTransport(std::unique_ptr<sa::Transport> inner, std::shared_ptr<LsdCounters> counters)
      : inner_(std::move(inner)), counters_(std::move(counters)) {}
  Result<Ok> send(std::span<const uint8_t> mad, uint16_t dlid, uint8_t sl,
                  std::chrono::milliseconds response_timeout) override {
    ++sent_;
    // The attribute ID sits at bytes 16..17 of the MAD header, big-endian.
    if (counters_ && mad.size() >= 18)
      counters_->path_sa_request(static_cast<uint16_t>(mad[16] << 8 | mad[17]));
    return inner_->send(mad, dlid, sl, response_timeout);
  }
  Result<std::optional<sa::ReceivedMad>> receive(std::chrono::milliseconds timeout) override {
    return inner_->receive(timeout);
  }
  const sa::PortAttributes& port() const override { return inner_->port(); }
  Result<sa::PortAttributes> refresh_port() override { return inner_->refresh_port(); }
  uint64_t sent() const { return sent_; }

 private:
  std::unique_ptr<sa::Transport> inner_;
  std::shared_ptr<LsdCounters> counters_;
  uint64_t sent_ = 0;  // by the streaming worker only
};

SaOutcome failed(const SaJob& job, Error e) {
  SaOutcome out;
  out.flight = job.flight;
  if (job.op == Op::kClassPortInfo)
    out.class_port_info = std::move(e);
  else
    out.paths = std::move(e);
  return out;
}

}  // namespace

struct PathWorkers::Port {
  std::string device;
  int port = 0;
  // Guarded by PathWorkers::mutex_.
  std::deque<SaJob> pending;  // questions its stream has not taken yet
  bool streaming = false;     // a worker streams this port's questions now
  bool queued = false;        // in ready_, waiting for a worker
  // The streaming worker's alone.
  std::unique_ptr<sa::Client> client;
  CountingTransport* transport = nullptr;  // the client's
  std::shared_ptr<sa::PathCache> cache;
  bool class_port_info_asked = false;
  Clock::time_point failed_at{};
  std::optional<Error> failure;
};

PathWorkers::PathWorkers(PathServiceOptions options, LogSink log)
    : log_(std::move(log)), options_(std::move(options)) {
  ready_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  const size_t n = std::max<size_t>(options_.workers, 1);
  for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

PathWorkers::~PathWorkers() {
  {
    std::lock_guard lock(mutex_);
    quitting_ = true;
  }
  queued_.notify_all();
  for (auto& t : threads_) t.join();
  for (auto& d : done_) {
    d.paths.ignore_error();
    d.class_port_info.ignore_error();
  }
  if (ready_fd_ >= 0) close(ready_fd_);
}

void PathWorkers::submit(SaJob job) {
  {
    std::lock_guard lock(mutex_);
    std::shared_ptr<Port> port = port_for(job);
    if (port) {
      port->pending.push_back(std::move(job));
      // A port's questions wait for its stream, which takes them as the window has room; a
      // port with none under way waits for a worker.
      if (!port->streaming && !port->queued) {
        port->queued = true;
        ready_.push_back(std::move(port));
        queued_.notify_one();
      }
      return;
    }
  }
  post(failed(job, make_error(ErrorCode::kInvalidArgument,
                              fmt::format("{} ports are open already; {} port {} is not", kMaxPorts,
                                          job.device, job.port))));
}

std::vector<SaOutcome> PathWorkers::take_done() {
  uint64_t count;
  (void)!read(ready_fd_, &count, sizeof count);
  std::lock_guard lock(mutex_);
  return std::exchange(done_, {});
}

void PathWorkers::reconfigure(PathServiceOptions options) {
  std::lock_guard lock(mutex_);
  options_ = std::move(options);
  // A stream under way finishes its port's questions with the client it has; new questions
  // open the port again with the new settings.
  ports_.clear();
}

void PathWorkers::post(SaOutcome outcome) {
  {
    std::lock_guard lock(mutex_);
    done_.push_back(std::move(outcome));
  }
  uint64_t one = 1;
  (void)!write(ready_fd_, &one, sizeof one);
}

void PathWorkers::work() {
  for (;;) {
    std::shared_ptr<Port> port;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return quitting_ || !ready_.empty(); });
      if (quitting_) return;
      port = std::move(ready_.front());
      ready_.pop_front();
      port->queued = false;
      port->streaming = true;
    }
    stream(*port);
  }
}

// mutex_ held.
std::shared_ptr<PathWorkers::Port> PathWorkers::port_for(const SaJob& job) {
  auto key = std::make_pair(job.device, job.port);
  if (auto it = ports_.find(key); it != ports_.end()) return it->second;
  if (ports_.size() >= kMaxPorts)
    std::erase_if(ports_, [](const auto& p) {
      return !p.second->streaming && !p.second->queued && p.second->pending.empty() &&
             !p.second->client;
    });
  if (ports_.size() >= kMaxPorts) return nullptr;
  auto port = std::make_shared<Port>();
  port->device = job.device;
  port->port = job.port;
  ports_.emplace(key, port);
  return port;
}

// The port's next question for its stream, after answering those past their deadline; a
// ClassPortInfo question is put aside in `class_port_info` (answered between streams, since
// the client cannot read it while its agent carries the stream). nullopt: none now.
std::optional<SaJob> PathWorkers::next_of(Port& port, std::vector<SaJob>& class_port_info) {
  std::vector<SaJob> late;
  std::optional<SaJob> next;
  {
    std::lock_guard lock(mutex_);
    const Clock::time_point now = Clock::now();
    while (!quitting_ && !port.pending.empty()) {
      SaJob job = std::move(port.pending.front());
      port.pending.pop_front();
      if (job.deadline <= now)
        late.push_back(std::move(job));
      else if (job.op == Op::kClassPortInfo)
        class_port_info.push_back(std::move(job));
      else {
        next = std::move(job);
        break;
      }
    }
  }
  for (const SaJob& job : late)
    post(failed(
        job, make_error(ErrorCode::kTimeout, "the question waited past its deadline for the SA")));
  return next;
}

Result<sa::Client*> PathWorkers::open(Port& port) {
  if (port.client) return port.client.get();
  PathServiceOptions o;
  {
    std::lock_guard lock(mutex_);
    o = options_;
  }
  if (port.failure && Clock::now() - port.failed_at < o.reopen_after) return *port.failure;
  sa::ClientOptions co = o.sa;
  co.port = sa::UmadOptions{port.device, port.port};
  if (o.sa_lid_of)
    if (auto lid = o.sa_lid_of(port.device, port.port)) co.sa_lid = lid;
  Result<std::unique_ptr<sa::Transport>> transport = [&] {
    std::lock_guard lock(umad_open_mutex());
    return o.open_transport ? o.open_transport(co.port) : sa::open_umad_transport(co.port);
  }();
  if (!transport) {
    port.failure =
        make_error(transport.error().code, fmt::format("no SA port {} port {}: {}", port.device,
                                                       port.port, transport.error().message));
    port.failed_at = Clock::now();
    say(Priority::kError, port.failure->message);
    return *port.failure;
  }
  auto counting = std::make_unique<CountingTransport>(std::move(*transport), o.counters);
  port.transport = counting.get();
  port.client = std::make_unique<sa::Client>(std::move(counting), co);
  port.cache = std::make_shared<sa::PathCache>(o.cache);
  port.class_port_info_asked = false;
  port.failure.reset();
  say(Priority::kInfo,
      fmt::format("path service: SA client on {} port {} (LID {}), SA LID {}", port.device,
                  port.port, port.client->port().lid, port.client->sa_lid()));
  return port.client.get();
}

void PathWorkers::stream(Port& port) {
  for (;;) {
    std::optional<Clock::time_point> first_deadline;
    {
      std::lock_guard lock(mutex_);
      if (quitting_ || port.pending.empty()) {
        port.streaming = false;
        return;
      }
      first_deadline = port.pending.front().deadline;
    }
    auto opened = open(port);
    if (!opened) {
      std::deque<SaJob> jobs;
      {
        std::lock_guard lock(mutex_);
        jobs.swap(port.pending);
      }
      for (const SaJob& job : jobs) post(failed(job, opened.error()));
      continue;
    }
    sa::Client& client = **opened;
    bool transport_failed = false;
    if (!port.class_port_info_asked) {
      // Once per client, as sa::Client does before its first query: the SA's RespTimeValue
      // sets the attempt timeout of what follows.
      port.class_port_info_asked = true;
      client.set_deadline(first_deadline);
      auto cpi = client.class_port_info();
      client.set_deadline(std::nullopt);
      if (!cpi && cpi.error().code == ErrorCode::kTransport) transport_failed = true;
      cpi.ignore_error();
    }
    struct Asked {
      uint64_t flight = 0;
      std::optional<sa::PathCache::Key> key;  // PathRecord: its cache key
      uint64_t generation = 0;                // the SM generation when it was asked
    };
    std::vector<Asked> asked;
    std::vector<SaJob> class_port_info;
    // Streamed even after a failed port: each question then fails in its turn (no question is
    // left waiting for a port that fails at once, and no loop reopens it without taking any).
    client.execute_stream(
        [&]() -> std::optional<sa::SaRequest> {
          for (;;) {
            std::optional<SaJob> job = next_of(port, class_port_info);
            if (!job) return std::nullopt;
            Result<sa::SaRequest> request = [&]() -> Result<sa::SaRequest> {
              if (job->op == Op::kPathRecord) return sa::make_path_request(job->query);
              auto multipath = sa::multipath_query_from(job->query);
              if (!multipath) return multipath.error();
              return sa::make_multipath_request(*multipath);
            }();
            if (!request) {
              post(failed(*job, request.error()));
              continue;
            }
            Asked a{job->flight, std::nullopt, client.sm_generation()};
            if (job->op == Op::kPathRecord) {
              a.key = sa::PathCache::key_of(*request);
              if (auto hit = port.cache->lookup(*a.key, a.generation)) {
                SaOutcome out;
                out.flight = job->flight;
                out.paths = std::move(*hit);
                out.from_cache = true;
                post(std::move(out));
                continue;
              }
            }
            request->deadline = job->deadline;
            asked.push_back(std::move(a));
            return std::move(*request);
          }
        },
        [&](size_t i, Result<sa::SaMad> response) {
          if (!response && response.error().code == ErrorCode::kTransport) transport_failed = true;
          SaOutcome out;
          out.flight = asked[i].flight;
          out.paths = response ? sa::decode_path_response(*response)
                               : Result<std::vector<sa::PathRecord>>(response.error());
          if (out.paths && asked[i].key)
            port.cache->insert(*asked[i].key, *out.paths, asked[i].generation);
          post(std::move(out));
        },
        kIntakePoll);
    for (const SaJob& job : class_port_info) {
      SaOutcome out;
      out.flight = job.flight;
      if (transport_failed) {
        out.class_port_info = make_error(ErrorCode::kTransport, "the umad port failed");
      } else {
        const uint64_t sent_before = port.transport->sent();
        client.set_deadline(job.deadline);
        out.class_port_info = client.class_port_info();
        client.set_deadline(std::nullopt);
        if (!out.class_port_info && out.class_port_info.error().code == ErrorCode::kTransport)
          transport_failed = true;
        out.from_cache = out.class_port_info.ok() && port.transport->sent() == sent_before;
      }
      post(std::move(out));
    }
    if (transport_failed) {
      // The umad port failed (device gone, driver reloaded): it is opened again for the next
      // questions instead of failing every one of them from now on.
      say(Priority::kError, fmt::format("path service: the umad port {} port {} failed; "
                                        "reopening it for the next question",
                                        port.device, port.port));
      port.client.reset();
      port.transport = nullptr;
    }
  }
}

}  // namespace rdmaqos::kmod
