// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine of rdma-qos-lsd. One thread owns the netlink socket and every deadline; one worker
// thread per port the kernel names (device and port of the request: multi-rail hosts have
// several, each with its own SM LID and SA) owns that port's SA client and streams queries
// through its window: a new request joins the window while others wait on the SA, and each
// answer goes back the moment it is in. A request
// whose answer is not back by its deadline gets F_ERR from the socket thread, so a slow or silent
// SA never holds up the kernel beyond the budget announced with SET_TIMEOUT. A path_use ALL
// request makes two queries (its path and the reverse one for the INBOUND record), both in the
// window at once; only the first decides between a reply and F_ERR.
#include "rdma-qos/kmod-shim/lsd.h"

#include <fmt/format.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <thread>
#include <utility>

#include "netlink_dump.h"
#include "rdma-qos/kmod-shim/ls_codec.h"
#include "rdma-qos/kmod-shim/netns.h"
#include "rdma-qos/kmod-shim/responders.h"
#include "rdma-qos/sa-client/gid.h"
#include "umad_open.h"

namespace rdmaqos::kmod {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
constexpr milliseconds kKernelTimeoutMax{200000};
constexpr milliseconds kKernelMargin{1000};
constexpr milliseconds kRefusedMargin{500};
}  // namespace

std::chrono::milliseconds answer_budget(const LsdOptions& o) {
  const int attempts = std::max(o.sa.retries, 0) + 1;
  const milliseconds attempt = o.sa.timeout.value_or(sa::kBootstrapTimeout);
  // Backoffs between attempts double from o.sa.backoff; 100 ms covers the rest of the way.
  const milliseconds budget =
      attempt * attempts + o.sa.backoff * (1 << std::min(attempts, 10)) + milliseconds(100);
  // The kernel caps the timeout it accepts at 200 s (IB_SA_LOCAL_SVC_TIMEOUT_MAX): the F_ERR
  // must still come before that.
  return std::min(budget, kKernelTimeoutMax - kKernelMargin);
}

std::chrono::milliseconds kernel_timeout(const LsdOptions& o) {
  return answer_budget(o) + kKernelMargin;
}

std::chrono::milliseconds refused_answer_budget(const LsdOptions& o) {
  return std::min(answer_budget(o), kKernelDefaultTimeout - kRefusedMargin);
}

namespace {

// A request's SA queries: the path it asks for, and for path_use ALL also the reverse path
// (the INBOUND record), both through the same window.
enum class Leg : uint8_t { kForward, kReverse };

struct Job {
  uint64_t id = 0;
  Leg leg = Leg::kForward;
  sa::PathQuery query;
  // The request's deadline: past it the socket thread has answered F_ERR, so the worker drops
  // the job instead of spending the SA window on it (a slow SA must not build a backlog).
  Clock::time_point deadline;
};

using PathAnswer = rdmaqos::Result<std::vector<sa::PathRecord>>;

struct Done {
  uint64_t id = 0;
  Leg leg = Leg::kForward;
  PathAnswer result;
  // An answer nobody collects (its request was answered at its deadline, or the daemon stops)
  // is dropped on purpose.
  ~Done() { result.ignore_error(); }
};

struct Pending {
  ResolveRequest request;
  Clock::time_point received;  // for the latency counter
  Clock::time_point deadline;
  bool wants_reverse = false;
  std::optional<PathAnswer> forward;
  std::optional<PathAnswer> reverse;

