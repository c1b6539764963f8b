// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos jobs`: which QoS class the processes of running Slurm jobs use, read from their
// environments in /proc (what the module and the stacks read), and who set it: the Slurm
// plugin (its RDMA_QOS_SLURM_SET record) or the user.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "rdma-qos/slurm/job_env.h"
#include "stack_knobs.h"

namespace rdmaqos::cli::cmd_jobs {
namespace {

using nlohmann::json;

struct JobsArgs {
  std::string job;
  bool all = false;
  bool json_out = false;
  std::string proc = "/proc";  // tests point it at a directory of their own
};

struct ProcessQos {
  int pid = 0;
  unsigned uid = 0;
  std::string command;
  std::string job, step;
  std::string qos_class;  // empty: none
  std::string set_by;     // "slurm", "environment" or "" (no class)
  std::vector<std::pair<std::string, std::string>> variables;  // the stacks', as set
};

using Environment = std::map<std::string, std::string, std::less<>>;

// nullopt: not permitted (another user's process); an empty map also for a process that is
// gone or has no environment (kernel threads).
std::optional<Environment> read_environ(const std::string& f) {
  Environment env;
  const int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == EACCES || errno == EPERM) return std::nullopt;
    return env;
  }
  std::string all;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EACCES || errno == EPERM)) {
      close(fd);
      return std::nullopt;
    }
    if (n <= 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    std::string_view item(all.data() + start, end - start);
    if (size_t eq = item.find('='); eq != std::string_view::npos)
      env.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    start = end + 1;
  }
  return env;
}

std::string first_line(const std::string& f) {
  std::ifstream in(f);
  std::string line;
  std::getline(in, line);
  return line;
}

struct Scan {
  std::vector<ProcessQos> processes;
  int unreadable = 0;
};

Scan scan(const JobsArgs& a) {
  Scan out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(a.proc.c_str()), &closedir);
  if (!dir) return out;
  while (dirent* e = readdir(dir.get())) {
    std::string name = e->d_name;
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const std::string base = a.proc + "/" + name;
    auto env = read_environ(base + "/environ");
    if (!env) {
      ++out.unreadable;
      continue;
    }
    auto get = [&](std::string_view k) -> std::string {
      auto it = env->find(k);
      return it == env->end() ? std::string() : it->second;
    };
    ProcessQos p;
    p.job = get("SLURM_JOB_ID");
    p.qos_class = get("RDMA_QOS_CLASS");
    if (!a.all && p.job.empty()) continue;
    if (a.all && p.job.empty() && p.qos_class.empty()) continue;
    if (!a.job.empty() && p.job != a.job) continue;
    p.pid = std::stoi(name);
    struct stat st {};
    if (stat(base.c_str(), &st) == 0) p.uid = st.st_uid;
    p.command = first_line(base + "/comm");
    p.step = get("SLURM_STEP_ID");
    if (p.step.empty() && !p.job.empty()) p.step = "batch";
    if (!p.qos_class.empty()) {
      auto ours = slurm::parse_marker(get(slurm::kMarkerVariable));
      auto it = ours.find("RDMA_QOS_CLASS");
      p.set_by = it != ours.end() && it->second == p.qos_class ? "slurm" : "environment";
    }
    for (const StackKnob& k : stack_knobs())
      if (auto v = get(k.name); !v.empty()) p.variables.emplace_back(std::string(k.name), v);
    out.processes.push_back(std::move(p));
  }
  std::sort(out.processes.begin(), out.processes.end(),
            [](const ProcessQos& x, const ProcessQos& y) { return x.pid < y.pid; });
  return out;
}

int jobs(const JobsArgs& a) {
  Scan s = scan(a);
  if (a.json_out) {
    json list = json::array();
    for (const auto& p : s.processes) {
      json vars = json::object();
      for (const auto& [k, v] : p.variables) vars[k] = v;
      list.push_back({{"pid", p.pid},
                      {"uid", p.uid},
                      {"command", p.command},
                      {"job", p.job},
                      {"step", p.step},
                      {"class", p.qos_class.empty() ? json(nullptr) : json(p.qos_class)},
                      {"set_by", p.set_by.empty() ? json(nullptr) : json(p.set_by)},
                      {"variables", vars}});
    }
    std::cout << json{{"processes", list}, {"unreadable", s.unreadable}}.dump() << "\n";
  } else {
    std::cout << fmt::format("{:<8} {:<6} {:>7} {:>6} {:<16} {:<6} {:<11} {}\n", "JOB", "STEP",
                             "PID", "UID", "COMMAND", "CLASS", "SET-BY", "VARIABLES");
    for (const auto& p : s.processes) {
      std::string vars;
      for (const auto& [k, v] : p.variables) vars += (vars.empty() ? "" : " ") + k + "=" + v;
      std::cout << fmt::format("{:<8} {:<6} {:>7} {:>6} {:<16} {:<6} {:<11} {}\n",
                               p.job.empty() ? "-" : p.job, p.step.empty() ? "-" : p.step, p.pid,
                               p.uid, p.command, p.qos_class.empty() ? "-" : p.qos_class,
                               p.set_by.empty() ? "-" : p.set_by, vars.empty() ? "-" : vars);
    }
    if (s.unreadable > 0)
      std::cerr << fmt::format(
          "rdma-qos jobs: the environments of {} processes are not readable by this user (root "
          "reads all)\n",
          s.unreadable);
  }
  if (!a.job.empty() && s.processes.empty()) {
    std::cerr << "rdma-qos jobs: no readable process of job " << a.job << " on this node\n";
    return 1;
  }
  return 0;
}

void setup_jobs(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "jobs",
      "list the QoS class (RDMA_QOS_CLASS) and the stacks' QoS variables of the processes of "
      "running Slurm jobs on this node, and whether the Slurm plugin or the user set the class");
  auto a = std::make_shared<JobsArgs>();
  cmd->add_option("--job", a->job, "only this Slurm job id");
  cmd->add_flag("--all", a->all,
                "also processes outside Slurm jobs that have RDMA_QOS_CLASS (rdma-qos-run's)");
  cmd->add_option("--proc", a->proc, "the proc file system to read (default /proc)");
  cmd->add_flag("--json", a->json_out, "print JSON");
  cmd->footer(
      "Exit status: 0 listed (possibly nothing), 1 --job named a job with no readable "
      "process here, 2 usage error.");
  cmd->callback([a] { set_exit_code(jobs(*a)); });
}

const CommandRegistration kRegistration{"jobs", &setup_jobs};

}  // namespace
}  // namespace rdmaqos::cli::cmd_jobs
