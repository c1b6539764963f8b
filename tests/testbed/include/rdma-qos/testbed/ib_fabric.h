// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The InfiniBand test bed: ibsim simulating a fabric, OpenSM (a real SM and SA) on it under
// umad2sim, and real clients run at chosen nodes. Each IbFabric owns a private directory and a
// private ibsim socket name, so fabrics in concurrent tests share nothing, and it kills every
// process it started when destroyed, when start-up fails, or when the test process dies.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/topology.h"

namespace rdmaqos::testbed {

struct IbFabricOptions {
  Topology topology = make_fat_tree({});
  std::string policy;      // OpenSM QoS policy text; empty: OpenSM runs without -Y
  std::string partitions;  // partitions.conf text; empty: OpenSM's default partition
  bool qos = true;         // run OpenSM with -Q (QoS on; SA advertises CapabilityMask2 bit 1)
  std::vector<std::string> opensm_args;  // appended to OpenSM's command line
  // The text of OpenSM's opensm.conf (-F), e.g. "subnet_timeout 16\n" or qos_ca_sl2vl tables;
  // empty: an empty file, so the host's /etc/opensm stays out of the test. "@DIR@" in it stands
  // for the fabric's private directory (files a plugin reads, its control socket).
  std::string opensm_conf;
  // Files (name -> text) written into the fabric's directory before OpenSM starts.
  std::map<std::string, std::string> files;
  // ibsim reads console commands (IbFabric::ibsim_command) instead of running with -n.
  bool ibsim_console = false;
  // Added to OpenSM's environment, e.g. LD_LIBRARY_PATH to an event plugin's directory.
  std::map<std::string, std::string> opensm_env;
  // OpenSM's LMC (-l): each CA port gets 2^lmc LIDs. Pair it with FatTreeSpec::lmc so the
  // topology's LIDs are aligned and kept.
  int lmc = 0;
  // OpenSM runs with rand() pinned (a test shim preloaded after umad2sim): DFSSSP's choice among
  // the VLs of a split layer becomes a function of the path, so answers compare byte for byte.
  bool pin_random = false;
  std::chrono::milliseconds start_timeout{std::chrono::seconds(60)};
  bool keep_dir = false;  // keep the private directory (logs) after teardown
};

// Options for a fabric on `topology` with everything else at its default.
inline IbFabricOptions fabric_options(Topology topology) {
  IbFabricOptions o;
  o.topology = std::move(topology);
  return o;
}

// One port of a host that has several InfiniBand devices or ports (host_env): port `port` of
// device `device` is the first port of ibsim node `node`.
struct HostPort {
  std::string device;
  int port = 1;
  std::string node;
};

class IbFabric {
 public:
  // Starts ibsim and OpenSM and returns once the SM is MASTER, the subnet is up and the SA
  // answers. Throws std::runtime_error (with the tail of the logs) on failure, leaving nothing
  // running.
  explicit IbFabric(IbFabricOptions options);
  ~IbFabric();
  IbFabric(const IbFabric&) = delete;
  IbFabric& operator=(const IbFabric&) = delete;

  const Topology& topology() const { return options_.topology; }
  // A node's LID and port GUID by its id ("node001"); std::out_of_range for an unknown id.
  uint16_t lid(const std::string& node) const { return topology().node(node).lid; }
  uint64_t port_guid(const std::string& node) const { return topology().node(node).port_guid; }
  // The LID in decimal, as saquery --slid / --dlid and `rdma-qos path --dlid` take it.
  std::string lid_arg(const std::string& node) const { return std::to_string(lid(node)); }
  const std::string& dir() const { return dir_; }
  const std::string& sockname() const { return sockname_; }