  // Once answered (or F_ERR'd at the deadline) a request's results have had their say: a
  // reverse path that failed after the forward one did is of no interest.
  void settle() const {
    if (forward) forward->ignore_error();
    if (reverse) reverse->ignore_error();
  }
};

// The umad port a request is answered through: the device and port the kernel named (the
// decoder rejects a request without a device name).
struct PortKey {
  std::string device;
  int port = 0;
  auto operator<=>(const PortKey&) const = default;
};

// One port's queue of SA queries and the worker thread that sends them.
struct PortWorker {
  PortKey key;
  std::deque<Job> jobs;
  std::condition_variable cv;
  std::thread thread;
};

std::string describe(const ResolveRequest& r) {
  std::string s = fmt::format("seq {} {}:{} {} -> {}", r.seq, r.device, r.port_num,
                              sa::format_gid(r.sgid.value_or(sa::Gid{})),
                              sa::format_gid(r.dgid.value_or(sa::Gid{})));
  if (r.service_id) s += fmt::format(" sid {:#x}", *r.service_id);
  if (r.qos_class) s += fmt::format(" qos-class {}", *r.qos_class);
  if (r.tclass) s += fmt::format(" tclass {}", *r.tclass);
  if (r.pkey) s += fmt::format(" pkey {:#06x}", *r.pkey);
  s += fmt::format(" use {}", static_cast<int>(r.path_use));
  return s;
}

}  // namespace

struct LocalServiceDaemon::Impl {
  LsdOptions options;
  LogSink log;
  // How long a request may wait for the SA before F_ERR: answer_budget, or less once the
  // kernel refused SET_TIMEOUT.
  milliseconds budget{0};
  uint32_t set_timeout_seq = 0;
  nl_sock* sock = nullptr;
  int wake_fd = -1;  // the worker has answers in `done`
  int stop_fd = -1;
  uint32_t next_seq = 1;
  uint64_t next_id = 1;
  std::map<uint64_t, Pending> pending;
  std::set<uint32_t> reported_responders;
  std::unique_ptr<NetlinkDump> dump;  // --dump-netlink

  std::mutex mutex;  // guards workers' queues, done and quitting
  std::map<PortKey, std::unique_ptr<PortWorker>> workers;
  std::vector<Done> done;
  bool quitting = false;

