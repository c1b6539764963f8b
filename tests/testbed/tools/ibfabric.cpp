// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// ibfabric: the InfiniBand test bed from the shell. Starts ibsim and OpenSM on a generated
// fat tree (or a given ibsim topology), runs COMMAND with the fabric's environment, tears
// everything down and exits with COMMAND's status.
#include <fmt/format.h>
#include <signal.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/testbed/ib_fabric.h"

namespace {

using namespace rdmaqos::testbed;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Run COMMAND on a simulated InfiniBand fabric (ibsim) managed by a real OpenSM.\n"
      "COMMAND sees IBSIM_SOCKNAME, IBFABRIC_DIR, IBFABRIC_PRELOAD (the umad2sim library),\n"
      "IBFABRIC_MULTI_CA (the test bed's umad_multi_ca library) and IBFABRIC_NODES (a file of\n"
      "'id lid port_guid description' lines). Put a libibumad program on the fabric with:\n"
      "  SIM_HOST=node001 LD_PRELOAD=$IBFABRIC_PRELOAD saquery ...\n"
      "or as a host with several devices or ports, each port at its own node, with:\n"
      "  UMAD_MULTI_CA='mlx5_0/1=node001 mlx5_1/1=node002' LD_PRELOAD=$IBFABRIC_MULTI_CA ...",
      "ibfabric"};
  FatTreeSpec spec;
  bool mixed_speeds = false;
  std::string topology_file, policy_file, partitions_file;
  bool no_qos = false, keep = false;
  int timeout_s = 60;
  std::vector<std::string> command, opensm_args;
  rdmaqos::add_number(app, "--cas", spec.cas, "compute CAs in the generated fat tree")
      ->check(CLI::Range(1, 16000));
  app.add_flag("--mixed-speeds", mixed_speeds,
               "CA links of FDR, EDR and HDR at 1x..12x beside QDR and DDR, 12x HDR uplinks");
  rdmaqos::add_number(app, "--cas-per-leaf", spec.cas_per_leaf, "CAs per leaf switch")
      ->check(CLI::Range(1, 200));
  rdmaqos::add_number(app, "--spines", spec.spines, "spine switches")->check(CLI::Range(1, 64));
  rdmaqos::add_number(app, "--lmc", spec.lmc,
                      "OpenSM's LMC (-l), the fat tree's LIDs aligned for it")
      ->check(CLI::Range(0, 7));
  app.add_option("--topology", topology_file, "ibsim topology file instead of the fat tree")
      ->check(CLI::ExistingFile);
  app.add_option("--policy", policy_file, "OpenSM QoS policy file (-Y)")->check(CLI::ExistingFile);
  app.add_option("--partitions", partitions_file, "OpenSM partitions file (-P)")
      ->check(CLI::ExistingFile);
  app.add_flag("--no-qos", no_qos, "run OpenSM without -Q");
  app.add_option("--opensm-arg", opensm_args,
                 "extra OpenSM argument (repeatable), e.g. --opensm-arg=-D --opensm-arg=0x08");
  app.add_flag("--keep", keep, "keep the fabric's directory (logs) afterwards");
  rdmaqos::add_number(app, "--start-timeout", timeout_s, "seconds to wait for the SM and SA")
      ->check(CLI::PositiveNumber);
  app.add_option("command", command, "command to run (after --)")->required();
  CLI11_PARSE(app, argc, argv);

  try {
    IbFabricOptions options;
    if (mixed_speeds) {
      FatTreeSpec mixed = mixed_speed_tree(spec.cas);
      spec.ca_links = mixed.ca_links;
      spec.uplink = mixed.uplink;
      spec.sm_link = mixed.sm_link;
    }
    options.topology = make_fat_tree(spec);
    if (!topology_file.empty()) {
      // A hand-written topology: node metadata is unknown, only the text is used.
      options.topology.netfile = slurp(topology_file);
    }
    if (!policy_file.empty()) options.policy = slurp(policy_file);
    if (!partitions_file.empty()) options.partitions = slurp(partitions_file);
    options.qos = !no_qos;
    options.lmc = spec.lmc;
    options.opensm_args = opensm_args;
    options.keep_dir = keep;
    options.start_timeout = std::chrono::seconds(timeout_s);

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);

    IbFabric fabric(options);
    std::string nodes_path = fabric.dir() + "/nodes";
    {
      std::ofstream nodes(nodes_path);
      if (topology_file.empty())
        for (const auto& n : fabric.topology().nodes)
          nodes << fmt::format("{} {} 0x{:016x} {}\n", n.id, n.lid, n.port_guid, n.description);
    }
    ProcessOptions p;
    p.argv = command;
    p.env = {{"IBSIM_SOCKNAME", fabric.sockname()},
             {"IBFABRIC_DIR", fabric.dir()},
             {"IBFABRIC_PRELOAD", umad2sim_library()},
             {"IBFABRIC_MULTI_CA", umad_multi_ca_library()},
             {"IBFABRIC_NODES", nodes_path}};
    Process child = Process::spawn(p);
    std::optional<int> status;
    while (!(status = child.wait_for(std::chrono::milliseconds(100)))) {
      if (g_signal != 0) {
        child.stop();
        std::cerr << "ibfabric: interrupted, fabric torn down\n";
        return 128 + g_signal;
      }
    }
    if (keep) std::cerr << "ibfabric: kept " << fabric.dir() << "\n";
    return *status;
  } catch (const std::exception& e) {
    std::cerr << "ibfabric: " << e.what() << "\n";
    return 2;
  }
}
