// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's control socket thread (see lsd_control.h).
#include "lsd_control.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <vector>

#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::kmod {

rdmaqos::Result<std::unique_ptr<LsdControl>> LsdControl::start(
    const std::string& path, std::optional<gid_t> group,
    std::shared_ptr<const LsdCounters> counters) {
  auto server = sad::ControlServer::open(path);
  if (!server) return server.error();
  if (group) {
    if (auto shared = (*server)->share_with_group(*group); !shared) return shared.error();
  }
  std::unique_ptr<LsdControl> control(new LsdControl());
  control->server_ = std::move(*server);
  control->counters_ = std::move(counters);
  control->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (control->stop_fd_ < 0)
    return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                               fmt::format("eventfd: {}", std::strerror(errno)));
  // Signals (SIGHUP, SIGTERM) stay with the main thread, which owns reload and stop.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  control->thread_ = std::thread([c = control.get()] { c->serve(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return control;
}

LsdControl::~LsdControl() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (stop_fd_ >= 0) close(stop_fd_);
}

void LsdControl::serve() {
  for (;;) {
    std::vector<pollfd> fds = {{stop_fd_, POLLIN, 0}};
    server_->add_poll_fds(fds);
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents & POLLIN) return;
    for (const auto& request : server_->process(std::span<const pollfd>(fds).subspan(1))) {
      const std::string command = request.body["command"].get<std::string>();
      if (command == "stats") {
        server_->reply(request.connection, {{"ok", true}, {"stats", counters_->snapshot()}});
      } else {
        server_->reply(request.connection,
                       {{"ok", false},
                        {"message", fmt::format("rdma-qos-lsd does not know '{}': it answers "
                                                "stats only (reload: systemctl reload "
                                                "rdma-qos-lsd, or SIGHUP)",
                                                command)}});
      }
    }
  }
}

}  // namespace rdmaqos::kmod