  ~Impl() {
    stop_workers();
    release_sockets();
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      quitting = true;
      for (auto& [key, w] : workers) w->cv.notify_all();
    }
    for (auto& [key, w] : workers)
      if (w->thread.joinable()) w->thread.join();
  }

  void release_sockets() {
    if (sock) nl_socket_free(sock);
    if (wake_fd >= 0) close(wake_fd);
    if (stop_fd >= 0) close(stop_fd);
  }

  // The port's worker, started on its first request (called with `mutex` held).
  PortWorker& worker_for(const PortKey& key) {
    auto& w = workers[key];
    if (!w) {
      w = std::make_unique<PortWorker>();
      w->key = key;
      w->thread = std::thread([this, p = w.get()] { worker_main(*p); });
    }
    return *w;
  }

  void say(Priority level, const std::string& message) {
    if (log) log(level, message);
  }

  void send(const std::vector<uint8_t>& bytes, const char* what) {
    int rc = nl_sendto(sock, const_cast<uint8_t*>(bytes.data()), bytes.size());
    if (rc < 0) say(Priority::kError, fmt::format("sending {}: {}", what, nl_geterror(rc)));
  }

  void answer_error(uint32_t seq, const std::string& why) {
    say(Priority::kWarning,
        fmt::format("seq {}: F_ERR (the kernel asks the SA itself): {}", seq, why));
    send(encode_error_reply(seq), "an F_ERR reply");
  }

  // F_ERR for a decoded request, counted with its reason and latency (before it is sent, so
  // whoever sees the answer sees it counted).
  void fail(const Pending& p, FailReason reason, const std::string& why) {
    if (LsdCounters* c = options.counters.get()) {
      c->failed(reason);
      c->latency(Clock::now() - p.received);
    }
    answer_error(p.request.seq, why);
  }

  rdmaqos::Result<std::unique_ptr<sa::Client>> open_client(const PortKey& key) {
    sa::ClientOptions o = options.sa;
    o.port = sa::UmadOptions{key.device, key.port};
    if (options.sa_lid_of)
      if (auto lid = options.sa_lid_of(key.device, key.port)) o.sa_lid = lid;
    // One port opened at a time (umad_open.h); opening is rare (start-up, after a failure).
    std::lock_guard<std::mutex> lock(umad_open_mutex());
    if (options.open_client) return options.open_client(o.port);
    return sa::Client::open(o);
  }

  void worker_main(PortWorker& w) {
    std::unique_ptr<sa::Client> client;
    Clock::time_point last_open{};
    // Why the port could not be opened, kept for every request answered until it opens.
    rdmaqos::Error open_error =
        rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, "not opened yet");
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        w.cv.wait(lock, [&] { return quitting || !w.jobs.empty(); });
        if (quitting) return;
      }
      if (!client && Clock::now() - last_open >= std::chrono::seconds(5)) {
        last_open = Clock::now();
        auto opened = open_client(w.key);
        if (opened) {
          client = std::move(*opened);
          say(Priority::kInfo,
              fmt::format("SA client on {} port {} (LID {}), SA LID {}", client->port().ca,
                          client->port().port, client->port().lid, client->sa_lid()));
        } else {
          open_error = opened.error();
          say(Priority::kError, "cannot open the umad port for SA queries: " + open_error.message);
        }
      }
      if (!client) {
        for (Job& j : take_all(w))
          post(Done{j.id, j.leg,
                    rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                                        "no SA port: " + open_error.message)});
        continue;
      }
      std::vector<std::pair<uint64_t, Leg>> ids;  // pull order -> job
      bool port_failed = false;
      client->execute_stream(
          [&]() -> std::optional<sa::SaRequest> {
            for (;;) {
              std::optional<Job> job = take_one(w);
              if (!job) return std::nullopt;
              auto request = sa::make_path_request(job->query);
              if (request) {
                ids.emplace_back(job->id, job->leg);
                // Past it the socket thread has answered F_ERR: the request stops taking a
                // place in the window (and sending retries) then, not after its attempts.
                request->deadline = job->deadline;
                return std::move(*request);
              }
              post(Done{job->id, job->leg, request.error()});
            }
          },
          [&](size_t i, rdmaqos::Result<sa::SaMad> response) {
            if (!response && response.error().code == rdmaqos::ErrorCode::kTransport)
              port_failed = true;
            post(Done{
                ids[i].first, ids[i].second,
                response ? sa::decode_path_response(*response) : PathAnswer(response.error())});
          },
          options.intake_poll);
      if (port_failed) {
        // The umad port failed (device gone, driver reloaded): open it again for the next
        // requests rather than failing every one of them from now on.
        say(Priority::kError, "the umad port failed; reopening it for the next request");
        client.reset();
        last_open = {};
      }
    }
  }

  std::optional<Job> take_one(PortWorker& w) {
    std::lock_guard<std::mutex> lock(mutex);
    const Clock::time_point now = Clock::now();
    while (!quitting && !w.jobs.empty()) {
      Job j = std::move(w.jobs.front());
      w.jobs.pop_front();
      if (j.deadline > now) return j;
    }
    return std::nullopt;
  }

  std::vector<Job> take_all(PortWorker& w) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<Job> all(std::make_move_iterator(w.jobs.begin()),
                         std::make_move_iterator(w.jobs.end()));
    w.jobs.clear();
    return all;
  }

  void post(Done d) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      done.push_back(std::move(d));
    }
    uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof one);
  }

  // The kernel's NLMSG_ERROR: the ACK SET_TIMEOUT asked for, or the refusal of a message.
  void handle_ack(std::span<const uint8_t> bytes) {
    auto ack = decode_ack(bytes);
    if (!ack) {
      say(Priority::kWarning, "undecodable NLMSG_ERROR from the kernel: " + ack.error().message);
      return;
    }
    if (ack->acked_type == kSetTimeoutType && ack->seq == set_timeout_seq) {
      if (ack->error == 0)
        say(Priority::kInfo, fmt::format("the kernel accepted SET_TIMEOUT: it waits {} ms for an "
                                         "answer",
                                         kernel_timeout(options).count()));
      else
        timeout_refused(-ack->error);
      return;
    }
    if (ack->error == 0) {
      say(Priority::kDebug,
          fmt::format("netlink ACK of seq {} type 0x{:04x}", ack->seq, ack->acked_type));
      return;
    }
    if (ack->acked_type == kResolveType)
      say(Priority::kWarning,
          fmt::format("the kernel refused the reply to request seq {}: {} (it asks "
                      "the SA itself after its timeout)",
                      ack->seq, std::strerror(-ack->error)));
    else
      say(Priority::kWarning, fmt::format("the kernel refused message type 0x{:04x} seq {}: {}",
                                          ack->acked_type, ack->seq, std::strerror(-ack->error)));
  }

  // The kernel kept its own timeout (2 s unless another responder set one) and drops answers
  // that come after it: stop waiting for the SA before then and send F_ERR while the kernel
  // still listens, so it falls back to its own SA query at once rather than at its timeout.
  void timeout_refused(int error) {
    const milliseconds old = budget;
    budget = refused_answer_budget(options);
    for (auto& [id, p] : pending) p.deadline -= old - budget;
    const char* why = error == EINVAL  ? " (the kernel takes it only from the initial network "
                                         "namespace)"
                      : error == EPERM ? " (it needs CAP_NET_ADMIN)"
                                       : "";
    if (budget == old) {
      say(Priority::kWarning,
          fmt::format("the kernel refused SET_TIMEOUT ({} ms): {}{}; it keeps its own timeout, "
                      "{} ms by default, which the SA budget of {} ms fits in",
                      kernel_timeout(options).count(), std::strerror(error), why,
                      kKernelDefaultTimeout.count(), budget.count()));
      return;
    }
    say(Priority::kWarning,
        fmt::format("the kernel refused SET_TIMEOUT ({} ms): {}{}; it keeps its own timeout, {} "
                    "ms by default, shorter than the {} ms the SA may take (sa_timeout_ms x "
                    "(sa_retries + 1) and backoffs): F_ERR now comes after {} ms, and the kernel "
                    "then asks the SA itself. Run rdma-qos-lsd in the initial network namespace "
                    "with CAP_NET_ADMIN, or make the SA budget fit in {} ms (e.g. sa_timeout_ms "
                    "400, sa_retries 2)",
                    kernel_timeout(options).count(), std::strerror(error), why,
                    kKernelDefaultTimeout.count(), old.count(), budget.count(), budget.count()));
  }

  void check_namespace() {
    NetnsCheck ns = check_initial_netns(options.self_netns, options.initial_netns);
    if (ns.state == NetnsState::kOther)
      say(Priority::kWarning,
          fmt::format("not in the initial network namespace ({}): the kernel sends path queries "
                      "only to listeners in the initial namespace, so none will come here; run "
                      "rdma-qos-lsd in the host's network namespace",
                      ns.detail));
    else if (ns.state == NetnsState::kUnknown)
      say(Priority::kDebug,
          "cannot tell whether this is the initial network namespace: " + ns.detail);
  }

  void handle_message(std::span<const uint8_t> bytes) {
    auto header = peek_header(bytes);
    if (!header) return;
    if (header->type == NLMSG_ERROR) {
      handle_ack(bytes);
      return;
    }
    if (header->type == NLMSG_NOOP || header->type == NLMSG_DONE) {
      say(Priority::kDebug, fmt::format("netlink control message type {}", header->type));
      return;
    }
    if (header->type != kResolveType || !(header->flags & NLM_F_REQUEST)) {
      say(Priority::kDebug, fmt::format("ignored message type 0x{:04x} flags 0x{:04x} seq {}",
                                        header->type, header->flags, header->seq));
      return;
    }
    auto request = decode_resolve_request(bytes);
    LsdCounters* counters = options.counters.get();
    if (!request) {
      if (counters) {
        counters->request(std::nullopt);
        counters->failed(FailReason::kMalformed);
      }
      answer_error(header->seq, "bad request: " + request.error().message);
      return;
    }
    if (counters) counters->request(request->path_use);
    say(Priority::kDebug, "request " + describe(*request));
    uint64_t id = next_id++;
    const Clock::time_point deadline = Clock::now() + budget;
    Job forward{id, Leg::kForward, to_path_query(*request), deadline};
    std::optional<sa::PathQuery> reverse = to_reverse_path_query(*request);
    PortKey key{request->device, request->port_num};
    Pending p;
    p.request = std::move(*request);
    p.received = Clock::now();
    p.deadline = deadline;
    p.wants_reverse = reverse.has_value();
    pending.emplace(id, std::move(p));
    {
      std::lock_guard<std::mutex> lock(mutex);
      PortWorker& w = worker_for(key);
      w.jobs.push_back(std::move(forward));
      if (reverse) w.jobs.push_back(Job{id, Leg::kReverse, std::move(*reverse), deadline});
      w.cv.notify_one();
    }
  }

  // Reads every datagram queued on the socket.
  bool drain_socket() {
    for (;;) {
      sockaddr_nl from{};
      unsigned char* buf = nullptr;
      int n = nl_recv(sock, &from, &buf, nullptr);
      if (n == -NLE_AGAIN || n == 0) return true;
      if (n < 0) {
        free(buf);
        if (n == -NLE_NOMEM || n == -NLE_INTR) {
          // ENOBUFS: the kernel dropped requests; it times them out and asks the SA itself.
          say(Priority::kWarning, fmt::format("netlink receive: {}", nl_geterror(n)));
          continue;
        }
        say(Priority::kError, fmt::format("netlink receive: {}", nl_geterror(n)));
        return false;
      }
      std::unique_ptr<unsigned char, void (*)(void*)> owned(buf, free);
      if (from.nl_pid != options.kernel_port) {
        say(Priority::kDebug, fmt::format("ignored {} bytes from netlink port {}", n, from.nl_pid));
        continue;
      }
      if (dump)
        if (auto written = dump->write({buf, static_cast<size_t>(n)}); !written)
          say(Priority::kWarning, written.error().message);
      // A datagram may carry several messages.
      std::span<const uint8_t> rest(buf, static_cast<size_t>(n));
      while (auto h = peek_header(rest)) {
        size_t len = NLMSG_ALIGN(h->length);
        if (h->length < NLMSG_HDRLEN || h->length > rest.size()) {
          // Unusable framing: answer the one request it names, drop the rest.
          handle_message(rest);
          break;
        }
        handle_message(rest.first(h->length));
        if (len >= rest.size()) break;
        rest = rest.subspan(len);
      }
    }
  }

  void collect_answers() {
    uint64_t count;
    (void)!read(wake_fd, &count, sizeof count);
    std::vector<Done> finished;
    {
      std::lock_guard<std::mutex> lock(mutex);
      finished.swap(done);
    }
    for (Done& d : finished) {
      auto it = pending.find(d.id);
      if (it == pending.end()) {  // already answered (F_ERR at its deadline, or partly)
        d.result.ignore_error();
        continue;
      }
      Pending& p = it->second;
      (d.leg == Leg::kForward ? p.forward : p.reverse) = std::move(d.result);
      if (try_answer(p, false)) {
        p.settle();
        pending.erase(it);
      }
    }
  }

  // Answers `p` when its answer is complete, or at its deadline (`final`) with what is in.
  // Returns whether it answered. The forward path decides between a reply and F_ERR; a reverse
  // query that failed or is still out only leaves the INBOUND record out of a good answer.
  bool try_answer(const Pending& p, bool final) {
    const ResolveRequest& req = p.request;
    if (!p.forward) {
      if (!final) return false;
      fail(p, FailReason::kTimeout, fmt::format("no SA answer within {} ms", budget.count()));
      return true;
    }
    const PathAnswer& forward = *p.forward;
    if (!forward) {
      fail(p, FailReason::kSaError, "SA: " + forward.error().message);
      return true;
    }
    if (forward->empty()) {
      fail(p, FailReason::kNoPath, "SA returned no path");
      return true;
    }
    if (p.wants_reverse && !p.reverse && !final) return false;
    std::span<const sa::PathRecord> reverse;
    if (p.wants_reverse) {
      if (!p.reverse)
        say(Priority::kWarning,
            fmt::format("seq {}: no SA answer for the reverse path within {} ms; answering "
                        "without the INBOUND record",
                        req.seq, budget.count()));
      else if (!*p.reverse)
        say(Priority::kWarning, fmt::format("seq {}: reverse path: {}; answering without the "
                                            "INBOUND record",
                                            req.seq, p.reverse->error().message));
      else if ((*p.reverse)->empty())
        say(Priority::kWarning, fmt::format("seq {}: the SA returned no reverse path; answering "
                                            "without the INBOUND record",
                                            req.seq));
      else
        reverse = **p.reverse;
    }
    auto paths = reply_paths(req, *forward, reverse);
    auto reply = encode_resolve_reply(req.seq, paths);
    if (!reply) {
      fail(p, FailReason::kUnencodable, "SA path cannot be encoded: " + reply.error().message);
      return true;
    }
    const auto& f = paths[0].record;
    std::string line = fmt::format("{}: sl {} qos-class {} mtu {} rate {} lids {}->{}",
                                   describe(req), f.sl, f.qos_class, f.mtu, f.rate, f.slid, f.dlid);
    if (!reverse.empty())
      line += fmt::format(", inbound sl {} lids {}->{}", paths.back().record.sl,
                          paths.back().record.slid, paths.back().record.dlid);
    say(Priority::kInfo, line + fmt::format(" ({} record(s))", paths.size()));
    if (LsdCounters* c = options.counters.get()) {
      c->answered(f.sl);
      c->latency(Clock::now() - p.received);
    }
    send(*reply, "a path reply");
    return true;
  }

  void expire(Clock::time_point now) {
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->second.deadline <= now) {
        try_answer(it->second, true);
        it->second.settle();
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }

  void check_responders() {
    std::ifstream in("/proc/net/netlink");
    std::stringstream text;
    text << in.rdbuf();
    auto others = other_group_members(parse_proc_net_netlink(text.str()), options.netlink_family,
                                      kGroupLs, nl_socket_get_local_port(sock));
    std::set<uint32_t> now;
    for (const auto& s : others) {
      now.insert(s.port_id);
      if (reported_responders.count(s.port_id)) continue;
      say(Priority::kWarning,
          fmt::format("another responder listens on the kernel's path-query group: netlink port "
                      "{}, {}; the kernel takes the first answer, so requests may get its answer "
                      "instead of the policy's (ibacm: systemctl disable --now ibacm.socket "
                      "ibacm.service)",
                      s.port_id, socket_owner(s.inode)));
    }
    for (uint32_t port : reported_responders)
      if (!now.count(port))
        say(Priority::kInfo, fmt::format("the responder at netlink port {} has gone", port));
    reported_responders = std::move(now);
  }
};

