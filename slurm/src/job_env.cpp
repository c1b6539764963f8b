// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The job's environment from `rdma-qos run-env`: the decision stays the CLI's (one place decides
// what the stacks get), the plugin only runs it, bounded, and merges its answer with what the
// user set.
#include "rdma-qos/slurm/job_env.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

namespace rdmaqos::slurm {
namespace {

using nlohmann::json;
constexpr size_t kMaxOutput = 1 << 20;

std::string text_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

const char* link_name(LinkChoice l) {
  switch (l) {
    case LinkChoice::kAuto: return "auto";
    case LinkChoice::kRoce: return "roce";
    case LinkChoice::kIb: return "ib";
  }
  return "auto";
}

// `a` failed: what it decided goes, its warnings stay.
RunEnvAnswer failure(RunEnvAnswer a, ErrorCode code, std::string message) {
  a.values.clear();
  a.because.clear();
  a.error = make_error(code, std::move(message));
  return a;
}

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
};

}  // namespace

RunEnvAnswer parse_run_env_json(std::string_view text) {
  RunEnvAnswer a;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return failure(std::move(a), ErrorCode::kMalformed, "rdma-qos run-env printed no JSON object");
  if (auto e = j.find("error"); e != j.end())
    return failure(std::move(a), ErrorCode::kTransport,
                   e->is_string() ? e->get<std::string>() : "rdma-qos run-env failed");
  a.because = text_field(j, "because");
  if (auto w = j.find("warnings"); w != j.end() && w->is_array())
    for (const json& line : *w)
      if (line.is_string()) a.warnings.push_back(line.get<std::string>());
  auto vars = j.find("variables");
  if (vars == j.end() || !vars->is_array())
    return failure(std::move(a), ErrorCode::kMalformed,
                   "rdma-qos run-env's JSON has no 'variables' list");
  for (const json& v : *vars) {
    if (!v.is_object())
      return failure(std::move(a), ErrorCode::kMalformed,
                     "rdma-qos run-env's 'variables' holds a non-object");
    if (text_field(v, "action") != "set") continue;
    auto value = v.find("value");
    std::string name = text_field(v, "name");
    if (name.empty() || value == v.end() || !value->is_number_unsigned() ||
        value->get<uint64_t>() > 255)
      return failure(
          std::move(a), ErrorCode::kMalformed,
          "rdma-qos run-env's 'variables' holds a set entry without name or value 0..255");
    a.values.push_back({name, std::to_string(value->get<uint64_t>()), text_field(v, "why")});
  }
  return a;
}

RunEnvAnswer run_run_env(const SiteRules& rules, uint16_t qos_class) {
  std::vector<std::string> args = {rules.rdma_qos, "run-env",
                                   "--json",       "--override",
                                   "--class",      std::to_string(qos_class),
                                   "--link",       link_name(rules.link)};
  if (!rules.policy_file.empty()) {
    args.push_back("--policy");
    args.push_back(rules.policy_file);
  }
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  if (!rules.config_file.empty()) env.push_back("RDMA_QOS_CONFIG=" + rules.config_file);
  std::vector<char*> argv, envp;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);

  Pipe out;
  if (pipe2(out.fd, O_CLOEXEC) != 0)
    return failure({}, ErrorCode::kTransport, fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return failure({}, rc == ENOENT ? ErrorCode::kNotFound : ErrorCode::kTransport,
                   fmt::format("cannot run {}: {}", rules.rdma_qos, std::strerror(rc)));
  close(out.fd[1]);
  out.fd[1] = -1;

  std::string text;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(rules.timeout_seconds);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out.fd[0], POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      timed_out = n == 0;
      break;
    }
    char buf[4096];
    const ssize_t got = read(out.fd[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (text.size() < kMaxOutput) text.append(buf, static_cast<size_t>(got));
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return failure({}, ErrorCode::kTimeout,
                   fmt::format("{} run-env gave no answer within {} s (timeout=)", rules.rdma_qos,
                               rules.timeout_seconds));
  RunEnvAnswer a = parse_run_env_json(text);
  if (!a.error && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    return failure(std::move(a), ErrorCode::kTransport,
                   fmt::format("{} run-env exited with status {}", rules.rdma_qos,
                               WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  return a;
}

std::map<std::string, std::string, std::less<>> parse_marker(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos && eq > 0)
      out.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    start = comma + 1;
  }
  return out;
}

std::vector<EnvChange> plan_job_env(uint16_t qos_class, bool class_asked,
                                    const std::vector<StackValue>& values, const SiteRules& rules,
                                    const JobEnvLookup& job_env) {
  // What an earlier step of this job set (a batch script's environment reaches its sruns) is
  // not the user's own value.
  const auto ours = parse_marker(job_env(kMarkerVariable).value_or(""));
  std::vector<EnvChange> out;
  auto add = [&](const std::string& name, const std::string& value, bool force = false) {
    EnvChange c{name, value, false, {}};
    auto user = job_env(name);
    auto earlier = ours.find(name);
    const bool set_by_us = earlier != ours.end() && user && earlier->second == *user;
    if (user && !user->empty() && *user != value && !rules.overwrite && !force && !set_by_us) {
      c.kept_user = true;
      c.user_value = *user;
    }
    out.push_back(std::move(c));
  };
  add("RDMA_QOS_CLASS", std::to_string(qos_class), class_asked);
  for (const StackValue& v : values) add(v.name, v.value);
  if (!rules.preload.empty()) {
    // The module goes in front of whatever the job preloads already; never twice.
    std::string current = job_env("LD_PRELOAD").value_or("");
    if (current.find(rules.preload) == std::string::npos)
      out.push_back({"LD_PRELOAD",
                     current.empty() ? rules.preload : rules.preload + ":" + current,
                     false,
                     {}});
  }
  std::string marker;
  for (const EnvChange& c : out) {
    if (c.kept_user || c.name == "LD_PRELOAD") continue;
    marker += (marker.empty() ? "" : ",") + c.name + "=" + c.value;
  }
  out.push_back({std::string(kMarkerVariable), marker, false, {}});
  return out;
}

}  // namespace rdmaqos::slurm
