// rdma-qos-sad: the policy-enforcing SA responder. Discovers the fabric, loads the policy and
// answers PathRecord / MultiPathRecord / ClassPortInfo queries at its port; SIGHUP reloads the
// policy (a bad one keeps the old), SIGUSR1 re-discovers the fabric.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/sa-responder/agent.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/discovery.h"

namespace {

using rdmaqos::sad::Discovery;
using rdmaqos::sad::Endpoint;

nlohmann::json fabric_json(const Discovery& d) {
  const auto& m = d.model;
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : m.nodes) {
    nlohmann::json ports = nlohmann::json::array();
    for (size_t p = 0; p < n.ports.size(); ++p) {
      const auto& pm = n.ports[p];
      if (!pm.present) continue;
      nlohmann::json sl2vl = nlohmann::json::array();
      for (const auto& t : pm.sl2vl) sl2vl.push_back(t);
      ports.push_back({{"port", p},
                       {"guid", fmt::format("{:#018x}", pm.guid)},
                       {"lid", pm.lid},
                       {"lmc", pm.lmc},
                       {"mtu_cap", pm.mtu_cap},
                       {"rate", pm.rate},
                       {"pkeys", pm.pkeys},
                       {"sl2vl", sl2vl},
                       {"peer_node", pm.peer_node},
                       {"peer_port", pm.peer_port}});
    }
    nodes.push_back({{"guid", fmt::format("{:#018x}", n.guid)},
                     {"type", static_cast<int>(n.type)},
                     {"description", n.description},
                     {"ports", ports},
                     {"lft_size", n.lft.size()},
                     {"lft", n.lft}});
  }
  // Paths from the port discovery ran at to every endpoint: what the SA will answer from.
  nlohmann::json paths = nlohmann::json::array();
  for (const Endpoint& e : m.endpoints()) {
    uint16_t dlid = m.port(e).lid;
    auto w = m.walk(d.self, dlid);
    if (!w) {
      paths.push_back({{"dlid", dlid}, {"reachable", false}});
      continue;
    }
    paths.push_back({{"dlid", dlid},
                     {"reachable", true},
                     {"mtu", w->mtu},
                     {"rate", w->rate},
                     {"hops", w->hops},
                     {"valid_sls", w->valid_sls}});
  }
  return {{"subnet_prefix", fmt::format("{:#018x}", m.subnet_prefix)},
          {"subnet_timeout", m.subnet_timeout},
          {"self", {{"node", d.self.node}, {"port", d.self.port}}},
          {"nodes", nodes},
          {"paths", paths},
          {"warnings", d.warnings}};
}

volatile sig_atomic_t g_reload = 0;
volatile sig_atomic_t g_rediscover = 0;
volatile sig_atomic_t g_stop = 0;

void on_signal(int sig) {
  if (sig == SIGHUP) g_reload = 1;
  if (sig == SIGUSR1) g_rediscover = 1;
  if (sig == SIGTERM || sig == SIGINT) g_stop = 1;
}

void install_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGHUP, SIGUSR1, SIGTERM, SIGINT}) sigaction(sig, &sa, nullptr);
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void log(const std::string& line) {
  std::cerr << "rdma-qos-sad: " << line << std::endl;
}

// What the answers are computed from; replaced as a whole on reload or re-discovery.
struct State {
  rdmaqos::sad::FabricModel model;
  rdmaqos::policy::Fabric policy_fabric;  // with the partitions
  std::shared_ptr<const rdmaqos::policy::CompiledPolicy> policy;
};

struct Config {
  std::string policy_path, partitions_path;
  bool no_policy = false;
  int subnet_timeout = 18;
};

// Partitions resolved against the fabric; false (diagnostics logged) when the file is bad.
bool load_partitions(const Config& config, State& state) {
  if (config.partitions_path.empty()) {
    state.policy_fabric.partitions = rdmaqos::policy::default_partitions(state.policy_fabric);
    return true;
  }
  auto text = read_file(config.partitions_path);
  if (!text) {
    log(fmt::format("cannot read {}", config.partitions_path));
    return false;
  }
  auto r = rdmaqos::policy::parse_partitions(*text, state.policy_fabric);
  for (const auto& d : r.diagnostics)
    log(rdmaqos::policy::format_diagnostic(d, config.partitions_path));
  if (rdmaqos::policy::has_errors(r.diagnostics)) return false;
  state.policy_fabric.partitions = std::move(r.partitions);
  return true;
}

