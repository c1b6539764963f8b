// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The module's configuration, loaded once per process: the host configuration (knobs, file,
// environment) and what the rdma_cm layer derives from it (settings, the host policy, the SA
// options). Failures are logged once and leave stock behaviour.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/providers/flow_label_mode.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_cache.h"

namespace rdmaqos::preload {

// Null when the configuration could not be loaded at all (then: stock behaviour).
const config::HostConfig* preload_config();

struct CmConfig {
  rdmacm::CmSettings settings;  // classes, TOS, Service-ID, the host policy
  std::string record_path;      // test hook; empty: none
  // sa knob: auto and on query the SA on InfiniBand ports and fall back to the kernel's route
  // resolution when it fails (a warning once per reason); on also warns when MultiPathRecord
  // cannot be used (info under auto); off never queries.
  enum class Sa { kAuto, kOn, kOff } sa = Sa::kAuto;
  bool mpr = false;              // mpr knob: MultiPathRecord when the SA advertises it
  sa::ClientOptions sa_options;  // timeout, retries (the port is the id's)
  // sa_backoff knob: how long an SA that timed out or could not be reached is not asked.
  std::chrono::seconds sa_backoff{5};
  config::PortValues sa_lids;  // sa_lid knob: the SA's LID per port; none named: the SM's
  std::optional<sa::PathCacheOptions> path_cache;  // cache_ttl knob; none when 0
  // path_service knob: the node's path service socket, asked before the port's own SA client;
  // empty: never asked.
  std::string path_service;
  providers::FlowLabelSetting flow_label;  // for the labels of UD address handles
};

// Loaded on first use (or when the module is loaded), once.
const CmConfig& cm_config();

}  // namespace rdmaqos::preload
