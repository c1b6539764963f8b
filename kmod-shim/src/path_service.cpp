// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The node path service's loop (path_service.h). One thread owns the listening socket, every
// connection and every deadline; it reads questions, joins a question to an identical one in
// flight (a flight: same port, op and encoded query) or hands a new one to the workers, and
// sends each asker its answer the moment the flight lands, or a timeout at the asker's own
// deadline. It never waits: answers go out with MSG_DONTWAIT, and a connection that does not
// take its answer is closed rather than waited for.
#include "rdma-qos/kmod-shim/path_service.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "path_workers.h"
#include "rdma-qos/sa-client/path_service_wire.h"

namespace rdmaqos::kmod {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace wire = sa::path_service;
using wire::Op;

std::chrono::milliseconds path_service_budget(const PathServiceOptions& options) {
  if (options.budget.count() > 0) return options.budget;
  LsdOptions lsd;
  lsd.sa = options.sa;
  return answer_budget(lsd);
}

namespace {

// Questions read from one connection before the loop looks at the others: one busy asker must
// not starve the rest.
constexpr int kReadsPerTurn = 32;

// The identity of an SA question: two askers with equal keys get the same answer.
struct FlightKey {
  std::string device;
  int port = 0;
  Op op = Op::kPathRecord;
  std::vector<uint8_t> query;  // sa::PathCache::key_of; empty for ClassPortInfo
  uint64_t connection = 0;     // the asker's, when askers do not share (else 0)
  auto operator<=>(const FlightKey&) const = default;
};

struct Asker {
  uint64_t connection = 0;
  uint32_t question = 0;
  Clock::time_point deadline;
};

struct Flight {
  FlightKey key;
  Op op = Op::kPathRecord;
  std::vector<Asker> askers;  // those not answered yet (a deadline passed answers one)
};

}  // namespace

// Everything here belongs to the loop thread, except `workers` (its own locks) and `stop_fd`.
struct PathService::Impl {
  int listen_fd = -1;
  int stop_fd = -1;
  LogSink log;
  std::shared_ptr<LsdCounters> counters;
  size_t max_connections = 1024;
  bool shared = true;
  std::atomic<int64_t> budget_ms{0};
  std::unique_ptr<PathWorkers> workers;

  std::map<uint64_t, int> connections;  // id -> fd; ids are never reused, fds are
  uint64_t next_connection = 1;
  std::map<uint64_t, Flight> flights;
  std::map<FlightKey, uint64_t> flight_of;
  uint64_t next_flight = 1;
  Clock::time_point last_refusal_log{};
  uint64_t refusals_unlogged = 0;

  ~Impl() {
    for (auto& [id, fd] : connections) close(fd);
    if (stop_fd >= 0) close(stop_fd);
  }

  void say(Priority level, const std::string& message) const {
    if (log) log(level, message);
  }