  // The environment that puts a libibumad program on the fabric at node `sim_host`.
  std::map<std::string, std::string> client_env(const std::string& sim_host) const;
  // The environment that makes a libibumad program a host with the devices and ports `ports`,
  // each port attached to its own node (umad_multi_ca preloaded instead of umad2sim; see
  // testing.md). `trace_path`, when given, gets a line per port opened and per MAD sent.
  std::map<std::string, std::string> host_env(const std::vector<HostPort>& ports,
                                              const std::string& trace_path = {}) const;
  // Runs argv at `sim_host` (umad2sim preloaded, cwd inside the fabric's directory).
  RunResult run_at(const std::string& sim_host, const std::vector<std::string>& argv,
                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;

  // Starts a daemon on the fabric (an SA of our own: `daemon.env` puts it at its node) and runs
  // `probe` at node001 every 200 ms until the probe succeeds, the daemon exits, or `budget`
  // passes. umad2sim's receive thread now and then crashes a process that has opened several
  // umad ports (rdma-qos-sad after its discovery; see testing.md): a daemon that died of that
  // crash before answering is started once more. It is told from a crash of ours by its stack
  // (a crash report preloaded into the daemon, or a sanitizer's report, read from
  // `daemon.output_path`; see start_failure.h); any other end is not retried. Either way the
  // verdict goes to stderr. `probe` in the result is the last probe's (exit code 0: answering).
  struct Started {
    std::unique_ptr<Process> daemon;
    RunResult probe;
  };
  Started start_until_answering(const ProcessOptions& daemon, const std::vector<std::string>& probe,
                                std::chrono::seconds budget = std::chrono::seconds(60)) const;

  std::vector<pid_t> pids() const;  // ibsim and OpenSM, while running
  // One line to ibsim's console (options.ibsim_console), e.g. `Unlink "leaf01"[3]` or
  // `ReLink "leaf01"[3]`; ibsim sends the ports' trap 128 and OpenSM sweeps. Throws without a
  // console.
  void ibsim_command(const std::string& line) const;
  std::string opensm_log() const;
  // Stops OpenSM and leaves ibsim running with the subnet as OpenSM configured it (LIDs,
  // routes, SL2VL tables), so an SA of our own can take over the SM's port. Idempotent.
  void stop_sm();
  // Restarts OpenSM with `lids` (node id -> new base LID) in its LID database, honoured
  // (honor_guid2lid_file): OpenSM moves those ports to them, and every port's SM LID with
  // the SM node's. Returns once the subnet is up again; lid() gives the new LIDs.
  void renumber(const std::map<std::string, uint16_t>& lids);
  // Stops OpenSM and ibsim (SIGTERM): every process on the fabric loses its simulator.
  void stop_ibsim();
  // Stops ibsim if it runs and starts it again on the same net file and socket name, then
  // OpenSM to configure the new simulator (it comes up with every port unconfigured); returns
  // once the SA answers. Processes that were on the old ibsim stay cut off: umad2sim connects
  // once, at start, and never again.
  void restart_ibsim();
  // Stops everything and removes the directory (unless keep_dir). Idempotent.
  void stop();

 private:
  void start();
  void start_ibsim();
  void start_opensm();
  void wait_until_ready();
  std::string logs_tail() const;

  IbFabricOptions options_;
  std::string dir_;
  std::string sockname_;
  std::unique_ptr<Process> ibsim_;
  std::unique_ptr<Process> opensm_;
  int console_fd_ = -1;            // the write end of ibsim's console FIFO
  size_t opensm_output_from_ = 0;  // where the running OpenSM's lines start in opensm.out
};

// The fabric most InfiniBand tests share: the default fat tree (make_fat_tree({})) with OpenSM
// enforcing `policy` (none when empty) and `partitions` (OpenSM's default when empty).
std::unique_ptr<IbFabric> start_fat_tree(std::string policy, std::string partitions = {});

// Where Debian installs ibsim's libumad interposer.
std::string umad2sim_library();
// The test bed's libibumad stand-in for hosts with several devices and ports (host_env).
std::string umad_multi_ca_library();

}  // namespace rdmaqos::testbed
