// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The C functions of plugin.h over the C++ engine and builder: every exception stops here.
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/opensm-plugin/fabric_builder.h"
#include "rdma-qos/opensm-plugin/options.h"
#include "rdma-qos/opensm-plugin/plugin.h"

struct rdma_qos_osmp {
  std::unique_ptr<rdmaqos::osmp::Engine> engine;
};

namespace {

template <typename F>
void guarded(F&& f) noexcept {
  try {
    f();
  } catch (...) {
  }
}

}  // namespace

namespace rdmaqos::osmp {

Engine& engine_of(rdma_qos_osmp* plugin) {
  return *plugin->engine;
}

}  // namespace rdmaqos::osmp

extern "C" {

rdma_qos_osmp* rdma_qos_osmp_create(const char* options, const rdma_qos_osmp_osm_config* osm,
                                    rdma_qos_osmp_log_fn log, rdma_qos_osmp_snapshot_fn snapshot,
                                    rdma_qos_osmp_path_sl_fn path_sl, void* ctx) {
  try {
    auto say = [log, ctx](bool error, const std::string& line) {
      if (log != nullptr) log(ctx, error ? 1 : 0, line.c_str());
    };
    rdmaqos::osmp::OptionsResult parsed = rdmaqos::osmp::parse_options(options ? options : "");
    if (!parsed.errors.empty()) {
      for (const auto& e : parsed.errors) say(true, e);
      say(true, "the plugin's options have errors: not loaded, OpenSM's own handlers answer");
      return nullptr;
    }
    rdmaqos::osmp::OsmConfig config;
    if (osm != nullptr) {
      if (osm->qos && osm->qos_policy_file != nullptr)
        config.qos_policy_file = osm->qos_policy_file;
      if (osm->partition_config_file != nullptr)
        config.partition_config_file = osm->partition_config_file;
      config.subnet_timeout = osm->subnet_timeout;
      config.sa_key = osm->sa_key;
      config.qos = osm->qos != 0;
    }
    auto plugin = std::make_unique<rdma_qos_osmp>();
    plugin->engine = std::make_unique<rdmaqos::osmp::Engine>(
        std::move(parsed.options), std::move(config), say,
        [snapshot, ctx](rdmaqos::osmp::FabricBuilder& b) {
          return snapshot != nullptr &&
                 snapshot(ctx, reinterpret_cast<rdma_qos_osmp_builder*>(&b)) == 0;
        },
        [path_sl, ctx](uint8_t hint, uint16_t slid, uint16_t dlid) {
          return path_sl != nullptr ? path_sl(ctx, hint, slid, dlid) : -1;
        });
    plugin->engine->start();
    return plugin.release();
  } catch (const std::exception& e) {
    if (log != nullptr) log(ctx, 1, (std::string("cannot start: ") + e.what()).c_str());
    return nullptr;
  } catch (...) {
    return nullptr;
  }
}

void rdma_qos_osmp_destroy(rdma_qos_osmp* plugin) {
  guarded([&] { delete plugin; });
}

void rdma_qos_osmp_refresh(rdma_qos_osmp* plugin) {
  if (plugin != nullptr) guarded([&] { plugin->engine->refresh(); });
}

int rdma_qos_osmp_ready(const rdma_qos_osmp* plugin) {
  return plugin != nullptr && plugin->engine->ready() ? 1 : 0;
}

rdma_qos_osmp_result rdma_qos_osmp_answer(rdma_qos_osmp* plugin, const uint8_t* mad, size_t len,
                                          uint16_t slid, rdma_qos_osmp_send_fn send,
                                          const void* send_ctx, size_t send_ctx_size) {
  if (plugin == nullptr || mad == nullptr || send == nullptr) return RDMA_QOS_OSMP_FALLBACK;
  try {
    // A deferred answer is sent after the caller returned: it gets a copy of the context.
    rdmaqos::osmp::Engine::Send sender = [send, send_ctx](std::span<const uint8_t> bytes) {
      send(send_ctx, bytes.data(), bytes.size());
    };
    if (send_ctx_size > 0) {
      const auto* first = static_cast<const uint8_t*>(send_ctx);
      auto copy = std::make_shared<const std::vector<uint8_t>>(first, first + send_ctx_size);
      sender = [send, copy](std::span<const uint8_t> bytes) {
        send(copy->data(), bytes.data(), bytes.size());
      };
    }
    auto outcome = plugin->engine->answer(std::span<const uint8_t>(mad, len), slid,
                                          std::move(sender), send_ctx_size > 0);
    switch (outcome) {
      case rdmaqos::osmp::Engine::Outcome::kAnswered: return RDMA_QOS_OSMP_ANSWERED;
      case rdmaqos::osmp::Engine::Outcome::kDropped: return RDMA_QOS_OSMP_DROPPED;
      case rdmaqos::osmp::Engine::Outcome::kFallback: return RDMA_QOS_OSMP_FALLBACK;
      case rdmaqos::osmp::Engine::Outcome::kDeferred: return RDMA_QOS_OSMP_DEFERRED;
    }
  } catch (...) {
  }
  return RDMA_QOS_OSMP_FALLBACK;
}

// The builder handle given to the snapshot callback is the engine's FabricBuilder itself.
static rdmaqos::osmp::FabricBuilder& B(rdma_qos_osmp_builder* b) {
  return *reinterpret_cast<rdmaqos::osmp::FabricBuilder*>(b);
}

rdma_qos_osmp_builder* rdma_qos_osmp_builder_new(void) {
  return reinterpret_cast<rdma_qos_osmp_builder*>(new (std::nothrow)
                                                      rdmaqos::osmp::FabricBuilder());
}

void rdma_qos_osmp_builder_free(rdma_qos_osmp_builder* builder) {
  delete reinterpret_cast<rdmaqos::osmp::FabricBuilder*>(builder);
}

void rdma_qos_osmp_builder_subnet(rdma_qos_osmp_builder* builder, uint64_t sm_port_guid) {
  guarded([&] { B(builder).sm_port_guid(sm_port_guid); });
}

void rdma_qos_osmp_builder_routing(rdma_qos_osmp_builder* builder, const char* engine,
                                   int assigns_sl, int programs_sl2vl) {
  guarded([&] {
    B(builder).routing({engine != nullptr ? engine : "", assigns_sl != 0, programs_sl2vl != 0});
  });
}

void rdma_qos_osmp_builder_options(rdma_qos_osmp_builder* builder,
                                   int original_extended_rates_only) {
  guarded([&] { B(builder).original_extended_rates_only(original_extended_rates_only != 0); });
}

void rdma_qos_osmp_builder_alias(rdma_qos_osmp_builder* builder, uint64_t port_guid,
                                 uint64_t alias_guid) {
  guarded([&] { B(builder).alias(port_guid, alias_guid); });
}

void rdma_qos_osmp_builder_groups_known(rdma_qos_osmp_builder* builder) {
  guarded([&] { B(builder).groups_known(); });
}

void rdma_qos_osmp_builder_group(rdma_qos_osmp_builder* builder, const rdma_qos_osmp_group* group) {
  if (group == nullptr) return;
  guarded([&] {
    rdmaqos::sad::MulticastGroup g;
    std::memcpy(g.mgid.data(), group->mgid, g.mgid.size());
    g.mlid = group->mlid;
    g.pkey = group->pkey;
    g.sl = group->sl;
    g.mtu = group->mtu;
    g.rate = group->rate;
    g.packet_life = group->packet_life;
    B(builder).group(g);
  });
}

int rdma_qos_osmp_builder_node(rdma_qos_osmp_builder* builder, uint64_t guid, uint8_t type,
                               const char* description, uint8_t num_ports) {
  int index = -1;
  guarded([&] { index = B(builder).node(guid, type, description ? description : "", num_ports); });
  return index;
}

void rdma_qos_osmp_builder_port(rdma_qos_osmp_builder* builder, int node, uint8_t port,
                                const rdma_qos_osmp_port* info) {
  if (info != nullptr) guarded([&] { B(builder).port(node, port, *info); });
}

void rdma_qos_osmp_builder_pkey(rdma_qos_osmp_builder* builder, int node, uint8_t port,
                                uint16_t pkey) {
  guarded([&] { B(builder).pkey(node, port, pkey); });
}

void rdma_qos_osmp_builder_sl2vl(rdma_qos_osmp_builder* builder, int node, uint8_t port,
                                 uint8_t in_port, const uint8_t raw[8]) {
  guarded([&] {
    std::array<uint8_t, 8> t{};
    std::memcpy(t.data(), raw, t.size());
    B(builder).sl2vl(node, port, in_port, t);
  });
}

void rdma_qos_osmp_builder_lft(rdma_qos_osmp_builder* builder, int node, const uint8_t* lft,
                               size_t entries) {
  guarded([&] { B(builder).lft(node, std::vector<uint8_t>(lft, lft + entries)); });
}

}  // extern "C"