  void accept_all() {
    for (;;) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          say(Priority::kWarning, fmt::format("path service: accept: {}", std::strerror(errno)));
        return;
      }
      const bool room = connections.size() < max_connections;
      if (counters) counters->path_connection(room);
      if (room) {
        connections.emplace(next_connection++, fd);
        continue;
      }
      close(fd);
      // One line a second at most: a local program opening connections in a loop must not
      // flood the journal.
      ++refusals_unlogged;
      if (Clock::now() - last_refusal_log >= std::chrono::seconds(1)) {
        say(Priority::kWarning,
            fmt::format("path service: {} connection(s) closed at once: {} are open, the most "
                        "it serves (the askers fall back to their own SA queries)",
                        refusals_unlogged, max_connections));
        refusals_unlogged = 0;
        last_refusal_log = Clock::now();
      }
    }
  }

  void drop(uint64_t id, const char* why) {
    auto it = connections.find(id);
    if (it == connections.end()) return;
    if (why) say(Priority::kWarning, fmt::format("path service: connection closed: {}", why));
    close(it->second);
    connections.erase(it);
    if (counters) counters->path_connection_closed();
  }

  // Sends one answer; a connection whose buffer is full is closed (never waited for).
  void send_answer(uint64_t id, const wire::Answer& answer) {
    std::optional<ErrorCode> failed;
    if (answer.op == Op::kClassPortInfo ? !answer.class_port_info.ok() : !answer.paths.ok())
      failed =
          (answer.op == Op::kClassPortInfo ? answer.class_port_info.error() : answer.paths.error())
              .code;
    auto it = connections.find(id);
    if (it == connections.end()) return;  // the asker left
    auto bytes = wire::encode_answer(answer);
    if (!bytes) {
      say(Priority::kError, "path service: an answer cannot be encoded: " + bytes.error().message);
      drop(id, nullptr);
      return;
    }
    if (counters) counters->path_answer(failed);
    ssize_t n = ::send(it->second, bytes->data(), bytes->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes->size())) return;
    const int e = errno;
    if (n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS))
      drop(id, "the asker does not read its answers");
    else
      drop(id, nullptr);  // it hung up
  }

  void answer_error(uint64_t id, Op op, uint32_t question, Error error) {
    wire::Answer a;
    a.op = op;
    a.id = question;
    if (op == Op::kClassPortInfo)
      a.class_port_info = std::move(error);
    else
      a.paths = std::move(error);
    send_answer(id, a);
  }

  // Reads what one connection has sent; false once it is closed.
  bool read_questions(uint64_t id, int fd) {
    std::array<uint8_t, wire::kQuestionSize + 1> buffer;
    for (int turn = 0; turn < kReadsPerTurn; ++turn) {
      ssize_t n = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n <= 0) {
        drop(id, nullptr);
        return false;
      }
      const size_t size = std::min(static_cast<size_t>(n), buffer.size());
      if (!question(id, std::span<const uint8_t>(buffer.data(), size), static_cast<size_t>(n)))
        return false;
    }
    return true;
  }

  // One message from a connection; false when the connection was closed for it.
  bool question(uint64_t id, std::span<const uint8_t> bytes, size_t sent_size) {
    auto q = sent_size == wire::kQuestionSize
                 ? wire::decode_question(bytes)
                 : Result<wire::Question>(make_error(
                       ErrorCode::kMalformed, fmt::format("a question of {} bytes (a question "
                                                          "has {})",
                                                          sent_size, wire::kQuestionSize)));
    if (!q) {
      if (counters) counters->path_question(std::nullopt);
      // The answer needs the question's op and id: with a good magic and a known op they can be
      // echoed; anything else is no question at all, and its sender is not talking our protocol.
      const bool echo = bytes.size() >= 12 &&
                        std::equal(wire::kMagic.begin(), wire::kMagic.end(), bytes.begin()) &&
                        bytes[4] >= static_cast<uint8_t>(Op::kClassPortInfo) &&
                        bytes[4] <= static_cast<uint8_t>(Op::kMultiPathRecord);
      if (!echo) {
        say(Priority::kWarning, "path service: " + q.error().message + "; closing the connection");
        drop(id, nullptr);
        return false;
      }
      const uint32_t qid = static_cast<uint32_t>(bytes[8]) << 24 |
                           static_cast<uint32_t>(bytes[9]) << 16 |
                           static_cast<uint32_t>(bytes[10]) << 8 | bytes[11];
      answer_error(id, static_cast<Op>(bytes[4]), qid, q.error());
      return connections.count(id) != 0;
    }
    if (counters) counters->path_question(q->op);
    const milliseconds own(budget_ms.load(std::memory_order_relaxed));
    const milliseconds budget = q->budget_ms > 0 ? std::min(own, milliseconds(q->budget_ms)) : own;
    const Clock::time_point now = Clock::now();
    FlightKey key{q->device, q->port, q->op, {}, shared ? 0 : id};
    if (q->op != Op::kClassPortInfo) {
      auto k = sa::PathCache::key_of(q->query);
      if (!k) {
        answer_error(id, q->op, q->id,
                     make_error(ErrorCode::kInvalidArgument, "the query cannot be encoded"));
        return connections.count(id) != 0;
      }
      key.query.assign(k->begin(), k->end());
    }
    Asker asker{id, q->id, now + budget};
    if (auto it = flight_of.find(key); it != flight_of.end()) {
      flights[it->second].askers.push_back(asker);
      if (counters) counters->path_joined();
      return true;
    }
    const uint64_t flight = next_flight++;
    flight_of.emplace(key, flight);
    flights.emplace(flight, Flight{key, q->op, {asker}});
    // The SA is given the service's whole budget, whatever this asker's: the answer is
    // cached for the next askers even when this one stopped waiting.
    workers->submit(SaJob{flight, q->device, q->port, q->op, q->query, now + own});
    return true;
  }

  void land(SaOutcome& outcome) {
    auto it = flights.find(outcome.flight);
    if (it == flights.end()) {
      outcome.paths.ignore_error();
      outcome.class_port_info.ignore_error();
      return;
    }
    Flight flight = std::move(it->second);
    flights.erase(it);
    flight_of.erase(flight.key);
    if (outcome.from_cache && counters) counters->path_cache_hit();
    wire::Answer a;
    a.op = flight.op;
    a.paths = std::move(outcome.paths);
    a.class_port_info = std::move(outcome.class_port_info);
    for (const Asker& asker : flight.askers) {
      a.id = asker.question;
      send_answer(asker.connection, a);
    }
    a.paths.ignore_error();
    a.class_port_info.ignore_error();
  }

  // Answers every asker whose deadline passed; returns the next deadline.
  Clock::time_point expire(Clock::time_point now, Clock::time_point next) {
    for (auto& [fid, flight] : flights) {
      auto& askers = flight.askers;
      std::vector<Asker> late;
      std::erase_if(askers, [&](const Asker& a) {
        if (a.deadline > now) {
          next = std::min(next, a.deadline);
          return false;
        }
        late.push_back(a);
        return true;
      });
      for (const Asker& a : late)
        answer_error(a.connection, flight.op, a.question,
                     make_error(ErrorCode::kTimeout,
                                "node path service: no SA answer within the question's budget"));
    }
    return next;
  }
};

