// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The C++ side of qos_apply.h: the policy's qos-setup scopes (rdmaqos::fabric::SetupScopes),
// swapped whole when the policy text or OpenSM's partitions change. OpenSM calls the table
// functions from its sweep thread with its lock held; the scopes change at the start of a heavy
// sweep and at its first table, on the same thread, so no lock here. The policy comes from the
// engine's PolicySource: read only when the file changed, parsed once for both users.
#include "qos_apply.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "rdma-qos/fabric/setup_scopes.h"
#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/opensm-plugin/policy_source.h"

struct rdma_qos_qa {
  rdmaqos::osmp::PolicySource* source = nullptr;
  rdmaqos::osmp::QosSetupCounters* counters = nullptr;
  rdma_qos_qa_log_fn log = nullptr;
  void* log_ctx = nullptr;

  // The policy the scopes come from (PolicySource's version of its text), and the scopes.
  std::shared_ptr<const rdmaqos::osmp::PolicyInputs> inputs;
  std::unique_ptr<rdmaqos::fabric::SetupScopes> scopes;
  uint64_t sm_port_guid = 0;
  bool needs_pkeys = false;       // a scope names a pkey group (or a resolved partition group)
  bool needs_partitions = false;  // a scope names a partition group
  // OpenSM's partitions as last given, and those the scopes in force resolved their names with
  // (nullopt: built without, their partition groups select no port yet).
  std::optional<rdmaqos::fabric::PartitionKeys> partitions, resolved_with;

  // Routing engines already said to keep their own tables.
  std::set<std::string> engines_said;
  // What was logged for the policy version `logged_version`: each line once per version.
  uint64_t logged_version = 0;
  std::set<std::string> logged;

  void say(bool error, const std::string& line, uint64_t version) {
    if (version != logged_version) {
      logged_version = version;
      logged.clear();
    }
    if (!logged.insert(line).second || log == nullptr) return;
    log(log_ctx, error ? 1 : 0, ("qos-setup: " + line).c_str());
  }
  // Builds the scopes from the policy as parsed, resolving partition names with `given` when a
  // scope needs them; logs their diagnostics once per version.
  void build(std::optional<rdmaqos::fabric::PartitionKeys> given) {
    const auto& parsed = *inputs->parsed;
    const uint64_t version = inputs->policy_version();
    needs_partitions = rdmaqos::fabric::scopes_need_partitions(parsed.policy);
    if (!needs_partitions) given.reset();
    scopes = std::make_unique<rdmaqos::fabric::SetupScopes>(parsed.policy, sm_port_guid, given);
    resolved_with = std::move(given);
    needs_pkeys = rdmaqos::fabric::scopes_need_pkeys(scopes->policy());
    if (counters != nullptr) {
      ++counters->builds;
      counters->scopes =
          scopes->policy().setup.sl2vl_scopes.size() + scopes->policy().setup.vlarb_scopes.size();
    }
    // The scopes' diagnostics are about partition groups. With no scope naming one they do
    // not concern qos-setup (the answers resolve those groups with the partitions file, and
    // say so themselves); built without OpenSM's partitions (before the sweep's first table),
    // every partition group would warn that it selects nothing: those wait for the partitions.
    if (!needs_partitions || !resolved_with) return;
    for (const auto& d : scopes->diagnostics())
      say(d.severity == rdmaqos::Severity::kError,
          rdmaqos::format_diagnostic(d, inputs->policy->path), version);
  }
};

namespace {

using rdmaqos::fabric::PortRef;

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

rdma_qos_qa* rdma_qos_qa_new(rdma_qos_osmp* plugin, rdma_qos_qa_log_fn log, void* ctx) {
  if (plugin == nullptr) return nullptr;
  try {
    auto* qa = new rdma_qos_qa();
    auto& engine = rdmaqos::osmp::engine_of(plugin);
    qa->source = &engine.policy_source();
    qa->counters = &engine.qos_setup_counters();
    qa->log = log;
    qa->log_ctx = ctx;
    return qa;
  } catch (...) {
    return nullptr;
  }
}

void rdma_qos_qa_free(rdma_qos_qa* qa) {
  delete qa;
}

int rdma_qos_qa_engine_keeps_tables(int has_update_sl2vl, int has_update_vlarb, int has_path_sl) {
  return rdmaqos::osmp::engine_keeps_own_tables(
             {"", has_path_sl != 0, has_update_sl2vl != 0 || has_update_vlarb != 0})
             ? 1
             : 0;
}

int rdma_qos_qa_note_skipped(rdma_qos_qa* qa, const char* engine) {
  if (qa == nullptr) return 1;
  try {
    return qa->engines_said.insert(engine != nullptr ? engine : "").second ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int rdma_qos_qa_load(rdma_qos_qa* qa, uint64_t sm_port_guid, int qos) {
  if (qa == nullptr) return -1;
  try {
    ++qa->counters->heavy_sweeps;
    auto inputs = qa->source->current();
    if (!inputs->policy) {
      if (qa->scopes)
        qa->say(false, "no policy; OpenSM's per-class tables apply", inputs->policy_version());
      qa->scopes.reset();
      qa->inputs = std::move(inputs);
      qa->needs_pkeys = qa->needs_partitions = false;
      qa->counters->scopes = 0;
      return 0;
    }
    const auto& file = *inputs->policy;
    if (!file.text) {
      qa->say(true, fmt::format("{}: {}; the previous tables stay", file.path, file.error->message),
              file.version);
      return -1;
    }
    if (!inputs->parsed->ok()) {
      qa->say(true, fmt::format("{} has errors; the previous tables stay", file.path),
              file.version);
      return -1;
    }
    const bool same = qa->scopes && qa->inputs && qa->inputs->policy &&
                      qa->inputs->policy_version() == file.version &&
                      qa->sm_port_guid == sm_port_guid;
    if (!same) {
      qa->inputs = inputs;
      qa->sm_port_guid = sm_port_guid;
      qa->build(qa->partitions);
    }
    const bool any = !qa->scopes->empty();
    const auto& setup = qa->scopes->policy().setup;
    qa->say(false,
            any ? fmt::format("{} sl2vl and {} vlarb scope(s) from {} in force",
                              setup.sl2vl_scopes.size(), setup.vlarb_scopes.size(), file.path)
                : fmt::format("{} has no qos-setup; OpenSM's per-class tables apply", file.path),
            file.version);
    if (any && !qos)
      qa->say(true,
              "qos-setup needs OpenSM's qos option (-Q): OpenSM programs no tables without it",
              file.version);
    return any ? 1 : 0;
  } catch (...) {
    if (qa->log != nullptr)
      qa->log(qa->log_ctx, 1, "qos-setup: out of memory; the previous tables stay");
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
                               size_t n) {
  if (qa == nullptr || !qa->scopes || !qa->needs_partitions) return 0;
  try {
    rdmaqos::fabric::PartitionKeys given;
    for (size_t i = 0; i < n; ++i)
      if (names[i] != nullptr) given.emplace(names[i], pkeys[i] & 0x7FFF);
    qa->partitions = given;
    if (qa->resolved_with == given) return 0;
    // The scopes resolve the names once, when built: built again from the policy as parsed
    // (never parsed again here).
    qa->build(std::move(given));
    qa->say(false,
            fmt::format("{} partition(s) resolve the policy's partition groups",
                        qa->resolved_with->size()),
            qa->inputs->policy_version());
    return 1;
  } catch (...) {
    if (qa->log != nullptr)
      qa->log(qa->log_ctx, 1, "qos-setup: out of memory; the previous partitions stay");
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
