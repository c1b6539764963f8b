// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's own options: OpenSM's event_plugin_options string ("key=value" words) and the
// config file it may name (one "key value" or "key=value" a line, '#' comments).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/sa-responder/answer_defaults.h"

namespace rdmaqos::osmp {

inline constexpr const char* kDefaultControlSocket = "/run/rdma-qos/opensm-plugin.sock";

struct Options {
  std::optional<std::string> policy;                   // QoS policy file (OpenSM syntax)
  bool no_policy = false;                              // policy=none: partition SLs only
  std::optional<std::string> partitions;               // partitions.conf
  std::string control_socket = kDefaultControlSocket;  // "" or "none": no control socket
  // A group whose members may read the stats through the socket (mode 0660), so monitoring
  // needs no root; reload and rediscover stay root's (and OpenSM's user's).
  std::optional<std::string> control_socket_group;
  // Answering bounds, as rdma-qos-sad's --max-records and --answer-time-limit: a table answer
  // of more records, or an answer still computed that long after its request arrived, is
  // ERR_NO_RESOURCES (0: no bound, as OpenSM's own handlers).
  size_t max_records = sad::kDefaultMaxRecords;
  std::chrono::milliseconds answer_time_limit = sad::kDefaultAnswerTimeLimit;
  // Threads of the plugin's own that compute large answers (open-ended GetTables), so that
  // OpenSM's dispatcher threads, which also carry the SM's own work, return at once; when they
  // are all busy and their queue is full, a large request is answered BUSY, as by rdma-qos-sad
  // (--answer-threads). 0: every answer on OpenSM's dispatcher thread.
  size_t answer_threads = 2;
};

// The most answer threads the plugin starts.
inline constexpr uint64_t kMaxAnswerThreads = 64;

// The longest answer-time-limit (rdma-qos-sad's bound too): an hour.
inline constexpr uint64_t kMaxAnswerTimeLimitMs = 3600000;

struct OptionsResult {
  Options options;
  std::vector<std::string> errors;  // "event_plugin_options: unknown key 'x'", "FILE:3: ..."
};

// Parses the options string; a `config=FILE` word reads FILE (its keys are the same) in its
// place, so later words override the file.
OptionsResult parse_options(std::string_view text);

}  // namespace rdmaqos::osmp
