// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's daemon: the configuration it runs with and the two-thread loop that answers
// MADs and serves the control socket, signals and re-discovery.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "rdma-qos/common/log.h"
#include "rdma-qos/common/result.h"
#include "rdma-qos/policy/opensm_conf.h"
#include "rdma-qos/sa-responder/agent.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/answer_defaults.h"
#include "rdma-qos/sa-responder/discovery.h"

namespace rdmaqos::sad {

// The daemon's logger: stderr in the foreground (the journal under systemd, with priorities),
// syslog in the background or with --syslog.
common::Logger& logger();
void log(const std::string& line);
void log_error(const std::string& line);
// A diagnostic "FILE:LINE:COL: error: ..." at the priority its severity says.
void log_diagnostic(const std::string& line);

// Exit statuses: a configuration the daemon cannot run with (policy, partitions, opensm.conf,
// no policy) is EX_CONFIG of sysexits.h, which the unit's RestartPreventExitStatus= names so
// systemd does not restart into the same error.
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kExitConfig = 78;

// A discovery that found live links nobody answered across (m_key_refusal): each said at ERROR
// with what to do, then "`action`" (what the caller does instead). kExitConfig when it must not
// be answered from, else 0.
int refuse_unanswered(const Discovery& found, uint64_t m_key, const std::string& action);

// The whole file, or why it cannot be read (config::read_regular_file's error: kNotFound,
// kInvalidArgument for what is not a regular file, kTransport).
rdmaqos::Result<std::string> read_file(const std::string& path);

// SIGHUP reloads, SIGUSR1 re-discovers, SIGTERM and SIGINT stop; SIGPIPE is ignored.
void install_signals();

struct Config {
  std::string policy_path, partitions_path, opensm_conf_path;
  bool no_policy = false;
  int subnet_timeout = 18;
  // OpenSM's use_original_extended_sa_rates_only (from --opensm-conf).
  bool original_extended_rates_only = false;
  uint64_t sa_key = kDefaultSaKey;
  std::optional<policy::QosConfig> qos;  // from --opensm-conf
};

struct DaemonOptions {
  std::chrono::seconds rediscover_interval{300};
  // Subscribe to the SM's traps 64, 65, 128 and 144 (InformInfo) and re-discover within seconds
  // of a report, whatever the period.
  bool sm_traps = true;
  // Re-discoveries are incremental; every Nth one (and one asked for with "full") reads the
  // whole fabric. 1: every one is full; 0: only on request.
  unsigned full_rediscovery_every = 12;
  std::chrono::seconds discovery_timeout{300};
  std::string control_socket;  // empty: the default path for the port
  bool control_socket_given = false;
  // A group whose members may read the stats (socket mode 0660); they may not reload or
  // re-discover, which stay with root and the daemon's own user.
  std::optional<gid_t> control_group;
  bool issm = true;
  RmppMode rmpp = RmppMode::kAuto;
  // Answering bounds (rdma-qos-sad(8), BOUNDED WORK): worker threads for answers that expand to
  // many pairs (0: every answer on the receiving thread), the most records in one table answer
  // and the time one answer may take from its request's arrival (0: no bound).
  size_t answer_threads = 2;
  size_t max_records = kDefaultMaxRecords;
  std::chrono::milliseconds answer_time_limit = kDefaultAnswerTimeLimit;
};

class Daemon {
 public:
  Daemon(Config config, DiscoveryOptions discovery, DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Discovery, policy, SA port and control socket; 0, or the exit status (logged why) when the
  // daemon cannot run: kExitConfig for policy or partitions errors.
  int start();
  // Answers until SIGTERM/SIGINT; the exit status.
  int run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmaqos::sad