PathService::PathService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PathService::~PathService() = default;

Result<std::unique_ptr<PathService>> PathService::create(int listen_fd, PathServiceOptions options,
                                                         LogSink log) {
  auto impl = std::make_unique<Impl>();
  impl->listen_fd = listen_fd;
  impl->log = log;
  impl->counters = options.counters;
  impl->max_connections = std::max<size_t>(options.max_connections, 1);
  impl->shared = options.shared;
  if (!options.shared) options.cache.ttl = std::chrono::milliseconds(0);
  impl->budget_ms = path_service_budget(options).count();
  int type = 0;
  socklen_t len = sizeof type;
  if (getsockopt(listen_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("path service: fd {} is not a SOCK_SEQPACKET socket", listen_fd));
  const int flags = fcntl(listen_fd, F_GETFL);
  if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return make_error(ErrorCode::kTransport,
                      fmt::format("path service: fd {}: {}", listen_fd, std::strerror(errno)));
  impl->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->stop_fd < 0)
    return make_error(ErrorCode::kTransport, fmt::format("eventfd: {}", std::strerror(errno)));
  impl->workers = std::make_unique<PathWorkers>(std::move(options), std::move(log));
  return std::unique_ptr<PathService>(new PathService(std::move(impl)));
}

void PathService::stop() {
  uint64_t one = 1;
  (void)!write(impl_->stop_fd, &one, sizeof one);
}

void PathService::reconfigure(PathServiceOptions options) {
  impl_->budget_ms = path_service_budget(options).count();
  impl_->workers->reconfigure(std::move(options));
}

int PathService::run() {
  Impl& s = *impl_;
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  for (;;) {
    const Clock::time_point now = Clock::now();
    const Clock::time_point next = s.expire(now, now + std::chrono::hours(1));
    const int timeout = static_cast<int>(std::chrono::ceil<milliseconds>(next - now).count());
    fds.assign(
        {{s.listen_fd, POLLIN, 0}, {s.workers->ready_fd(), POLLIN, 0}, {s.stop_fd, POLLIN, 0}});
    ids.clear();
    for (const auto& [id, fd] : s.connections) {
      fds.push_back({fd, POLLIN, 0});
      ids.push_back(id);
    }
    int n = poll(fds.data(), fds.size(), std::max(timeout, 0));
    if (n < 0 && errno != EINTR) {
      s.say(Priority::kError, fmt::format("path service: poll: {}", std::strerror(errno)));
      return 1;
    }
    if (n <= 0) continue;
    if (fds[2].revents & POLLIN) break;
    if (fds[1].revents & POLLIN)
      for (SaOutcome& o : s.workers->take_done()) s.land(o);
    for (size_t i = 3; i < fds.size(); ++i) {
      if (!s.connections.count(ids[i - 3])) continue;  // closed while answering another
      if (fds[i].revents & POLLIN)
        s.read_questions(ids[i - 3], fds[i].fd);
      else if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL))
        s.drop(ids[i - 3], nullptr);
    }
    if (fds[0].revents & POLLIN) s.accept_all();
    if (fds[0].revents & (POLLERR | POLLNVAL)) {
      s.say(Priority::kError, "path service: the listening socket failed");
      return 1;
    }
  }
  return 0;
}

}  // namespace rdmaqos::kmod
