// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// ibsim + OpenSM lifecycle for tests and the demo (see ib_fabric.h).
#include "rdma-qos/testbed/ib_fabric.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "rdma-qos/testbed/start_failure.h"

namespace rdmaqos::testbed {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string tail(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

// TMPDIR when set; otherwise /dev/shm where it is a writable tmpfs, else /tmp. Every ibsim
// client (umad2sim) writes and deletes a fake sysfs tree of about 60 files and directories in
// its working directory, which is this one: on this machine's ext4 /tmp that costs 20 ms of
// kernel time per client (ext4 searches for recently deleted inodes on each create), on tmpfs
// 7 ms, and the opensm-labelled suites start tens of thousands of clients.
std::string fabric_parent_dir() {
  const char* tmp = getenv("TMPDIR");
  if (tmp != nullptr && *tmp != '\0') return tmp;
  struct statfs info {};
  if (statfs("/dev/shm", &info) == 0 && info.f_type == TMPFS_MAGIC && access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return "/tmp";
}

std::string make_private_dir() {
  std::string pattern = fabric_parent_dir() + "/rdmaqos-ib-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp " + pattern + ": " + strerror(errno));
  return pattern;
}

}  // namespace

std::string umad2sim_library() {
  if (const char* env = getenv("RDMA_QOS_UMAD2SIM")) return env;
  return "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
}

std::string umad_multi_ca_library() {
  return RDMA_QOS_UMAD_MULTI_CA;
}

IbFabric::IbFabric(IbFabricOptions options) : options_(std::move(options)) {
  try {
    start();
    wait_until_ready();
  } catch (...) {
    std::string logs = dir_.empty() ? "" : logs_tail();
    options_.keep_dir = options_.keep_dir || getenv("RDMA_QOS_KEEP_FABRIC") != nullptr;
    stop();
    try {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("fabric start failed: {}\n{}", e.what(), logs));
    }
  }
}

IbFabric::~IbFabric() {
  stop();
}

void IbFabric::start() {
  for (const char* tool : {"ibsim", "opensm", "saquery"})
    if (find_program(tool).empty())
      throw std::runtime_error(fmt::format("{} not found: run scripts/install-deps.sh", tool));
  if (access(umad2sim_library().c_str(), R_OK) != 0)
    throw std::runtime_error(umad2sim_library() + " not found: run scripts/install-deps.sh");

  dir_ = make_private_dir();
  // The abstract socket names ibsim and umad2sim derive from this are unique per fabric.
  sockname_ = "rdmaqos-" + fs::path(dir_).filename().string();
  write_file(dir_ + "/net", options_.topology.netfile);
  for (const auto& [name, text] : options_.files) write_file(dir_ + "/" + name, text);
  start_ibsim();
  start_opensm();
}

void IbFabric::start_ibsim() {
  ProcessOptions sim;
  sim.argv = {"ibsim", "-s"};
  if (!options_.ibsim_console) sim.argv.push_back("-n");  // -n: no console, so no spin on EOF
  // ibsim's tables hold 2048 nodes, 256 switches and 13312 ports unless told more (-N -S -P).
  const Topology& topo = options_.topology;
  if (topo.port_count > 0) {
    const int switches =
        static_cast<int>(std::count_if(topo.nodes.begin(), topo.nodes.end(), [](const TopoNode& n) {
          return n.kind == NodeKind::kSwitch;
        }));
    sim.argv.insert(sim.argv.end(),
                    {"-N", std::to_string(std::max<size_t>(2048, topo.nodes.size())), "-S",
                     std::to_string(std::max(256, switches)), "-P",
                     std::to_string(std::max(13312, topo.port_count))});
  }
  sim.argv.push_back(dir_ + "/net");
  if (options_.ibsim_console) {
    // A FIFO we keep open for writing: ibsim's console never sees EOF.
    const std::string fifo = dir_ + "/ibsim.console";
    if (!fs::exists(fifo) && mkfifo(fifo.c_str(), 0600) != 0)
      throw std::runtime_error("mkfifo " + fifo);
    if (console_fd_ < 0) console_fd_ = open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    if (console_fd_ < 0) throw std::runtime_error("open " + fifo);
    sim.input_path = fifo;
  }
  sim.env = {{"IBSIM_SOCKNAME", sockname_}};
  sim.cwd = dir_;
  sim.output_path = dir_ + "/ibsim.log";
  ibsim_ = std::make_unique<Process>(Process::spawn(sim));

  // umad2sim connects once at start: wait for ibsim's control socket to exist.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    if (!ibsim_->running()) throw std::runtime_error("ibsim exited during start-up");
    if (read_file("/proc/net/unix").find("@" + sockname_ + ":ctl") != std::string::npos) break;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("ibsim did not open its socket within 10 s");
    std::this_thread::sleep_for(20ms);
  }
}

