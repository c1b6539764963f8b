// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The C++ side of qos_apply.h: the policy's qos-setup scopes (rdmaqos::fabric::SetupScopes),
// swapped whole on reload. OpenSM calls the table functions from its sweep thread with its lock
// held; a reload happens at the start of a heavy sweep, on the same thread, so no lock here.
#include "qos_apply.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "rdma-qos/config/read_file.h"
#include "rdma-qos/fabric/setup_scopes.h"
#include "rdma-qos/opensm-plugin/options.h"

struct rdma_qos_qa {
  std::unique_ptr<rdmaqos::fabric::SetupScopes> scopes;
  std::string text;  // the policy text in force: unchanged files are not parsed again
  uint64_t sm_port_guid = 0;
  bool needs_pkeys = false;       // a scope names a pkey group (or a resolved partition group)
  bool needs_partitions = false;  // a scope names a partition group
  // OpenSM's partitions as last given: a new policy resolves its names with them until the
  // sweep gives them again.
  std::optional<rdmaqos::fabric::PartitionKeys> partitions;
};

namespace {

using rdmaqos::fabric::PortRef;

constexpr size_t kMaxPolicyBytes = size_t{64} << 20;

void say(char* msg, size_t len, const std::string& s) {
  if (msg == nullptr || len == 0) return;
  std::snprintf(msg, len, "%s", s.c_str());
}

std::optional<PortRef> ref(const rdma_qos_qa_port* p) {
  if (p == nullptr) return std::nullopt;
  PortRef r;
  r.node_guid = p->node_guid;
  r.port_guid = p->port_guid;
  r.type = static_cast<rdmaqos::policy::NodeType>(p->node_type);
  r.description = p->description != nullptr ? p->description : "";
  r.port = p->port;
  if (p->pkeys != nullptr) {
    r.pkeys.reserve(p->num_pkeys);
    for (size_t i = 0; i < p->num_pkeys; ++i)
      if ((p->pkeys[i] & 0x7FFF) != 0) r.pkeys.push_back(p->pkeys[i] & 0x7FFF);
  }
  return r;
}

}  // namespace

