// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's own options: OpenSM's event_plugin_options string ("key=value" words) and the
// config file it may name (one "key value" or "key=value" a line, '#' comments).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
};

struct OptionsResult {
  Options options;
  std::vector<std::string> errors;  // "event_plugin_options: unknown key 'x'", "FILE:3: ..."
};

// Parses the options string; a `config=FILE` word reads FILE (its keys are the same) in its
// place, so later words override the file.
OptionsResult parse_options(std::string_view text);

}  // namespace rdmaqos::osmp