void IbFabric::start_opensm() {
  // A configuration file of our own (empty by default) keeps the host's /etc/opensm out of the
  // test.
  std::string conf = options_.opensm_conf;
  for (size_t at = conf.find("@DIR@"); at != std::string::npos;
       at = conf.find("@DIR@", at + dir_.size()))
    conf.replace(at, 5, dir_);
  write_file(dir_ + "/opensm.conf", conf);
  ProcessOptions sm;
  sm.argv = {"opensm", "-F", dir_ + "/opensm.conf", "-f", dir_ + "/osm.log", "-s", "0"};
  if (options_.qos) sm.argv.push_back("-Q");
  if (!options_.policy.empty()) {
    write_file(dir_ + "/qos-policy.conf", options_.policy);
    sm.argv.insert(sm.argv.end(), {"-Y", dir_ + "/qos-policy.conf"});
  }
  if (!options_.partitions.empty()) {
    write_file(dir_ + "/partitions.conf", options_.partitions);
    sm.argv.insert(sm.argv.end(), {"-P", dir_ + "/partitions.conf"});
  }
  if (options_.lmc != 0) sm.argv.insert(sm.argv.end(), {"-l", std::to_string(options_.lmc)});
  sm.argv.insert(sm.argv.end(), options_.opensm_args.begin(), options_.opensm_args.end());
  sm.env = client_env(options_.topology.sm_node().id);
  sm.env["OSM_TMP_DIR"] = dir_;
  sm.env["OSM_CACHE_DIR"] = dir_;
  for (const auto& [name, value] : options_.opensm_env) sm.env[name] = value;
  if (options_.pin_random) {
    std::string& preload = sm.env["LD_PRELOAD"];
    preload = preload.empty() ? RDMA_QOS_PINNED_RAND : preload + ":" + RDMA_QOS_PINNED_RAND;
  }
  sm.cwd = dir_;
  sm.output_path = dir_ + "/opensm.out";
  // wait_until_ready looks for this run's "Entering MASTER state" only.
  opensm_output_from_ = read_file(sm.output_path).size();
  opensm_ = std::make_unique<Process>(Process::spawn(sm));
}

void IbFabric::wait_until_ready() {
  auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  // Ready means: MASTER, and the SA answers a query that needs the routing done. With a
  // generated topology that is a PathRecord between the first and the last CA (the SA has no
  // path before the LFTs are set); with a hand-written one only ClassPortInfo is known to work.
  auto cas = options_.topology.cas();
  std::string probe_host = options_.topology.sm_node().id;
  std::vector<std::string> probe = {"saquery", "-c"};
  std::string expect = "ClassPortInfo";
  if (cas.size() >= 2) {
    probe_host = cas.front()->id;
    probe = {"saquery", "-p",
             "--slid",  std::to_string(cas.front()->lid),
             "--dlid",  std::to_string(cas.back()->lid)};
    expect = "PathRecord dump";
  }
  bool master = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!ibsim_->running()) throw std::runtime_error("ibsim exited");
    if (!opensm_->running()) throw std::runtime_error("opensm exited");
    if (!master)
      master = read_file(dir_ + "/opensm.out").find("Entering MASTER state", opensm_output_from_) !=
               std::string::npos;
    if (master) {
      RunResult r = run_at(probe_host, probe, 5s);
      if (r.exit_code == 0 && r.output.find(expect) != std::string::npos) return;
    }
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error(
      fmt::format("SM not MASTER with a working SA within {} ms", options_.start_timeout.count()));
}

std::map<std::string, std::string> IbFabric::client_env(const std::string& sim_host) const {
  return {
      {"IBSIM_SOCKNAME", sockname_}, {"SIM_HOST", sim_host}, {"LD_PRELOAD", umad2sim_library()}};
}

std::map<std::string, std::string> IbFabric::host_env(const std::vector<HostPort>& ports,
                                                      const std::string& trace_path) const {
  std::string layout;
  for (const HostPort& p : ports)
    layout += fmt::format("{}{}/{}={}", layout.empty() ? "" : " ", p.device, p.port, p.node);
  std::map<std::string, std::string> env = {{"IBSIM_SOCKNAME", sockname_},
                                            {"UMAD_MULTI_CA", layout},
                                            {"LD_PRELOAD", umad_multi_ca_library()}};
  if (!trace_path.empty()) env["UMAD_MULTI_CA_TRACE"] = trace_path;
  return env;
}

RunResult IbFabric::run_at(const std::string& sim_host, const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout) const {
  ProcessOptions p;
  p.argv = argv;
  p.env = client_env(sim_host);
  p.cwd = dir_;  // umad2sim creates a fake sysfs tree (sys-PID) in the working directory
  return run(p, timeout);
}