LocalServiceDaemon::LocalServiceDaemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalServiceDaemon::~LocalServiceDaemon() = default;

rdmaqos::Result<std::unique_ptr<LocalServiceDaemon>> LocalServiceDaemon::create(LsdOptions options,
                                                                                LogSink log) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->log = std::move(log);
  impl->budget = answer_budget(impl->options);
  if (!impl->options.netlink_dump_dir.empty())
    impl->dump = std::make_unique<NetlinkDump>(impl->options.netlink_dump_dir);
  auto fail = [](std::string what) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, std::move(what));
  };
  impl->sock = nl_socket_alloc();
  if (!impl->sock) return fail("nl_socket_alloc failed");
  nl_socket_disable_seq_check(impl->sock);
  nl_socket_disable_auto_ack(impl->sock);
  const int family = impl->options.netlink_family;
  int rc;
  if (impl->options.inherited_fd >= 0) {
    rc = nl_socket_set_fd(impl->sock, family, impl->options.inherited_fd);
    if (rc < 0)
      return fail(fmt::format("adopting the netlink socket passed as fd {}: {}",
                              impl->options.inherited_fd, nl_geterror(rc)));
  } else {
    rc = nl_connect(impl->sock, family);
    if (rc < 0) return fail(fmt::format("netlink family {}: {}", family, nl_geterror(rc)));
  }
  // Joining needs CAP_NET_ADMIN on NETLINK_RDMA; a socket from systemd has joined already.
  rc = nl_socket_add_membership(impl->sock, static_cast<int>(kGroupLs));
  if (rc < 0)
    return fail(
        fmt::format("joining netlink group RDMA_NL_GROUP_LS ({}): {} (needs CAP_NET_ADMIN "
                    "in the initial network namespace)",
                    kGroupLs, nl_geterror(rc)));
  nl_socket_set_peer_port(impl->sock, impl->options.kernel_port);
  nl_socket_set_buffer_size(impl->sock, 4 << 20, 1 << 20);
  rc = nl_socket_set_nonblocking(impl->sock);
  if (rc < 0) return fail(fmt::format("netlink socket: {}", nl_geterror(rc)));
  impl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->wake_fd < 0 || impl->stop_fd < 0) return fail(std::strerror(errno));
  return std::unique_ptr<LocalServiceDaemon>(new LocalServiceDaemon(std::move(impl)));
}