// The compiled policy for `state`'s fabric; null with --no-policy; nullopt on errors (logged).
std::optional<std::shared_ptr<const rdmaqos::policy::CompiledPolicy>> load_policy(
    const Config& config, const State& state) {
  if (config.no_policy) return std::shared_ptr<const rdmaqos::policy::CompiledPolicy>{};
  auto text = read_file(config.policy_path);
  if (!text) {
    log(fmt::format("cannot read {}", config.policy_path));
    return std::nullopt;
  }
  auto r = rdmaqos::policy::load_policy(*text, &state.policy_fabric);
  for (const auto& d : r.diagnostics)
    log(rdmaqos::policy::format_diagnostic(d, config.policy_path));
  if (!r.policy) return std::nullopt;
  return r.policy;
}

// A new state from a fresh discovery; nullopt (logged) when discovery or loading fails.
// The model back from --dump-fabric --json.
std::optional<Discovery> discovery_from_json(const nlohmann::json& j) {
  try {
    Discovery d;
    auto hex = [](const nlohmann::json& v) {
      return std::stoull(v.get<std::string>(), nullptr, 16);
    };
    d.model.subnet_prefix = hex(j.at("subnet_prefix"));
    d.self.node = j.at("self").at("node").get<int>();
    d.self.port = j.at("self").at("port").get<uint8_t>();
    for (const auto& jn : j.at("nodes")) {
      rdmaqos::sad::NodeModel n;
      n.guid = hex(jn.at("guid"));
      n.type = static_cast<rdmaqos::policy::NodeType>(jn.at("type").get<int>());
      n.description = jn.at("description").get<std::string>();
      n.lft = jn.at("lft").get<std::vector<uint8_t>>();
      for (const auto& jp : jn.at("ports")) {
        size_t num = jp.at("port").get<size_t>();
        if (num > 255) return std::nullopt;
        if (n.ports.size() <= num) n.ports.resize(num + 1);
        rdmaqos::sad::PortModel& p = n.ports[num];
        p.present = true;
        p.guid = hex(jp.at("guid"));
        p.lid = jp.at("lid").get<uint16_t>();
        p.lmc = jp.at("lmc").get<uint8_t>();
        p.mtu_cap = jp.at("mtu_cap").get<uint8_t>();
        p.rate = jp.at("rate").get<uint8_t>();
        p.pkeys = jp.at("pkeys").get<std::vector<uint16_t>>();
        p.sl2vl = jp.at("sl2vl").get<std::vector<rdmaqos::sad::Sl2Vl>>();
        p.peer_node = jp.at("peer_node").get<int>();
        p.peer_port = jp.at("peer_port").get<uint8_t>();
      }
      d.model.nodes.push_back(std::move(n));
    }
    for (const auto& n : d.model.nodes)
      for (const auto& p : n.ports)
        if (p.peer_node >= static_cast<int>(d.model.nodes.size())) return std::nullopt;
    if (d.self.node < 0 || d.self.node >= static_cast<int>(d.model.nodes.size()) ||
        d.self.port >= d.model.nodes[static_cast<size_t>(d.self.node)].ports.size()) {
      return std::nullopt;
    }
    d.model.sm_port_guid = d.model.port(d.self).guid;
    d.model.index();
    return d;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Discovery in a fresh process (this program with --dump-fabric): while the SA port is open,
// SMP answers do not reach an in-process discovery under umad2sim.
std::optional<Discovery> discover_in_child(const rdmaqos::sad::DiscoveryOptions& options) {
  std::vector<std::string> args = {"/proc/self/exe", "--dump-fabric", "--json"};
  if (!options.ca.empty()) args.insert(args.end(), {"--ca", options.ca});
  if (options.port != 0) args.insert(args.end(), {"--port", std::to_string(options.port)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  // The JSON line: umad2sim may print lines of its own.
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) return discovery_from_json(j);
  }
  return std::nullopt;
}

std::optional<State> build_state(const Config& config,
                                 const rdmaqos::sad::DiscoveryOptions& discovery,
                                 bool in_child = false) {
  std::optional<Discovery> found;
  if (in_child) {
    found = discover_in_child(discovery);
    if (!found) {
      log("discovery failed (child process)");
      return std::nullopt;
    }
  } else {
    auto r = rdmaqos::sad::discover_fabric(discovery);
    if (!r) {
      log("discovery failed: " + r.error().message);
      return std::nullopt;
    }
    found = std::move(*r);
  }
  for (const auto& w : found->warnings) log("discovery: " + w);
  State state;
  state.model = std::move(found->model);
  state.model.subnet_timeout = static_cast<uint8_t>(config.subnet_timeout);
  state.policy_fabric = state.model.policy_fabric();
  if (!load_partitions(config, state)) return std::nullopt;
  auto policy = load_policy(config, state);
  if (!policy) return std::nullopt;
  state.policy = *policy;
  return state;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdma-qos-sad: a policy-enforcing SA PathRecord responder"};
  rdmaqos::sad::DiscoveryOptions discovery;
  bool dump_fabric = false;
  bool json = false;
  bool foreground = false;
  bool no_issm = false;
  Config config;
  app.add_option("--policy", config.policy_path, "QoS policy (OpenSM qos-policy.conf syntax)")
      ->check(CLI::ExistingFile);
  app.add_flag("--no-policy", config.no_policy,
               "run without a policy: partition SLs apply, as OpenSM without one");
  app.add_option("--partitions", config.partitions_path, "partitions (OpenSM partitions.conf)")
      ->check(CLI::ExistingFile);
  app.add_option("--subnet-timeout", config.subnet_timeout,
                 "packet life without a level value (OpenSM's subnet_timeout)")
      ->check(CLI::Range(0, 31));
  app.add_flag("--foreground", foreground, "stay in the foreground (the only mode so far)");
  app.add_flag("--no-issm", no_issm, "do not hold the port's issm device");
  app.add_option("--ca", discovery.ca, "CA to run at (default: the first)");
  app.add_option("--port", discovery.port, "port of the CA (default: the first active)");
  app.add_flag("--dump-fabric", dump_fabric, "discover the fabric, print the model and exit");
  app.add_flag("--json", json, "print JSON");
  CLI11_PARSE(app, argc, argv);

  if (!dump_fabric) {
    if (config.policy_path.empty() && !config.no_policy) {
      log("no policy: give --policy FILE, or --no-policy to answer with partition SLs");
      return 2;
    }
    install_signals();
    auto state = build_state(config, discovery);
    if (!state) return 1;
    rdmaqos::sad::AgentOptions agent_options;
    agent_options.ca = discovery.ca;
    agent_options.port = discovery.port;
    agent_options.issm = !no_issm;
    auto agent = rdmaqos::sad::SaAgent::open(agent_options);
    if (!agent) {
      log("cannot open the SA agent: " + agent.error().message);
      return 1;
    }
    log(fmt::format("answering at LID {}", (*agent)->lid()));
    while (!g_stop) {
      if (g_reload) {
        g_reload = 0;
        auto policy = load_policy(config, *state);
        if (policy) {
          state->policy = *policy;
          log("policy reloaded");
        } else {
          log("policy reload failed: the previous policy stays in force");
        }
      }
      if (g_rediscover) {
        g_rediscover = 0;
        auto fresh = build_state(config, discovery, true);
        if (fresh) {
          state = std::move(fresh);
          log("fabric re-discovered");
        } else {
          log("re-discovery failed: the previous model stays in force");
        }
      }
      auto served = (*agent)->serve_one(
          [&](const rdmaqos::sad::Request& request) {
            rdmaqos::sad::AnswerContext ctx;
            ctx.fabric = &state->model;
            ctx.policy = state->policy.get();
            ctx.partitions = &state->policy_fabric.partitions;
            ctx.requester = state->model.by_lid(request.slid);
            return rdmaqos::sad::answer(ctx, request.mad);
          },
          std::chrono::milliseconds(200));
      if (!served) {
        log(served.error().message);
        return 1;
      }
    }
    return 0;
  }
  auto result = rdmaqos::sad::discover_fabric(discovery);
  if (!result) {
    std::cerr << "rdma-qos-sad: discovery failed: " << result.error().message << "\n";
    return 1;
  }
  nlohmann::json j = fabric_json(*result);
  std::cout << (json ? j.dump() : j.dump(2)) << "\n";
  return 0;
}