IbFabric::Started IbFabric::start_until_answering(const ProcessOptions& daemon,
                                                  const std::vector<std::string>& probe,
                                                  std::chrono::seconds budget) const {
  ProcessOptions options = daemon;
  // The crash report after umad2sim (when preloaded): a SIGSEGV then leaves the stack that
  // says whose crash it was.
  auto preload = options.env.find("LD_PRELOAD");
  const char* inherited = getenv("LD_PRELOAD");
  std::string before = preload != options.env.end() ? preload->second
                       : inherited != nullptr       ? inherited
                                                    : "";
  options.env["LD_PRELOAD"] =
      before.empty() ? RDMA_QOS_CRASH_REPORT : before + ":" + RDMA_QOS_CRASH_REPORT;
  Started out;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    // Only this start's output counts: the file may hold an earlier one's.
    const size_t output_from = read_file(options.output_path).size();
    out.daemon = std::make_unique<Process>(Process::spawn(options));
    const auto give_up = std::chrono::steady_clock::now() + budget;
    while (std::chrono::steady_clock::now() < give_up && out.daemon->running()) {
      out.probe = run_at("node001", probe);
      if (out.probe.exit_code == 0) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    auto code = out.daemon->wait_for(std::chrono::milliseconds(10));
    if (!code) break;  // still running: not answering in time is not a crash
    std::string output = read_file(options.output_path);
    output.erase(0, std::min(output_from, output.size()));
    const StartFailure failure = classify_start_failure(*code, output);
    std::cerr << "ibfabric: " << daemon.argv.front() << " ended before answering: " << failure.why
              << (failure.simulator && attempt == 1 ? "; starting it once more\n" : "\n");
    if (!failure.simulator) break;
  }
  return out;
}

std::vector<pid_t> IbFabric::pids() const {
  std::vector<pid_t> out;
  for (const auto* p : {ibsim_.get(), opensm_.get()})
    if (p != nullptr && p->pid() > 0) out.push_back(p->pid());
  return out;
}

void IbFabric::ibsim_command(const std::string& line) const {
  if (console_fd_ < 0) throw std::logic_error("ibsim runs without a console (ibsim_console)");
  std::string text = line + "\n";
  if (write(console_fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write to ibsim's console");
}

std::string IbFabric::opensm_log() const {
  return read_file(dir_ + "/osm.log");
}

std::string IbFabric::logs_tail() const {
  std::string out;
  for (const char* name : {"ibsim.log", "opensm.out", "osm.log"}) {
    std::string text = read_file(dir_ + "/" + name);
    if (!text.empty()) out += fmt::format("--- {}/{} (tail) ---\n{}\n", dir_, name, tail(text, 15));
  }
  return out;
}

void IbFabric::stop_sm() {
  if (opensm_) opensm_->stop();
  opensm_.reset();
}

void IbFabric::renumber(const std::map<std::string, uint16_t>& lids) {
  stop_sm();
  // OpenSM's LID database (OSM_CACHE_DIR/guid2lid: "GUID MIN_LID MAX_LID" per port), as its
  // first run wrote it, with the moved ports' lines changed.
  std::istringstream in(read_file(dir_ + "/guid2lid"));
  std::map<uint64_t, uint16_t> by_guid;
  for (const auto& [node, lid] : lids) by_guid[port_guid(node)] = lid;
  std::string out;
  for (std::string line; std::getline(in, line);) {
    uint64_t guid = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64, &guid) == 1 && by_guid.count(guid) != 0) {
      const uint16_t lid = by_guid[guid];
      const uint16_t last = static_cast<uint16_t>(lid + (1u << options_.lmc) - 1);
      line = fmt::format("0x{:016x} 0x{:04x} 0x{:04x}", guid, lid, last);
      by_guid.erase(guid);
    }
    out += line + "\n";
  }
  if (!by_guid.empty()) throw std::runtime_error("renumber: a node is not in OpenSM's guid2lid");
  write_file(dir_ + "/guid2lid", out);
  for (auto& n : options_.topology.nodes)
    if (auto moved = lids.find(n.id); moved != lids.end()) n.lid = moved->second;
  const std::string conf = options_.opensm_conf;
  options_.opensm_conf += "honor_guid2lid_file TRUE\n";
  start_opensm();
  options_.opensm_conf = conf;
  wait_until_ready();
}

void IbFabric::stop_ibsim() {
  stop_sm();
  if (ibsim_) ibsim_->stop();
  ibsim_.reset();
}

void IbFabric::restart_ibsim() {
  stop_ibsim();
  start_ibsim();
  start_opensm();
  wait_until_ready();
}

void IbFabric::stop() {
  // OpenSM first: it is ibsim's client, and ibsim is the last thing anything talks to.
  if (opensm_) opensm_->stop();
  if (ibsim_) ibsim_->stop();
  opensm_.reset();
  ibsim_.reset();
  if (console_fd_ >= 0) close(console_fd_);
  console_fd_ = -1;
  if (!dir_.empty() && !options_.keep_dir) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  dir_.clear();
}

std::unique_ptr<IbFabric> start_fat_tree(std::string policy, std::string partitions) {
  IbFabricOptions o = fabric_options(make_fat_tree({}));
  o.policy = std::move(policy);
  o.partitions = std::move(partitions);
  return std::make_unique<IbFabric>(std::move(o));
}

}  // namespace rdmaqos::testbed
