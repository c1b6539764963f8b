// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The path service's SA side (path_workers.h). Each port's clients send through a transport that
// counts the MADs it sends, in the counters and for the calling thread: a question answered
// while its worker thread sent nothing came from the path cache.
#include "path_workers.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/path_cache.h"
#include "umad_open.h"

namespace rdmaqos::kmod {

using Clock = std::chrono::steady_clock;
using sa::path_service::Op;

namespace {

// MADs sent by this thread; a Client sends on the thread that calls it.
thread_local uint64_t t_sent = 0;

// A port the service cannot open (a name no device has, a port down) is remembered for a
// while, but no more than this many ports are: a local user naming a new device in each
// question must not grow the table without bound.
constexpr size_t kMaxPorts = 256;

class CountingTransport final : public sa::Transport {
 public:
  CountingTransport(std::unique_ptr<sa::Transport> inner, std::shared_ptr<LsdCounters> counters)
      : inner_(std::move(inner)), counters_(std::move(counters)) {}
  Result<Ok> send(std::span<const uint8_t> mad, uint16_t dlid, uint8_t sl,
                  std::chrono::milliseconds response_timeout) override {
    ++t_sent;
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

 private:
  std::unique_ptr<sa::Transport> inner_;
  std::shared_ptr<LsdCounters> counters_;
};

}  // namespace

struct PathWorkers::Port {
  std::mutex mutex;  // held while the port is opened, so that one thread opens it
  std::shared_ptr<sa::SharedClient> client;
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
    jobs_.push_back(std::move(job));
  }
  queued_.notify_one();
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
  ports_.clear();
}

void PathWorkers::work() {
  for (;;) {
    SaJob job;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [&] { return quitting_ || !jobs_.empty(); });
      if (quitting_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    SaOutcome out = ask(job);
    {
      std::lock_guard lock(mutex_);
      done_.push_back(std::move(out));
    }
    uint64_t one = 1;
    (void)!write(ready_fd_, &one, sizeof one);
  }
}

SaOutcome PathWorkers::ask(const SaJob& job) {
  SaOutcome out;
  out.flight = job.flight;
  auto fail = [&](Error e) {
    if (job.op == Op::kClassPortInfo)
      out.class_port_info = std::move(e);
    else
      out.paths = std::move(e);
    return std::move(out);
  };
  if (Clock::now() >= job.deadline)
    return fail(make_error(ErrorCode::kTimeout,
                           "the question waited past its deadline for a "
                           "worker"));
  auto client = client_for(job.device, job.port);
  if (!client) return fail(client.error());
  const uint64_t sent_before = t_sent;
  const sa::Deadline deadline = job.deadline;
  std::optional<ErrorCode> error;
  switch (job.op) {
    case Op::kClassPortInfo:
      out.class_port_info = (*client)->class_port_info(deadline);
      if (!out.class_port_info) error = out.class_port_info.error().code;
      break;
    case Op::kPathRecord:
      out.paths = (*client)->path_records(job.query, deadline);
      if (!out.paths) error = out.paths.error().code;
      break;
    case Op::kMultiPathRecord:
      out.paths = (*client)->multipath_records(job.query, deadline);
      if (!out.paths) error = out.paths.error().code;
      break;
  }
  out.from_cache = !error && t_sent == sent_before;
  // A failed send or receive: the port (device gone, driver reloaded) is opened again for the
  // next question instead of failing every one from now on.
  if (error == ErrorCode::kTransport) port_failed(job.device, job.port, client->get());
  return out;
}

Result<std::shared_ptr<sa::SharedClient>> PathWorkers::client_for(const std::string& device,
                                                                  int port_num) {
  std::shared_ptr<Port> port;
  {
    std::lock_guard lock(mutex_);
    auto key = std::make_pair(device, port_num);
    auto it = ports_.find(key);
    if (it == ports_.end()) {
      if (ports_.size() >= kMaxPorts)
        std::erase_if(ports_, [](const auto& p) { return !p.second->client; });
      if (ports_.size() >= kMaxPorts)
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{} ports are open already; {} port {} is not", ports_.size(),
                                      device, port_num));
      it = ports_.emplace(key, std::make_shared<Port>()).first;
    }
    port = it->second;
  }
  std::lock_guard open_lock(port->mutex);
  if (port->client) return port->client;
  PathServiceOptions o;
  {
    std::lock_guard lock(mutex_);
    o = options_;
  }
  if (port->failure && Clock::now() - port->failed_at < o.reopen_after) return *port->failure;
  sa::ClientOptions co = o.sa;
  co.port = sa::UmadOptions{device, port_num};
  if (o.sa_lid_of)
    if (auto lid = o.sa_lid_of(device, port_num)) co.sa_lid = lid;
  auto cache = std::make_shared<sa::PathCache>(o.cache);
  auto open_one = [co, cache, open = o.open_transport,
                   counters = o.counters]() -> Result<std::unique_ptr<sa::Client>> {
    Result<std::unique_ptr<sa::Transport>> transport = [&] {
      std::lock_guard lock(umad_open_mutex());
      return open ? open(co.port) : sa::open_umad_transport(co.port);
    }();
    if (!transport) return transport.error();
    auto client = std::make_unique<sa::Client>(
        std::make_unique<CountingTransport>(std::move(*transport), counters), co);
    client->set_cache(cache);
    return client;
  };
  auto first = open_one();
  if (!first) {
    port->failure = make_error(first.error().code, fmt::format("no SA port {} port {}: {}", device,
                                                               port_num, first.error().message));
    port->failed_at = Clock::now();
    say(Priority::kError, port->failure->message);
    return *port->failure;
  }
  say(Priority::kInfo, fmt::format("path service: SA client on {} port {} (LID {}), SA LID {}",
                                   device, port_num, (*first)->port().lid, (*first)->sa_lid()));
  port->failure.reset();
  port->client = std::make_shared<sa::SharedClient>(
      std::move(*first), open_one,
      std::clamp<size_t>(o.agents_per_port, 1, std::max<size_t>(o.workers, 1)));
  return port->client;
}

void PathWorkers::port_failed(const std::string& device, int port_num,
                              const sa::SharedClient* client) {
  std::shared_ptr<Port> port;
  {
    std::lock_guard lock(mutex_);
    auto it = ports_.find(std::make_pair(device, port_num));
    if (it == ports_.end()) return;
    port = it->second;
  }
  std::lock_guard open_lock(port->mutex);
  if (port->client.get() != client) return;  // reopened (or reconfigured) meanwhile
  say(Priority::kError, fmt::format("path service: the umad port {} port {} failed; reopening it "
                                    "for the next question",
                                    device, port_num));
  port->client.reset();
}

}  // namespace rdmaqos::kmod
