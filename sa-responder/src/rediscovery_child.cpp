// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's re-discovery child (see rediscovery_child.h): started with fork and exec, its
// model in a memfd on its standard input, its output on a non-blocking pipe.
#include "rediscovery_child.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "daemon.h"
#include "rdma-qos/sa-responder/discovery_json.h"

namespace rdmaqos::sad {

std::optional<ChildDiscovery> spawn_discovery(const DiscoveryOptions& options,
                                              const std::string* previous) {
  std::vector<std::string> args = {"/proc/self/exe", "--dump-fabric", "--json"};
  if (!options.ca.empty()) args.insert(args.end(), {"--ca", options.ca});
  if (options.port != 0) args.insert(args.end(), {"--port", std::to_string(options.port)});
  args.insert(args.end(), {"--smp-window", std::to_string(options.smp_window)});
  int model_fd = -1;
  if (previous != nullptr) {
    model_fd = memfd_create("rdma-qos-sad-model", MFD_CLOEXEC);
    size_t at = 0;
    while (model_fd >= 0 && at < previous->size()) {
      ssize_t n = write(model_fd, previous->data() + at, previous->size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(model_fd);
        model_fd = -1;
        break;
      }
      at += static_cast<size_t>(n);
    }
    if (model_fd < 0 || lseek(model_fd, 0, SEEK_SET) != 0) {
      if (model_fd >= 0) close(model_fd);
      return std::nullopt;
    }
    args.insert(args.end(), {"--previous", "-"});
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    if (model_fd >= 0) close(model_fd);
    return std::nullopt;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    if (model_fd >= 0) close(model_fd);
    return std::nullopt;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    if (model_fd >= 0) dup2(model_fd, STDIN_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  if (model_fd >= 0) close(model_fd);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return ChildDiscovery{pid, fds[0], {}, std::chrono::steady_clock::now(), previous == nullptr};
}

std::optional<Discovery> child_result(ChildDiscovery& child, std::string* json) {
  close(child.fd);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  // The JSON line: umad2sim may print lines of its own.
  std::optional<Discovery> found;
  const bool exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const std::string_view out = child.output;
  for (size_t at = 0; at < out.size();) {
    size_t end = out.find('\n', at);
    if (end == std::string_view::npos) end = out.size();
    const std::string_view line = out.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("discovery: ")) {
      log("re-" + std::string(line));
    } else if (exited && !found && line.starts_with("{")) {
      found = discovery_from_json_text(line);
      if (!found) break;
      if (json != nullptr) *json = std::string(line);
    }
  }
  return found;
}

}  // namespace rdmaqos::sad