uint32_t LocalServiceDaemon::local_port() const {
  return nl_socket_get_local_port(impl_->sock);
}

void LocalServiceDaemon::stop() {
  uint64_t one = 1;
  (void)!write(impl_->stop_fd, &one, sizeof one);
}

int LocalServiceDaemon::run() {
  Impl& d = *impl_;
  const milliseconds kt = kernel_timeout(d.options);
  d.set_timeout_seq = d.next_seq++;
  d.send(encode_set_timeout(d.set_timeout_seq, static_cast<uint32_t>(kt.count())), "SET_TIMEOUT");
  d.say(
      Priority::kInfo,
      fmt::format("listening on netlink family {} group {} as port {}; asking the kernel for a "
                  "timeout of {} ms, F_ERR after {} ms without an SA answer",
                  d.options.netlink_family, kGroupLs, local_port(), kt.count(), d.budget.count()));
  if (!d.options.sa.port.ca.empty() || d.options.sa.port.port != 0)
    d.say(Priority::kWarning,
          fmt::format("the umad port given ({} port {}) is not used: each kernel request is "
                      "answered through the device and port it names",
                      d.options.sa.port.ca, d.options.sa.port.port));
  d.check_namespace();
  d.check_responders();
  auto next_check = Clock::now() + d.options.responder_check;
  int status = 0;
  for (;;) {
    auto now = Clock::now();
    auto wake = next_check;
    for (const auto& [id, p] : d.pending) wake = std::min(wake, p.deadline);
    int timeout =
        wake <= now ? 0 : static_cast<int>(std::chrono::ceil<milliseconds>(wake - now).count());
    pollfd fds[3] = {
        {nl_socket_get_fd(d.sock), POLLIN, 0}, {d.wake_fd, POLLIN, 0}, {d.stop_fd, POLLIN, 0}};
    int n = poll(fds, 3, timeout);
    if (n < 0 && errno != EINTR) {
      d.say(Priority::kError, fmt::format("poll: {}", std::strerror(errno)));
      status = 1;
      break;
    }
    if (n > 0 && (fds[2].revents & POLLIN)) break;
    if (n > 0 && (fds[1].revents & POLLIN)) d.collect_answers();
    if (n > 0 && (fds[0].revents & (POLLIN | POLLERR))) {
      if (!d.drain_socket()) {
        status = 1;
        break;
      }
    }
    now = Clock::now();
    d.expire(now);
    if (now >= next_check) {
      d.check_responders();
      next_check = now + d.options.responder_check;
    }
  }
  // Whatever is still waiting gets F_ERR now rather than the kernel's timeout.
  for (const auto& [id, p] : d.pending) {
    d.fail(p, FailReason::kShutdown, "shutting down");
    p.settle();
  }
  d.pending.clear();
  d.stop_workers();
  return status;
}

}  // namespace rdmaqos::kmod