extern "C" {

rdma_qos_qa* rdma_qos_qa_new(void) {
  try {
    return new rdma_qos_qa();
  } catch (...) {
    return nullptr;
  }
}

void rdma_qos_qa_free(rdma_qos_qa* qa) {
  delete qa;
}

int rdma_qos_qa_load(rdma_qos_qa* qa, const char* options, const char* osm_policy_file,
                     uint64_t sm_port_guid, char* msg, size_t msg_len) {
  if (qa == nullptr) return -1;
  try {
    auto parsed = rdmaqos::osmp::parse_options(options != nullptr ? options : "");
    std::optional<std::string> path;
    if (!parsed.options.no_policy) {
      if (parsed.options.policy) {
        path = parsed.options.policy;
      } else if (osm_policy_file != nullptr && access(osm_policy_file, R_OK) == 0) {
        path = osm_policy_file;
      }
    }
    if (!path) {
      const bool had = qa->scopes != nullptr;
      qa->scopes.reset();
      qa->text.clear();
      qa->needs_pkeys = false;
      qa->needs_partitions = false;
      if (had) say(msg, msg_len, "qos-setup: no policy; OpenSM's per-class tables apply");
      return 0;
    }
    auto read = rdmaqos::config::read_regular_file(*path, kMaxPolicyBytes);
    if (auto* err = std::get_if<rdmaqos::config::ReadError>(&read)) {
      say(msg, msg_len,
          fmt::format("qos-setup: {}: {}; the previous tables stay", *path, err->message));
      return -1;
    }
    const std::string& text = std::get<std::string>(read);
    if (qa->scopes && text == qa->text && sm_port_guid == qa->sm_port_guid)
      return qa->scopes->empty() ? 0 : 1;
    auto policy = rdmaqos::policy::parse_policy(text);
    if (!policy.ok()) {
      say(msg, msg_len, fmt::format("qos-setup: {} has errors; the previous tables stay", *path));
      return -1;
    }
    auto scopes = std::make_unique<rdmaqos::fabric::SetupScopes>(std::move(policy.policy),
                                                                 sm_port_guid, qa->partitions);
    const bool any = !scopes->empty();
    say(msg, msg_len,
        any ? fmt::format("qos-setup: {} sl2vl and {} vlarb scope(s) from {} in force",
                          scopes->policy().setup.sl2vl_scopes.size(),
                          scopes->policy().setup.vlarb_scopes.size(), *path)
            : fmt::format("qos-setup: {} has no qos-setup; OpenSM's per-class tables apply",
                          *path));
    qa->scopes = std::move(scopes);
    qa->text = text;
    qa->sm_port_guid = sm_port_guid;
    qa->needs_pkeys = rdmaqos::fabric::scopes_need_pkeys(qa->scopes->policy());
    qa->needs_partitions = rdmaqos::fabric::scopes_need_partitions(qa->scopes->policy());
    return any ? 1 : 0;
  } catch (...) {
    say(msg, msg_len, "qos-setup: out of memory; the previous tables stay");
    return -1;
  }
}

int rdma_qos_qa_needs_pkeys(const rdma_qos_qa* qa) {
  return qa != nullptr && qa->scopes && qa->needs_pkeys ? 1 : 0;
}

int rdma_qos_qa_needs_partitions(const rdma_qos_qa* qa) {
  return qa != nullptr && qa->scopes && qa->needs_partitions ? 1 : 0;
}

int rdma_qos_qa_set_partitions(rdma_qos_qa* qa, const char* const* names, const uint16_t* pkeys,
                               size_t n, char* msg, size_t msg_len) {
  if (msg != nullptr && msg_len > 0) msg[0] = '\0';
  if (qa == nullptr || !qa->scopes) return 0;
  try {
    rdmaqos::fabric::PartitionKeys given;
    for (size_t i = 0; i < n; ++i)
      if (names[i] != nullptr) given.emplace(names[i], pkeys[i] & 0x7FFF);
    if (qa->partitions == given) return 0;
    // The scopes resolve the names once, when built: rebuild them from the policy as parsed
    // (the names are still there; the P_Keys they resolved to are added again).
    auto policy = rdmaqos::policy::parse_policy(qa->text);
    auto scopes = std::make_unique<rdmaqos::fabric::SetupScopes>(std::move(policy.policy),
                                                                 qa->sm_port_guid, given);
    const auto& ds = scopes->diagnostics();
    say(msg, msg_len,
        ds.empty() ? fmt::format("qos-setup: {} partition(s) resolve the policy's partition groups",
                                 given.size())
                   : fmt::format("qos-setup: {} ({} warning(s))", ds.front().message, ds.size()));
    qa->scopes = std::move(scopes);
    qa->partitions = std::move(given);
    qa->needs_pkeys = rdmaqos::fabric::scopes_need_pkeys(qa->scopes->policy());
    return 1;
  } catch (...) {
    say(msg, msg_len, "qos-setup: out of memory; the previous partitions stay");
    return -1;
  }
}

int rdma_qos_qa_sl2vl(rdma_qos_qa* qa, const rdma_qos_qa_port* out,
                      const rdma_qos_qa_port* out_peer, uint8_t in, const rdma_qos_qa_port* in_peer,
                      uint8_t vl_by_sl[16]) {
  if (qa == nullptr || !qa->scopes || out == nullptr) return 0;
  try {
    rdmaqos::fabric::Sl2VlSite site{*ref(out), ref(out_peer), in, ref(in_peer)};
    auto c = qa->scopes->sl2vl(site);
    if (!c) return 0;
    std::memcpy(vl_by_sl, c->table.data(), 16);
    return 1;
  } catch (...) {
    return 0;
  }
}

int rdma_qos_qa_vlarb(rdma_qos_qa* qa, const rdma_qos_qa_port* port, const rdma_qos_qa_port* peer,
                      int high, size_t first, size_t n, uint8_t* vl, uint8_t* weight,
                      int* high_limit) {
  if (high_limit != nullptr) *high_limit = -1;
  if (qa == nullptr || !qa->scopes || port == nullptr) return 0;
  try {
    auto c = qa->scopes->vlarb(*ref(port), ref(peer));
    if (!c) return 0;
    if (high_limit != nullptr && c->high_limit) *high_limit = *c->high_limit;
    if (high ? !c->has_high : !c->has_low) return 0;
    const auto& t = high ? c->high : c->low;
    for (size_t i = 0; i < n; ++i) {
      const bool have = first + i < t.size();
      vl[i] = have ? t[first + i].vl : 0;
      weight[i] = have ? t[first + i].weight : 0;
    }
    return 1;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
