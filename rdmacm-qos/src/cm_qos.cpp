// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm layer's decisions (see cm_qos.h): Service-ID and QoS-Class of a connection, the
// host-side policy match for RoCE, the CM ports of both sides, and the per-id state.
#include "rdma-qos/rdmacm-qos/cm_qos.h"

#include <endian.h>
#include <infiniband/ib.h>
#include <netinet/in.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "rdma-qos/common/number.h"
#include "rdma-qos/common/pointer_map.h"
#include "rdma-qos/common/small_lock.h"
#include "rdma-qos/providers/entropy.h"
#include "rdma-qos/rdmacm-qos/match_cache.h"

namespace rdmaqos::rdmacm {

uint16_t address_port(const sockaddr* addr) {
  if (addr == nullptr) return 0;
  if (addr->sa_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in*>(addr)->sin_port);
  if (addr->sa_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_port);
  if (addr->sa_family == AF_IB) {
    // The port of an AF_IB address is the low 16 bits of its Service-ID under the mask.
    const auto* ib = reinterpret_cast<const sockaddr_ib*>(addr);
    return static_cast<uint16_t>(be64toh(ib->sib_sid) & be64toh(ib->sib_sid_mask) & 0xFFFF);
  }
  return 0;
}

std::optional<uint64_t> address_service_id(const sockaddr* addr) {
  if (addr == nullptr || addr->sa_family != AF_IB) return std::nullopt;
  return be64toh(reinterpret_cast<const sockaddr_ib*>(addr)->sib_sid);
}

uint32_t address_flow_label(const sockaddr* addr) {
  if (addr == nullptr || addr->sa_family != AF_INET6) return 0;
  return ntohl(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_flowinfo) & 0xFFFFF;
}

std::optional<uint8_t> address_traffic_class(const sockaddr* addr) {
  if (addr == nullptr || addr->sa_family != AF_INET6) return std::nullopt;
  const uint32_t flowinfo = ntohl(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_flowinfo);
  const auto tclass = static_cast<uint8_t>(flowinfo >> 20);
  if (tclass == 0) return std::nullopt;
  return tclass;
}

providers::CmConnection cm_connection(const sockaddr* local, const sockaddr* remote, bool passive) {
  providers::CmConnection c;
  // The passive side's local port is the service port, its remote port the active side's
  // source port: the same pair on both sides is what makes the label symmetric.
  c.dport = passive ? address_port(local) : address_port(remote);
  c.sport = passive ? address_port(remote) : address_port(local);
  // Only the active side sees the program's own label; the passive side receives the kernel's
  // choice in the REQ and cannot tell them apart.
  c.application_label = !passive && address_flow_label(local) != 0;
  return c;
}

std::optional<std::array<std::optional<uint8_t>, 16>> parse_sl2tclass(const std::string& text) {
  std::array<std::optional<uint8_t>, 16> out{};
  if (text.empty()) return out;
  std::string_view v = text;
  size_t sl = 0;
  while (true) {
    if (sl >= out.size()) return std::nullopt;
    size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    auto n = parse_unsigned(item, 255);
    if (!n) return std::nullopt;
    out[sl++] = static_cast<uint8_t>(*n);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return out;
}

HostPolicy load_host_policy(const std::string& text, const std::string& file_name) {
  HostPolicy out;
  auto compiled = policy::load_policy(text, nullptr);
  for (const auto& d : compiled.diagnostics)
    out.messages.push_back(rdmaqos::format_diagnostic(d, file_name));
  out.policy = compiled.policy;
  if (!out.policy) return out;
  for (const policy::MatchRule* r : out.policy->rules()) {
    if (r->sources.empty() && r->destinations.empty() && !r->source_guids && !r->destination_guids)
      continue;
    out.messages.push_back(fmt::format(
        "{}:{}:{}: warning: this rule names source or destination ports; on RoCE there is no "
        "SA and no port GUID to match, so the host never selects it",
        file_name, r->location.line, r->location.column));
  }
  return out;
}

uint64_t effective_service_id(int port_space, uint16_t port, const IdInputs& in,
                              const CmSettings& s) {
  if (in.service_id_override) return *in.service_id_override;
  if (s.service_id) return *s.service_id;
  return service_id(port_space, port);
}

uint64_t effective_service_id(int port_space, const sockaddr* dst, const IdInputs& in,
                              const CmSettings& s) {
  if (in.service_id_override) return *in.service_id_override;
  if (s.service_id) return *s.service_id;
  if (auto sid = address_service_id(dst)) return *sid;
  return service_id(port_space, address_port(dst));
}

std::optional<uint16_t> effective_qos_class(const IdInputs& in, const CmSettings& s) {
  if (in.class_override) return in.class_override;
  if (in.program_tos) return *in.program_tos;
  return s.qos_class;
}

namespace {

// level_name's names. Constant-initialised (no guard a fork could leave held); the set is made
// on first use under the lock and never freed, so a view of a name outlives any policy.
constinit SmallLock level_names_lock;
std::unordered_set<std::string>* level_names = nullptr;

// A decision's level hash, worked out when it was made without a match.
uint32_t level_hash_of(const CmDecision& d) {
  return d.level_hash != 0 ? d.level_hash : cm_tag_level_hash(d.level);
}

// The match itself, without the cache.
std::optional<CmDecision> match_roce(uint64_t sid, std::optional<uint16_t> qos_class, uint16_t pkey,
                                     const CmSettings& s, std::optional<uint8_t> tclass) {
  policy::PathQuery q;
  q.component_mask = policy::kCompServiceIdMsb | policy::kCompServiceIdLsb | policy::kCompPkey;
  q.service_id = sid;
  q.pkey = pkey;
  q.tclass = tclass;
  if (qos_class) {
    q.component_mask |= policy::kCompQosClass;
    q.qos_class = *qos_class;
  }
  auto m = s.policy->match(q);
  if (m.level == nullptr) return std::nullopt;
  CmDecision d;
  d.service_id = sid;
  d.qos_class = qos_class;
  d.sl = m.level->sl & 0xF;
  d.traffic_class = s.sl2tclass[d.sl];
  d.mtu_limit = m.level->mtu_limit;
  d.rate_limit = m.level->rate_limit;
  d.level_rate_limit = d.rate_limit.has_value();
  d.packet_life = m.level->packet_life;
  d.match_tclass = tclass;
  d.rule = m.rule;
  d.level = level_name(m.level->name);
  d.level_hash = cm_tag_level_hash(d.level);
  return d;
}

}  // namespace

std::string_view level_name(std::string_view name) {
  std::lock_guard lock(level_names_lock);
  if (level_names == nullptr) level_names = new std::unordered_set<std::string>;
  return *level_names->emplace(name).first;
}

void lock_level_names_for_fork() {
  level_names_lock.lock();
}

void unlock_level_names_after_fork() {
  level_names_lock.unlock();
}

std::optional<CmDecision> decide_roce(uint64_t sid, std::optional<uint16_t> qos_class,
                                      uint16_t pkey, const CmSettings& s,
                                      std::optional<uint8_t> tclass) {
  if (!s.policy) return std::nullopt;
  if (!s.match_cache) return match_roce(sid, qos_class, pkey, s, tclass);
  const MatchKey key{sid, qos_class, pkey, tclass};
  MatchCache::Lookup cached = s.match_cache->find(s.policy, key);
  if (!cached.hit) {
    cached.decision = match_roce(sid, qos_class, pkey, s, tclass);
    s.match_cache->insert(s.policy, key, cached.decision);
  } else if (cached.decision) {
    // The entry may come from settings with another roce_sl2tclass (copies share the cache).
    cached.decision->traffic_class = s.sl2tclass[cached.decision->sl];
  }
  return cached.decision;
}

std::optional<uint8_t> tos_to_set(const std::optional<CmDecision>& d, const IdInputs& in,
                                  const CmSettings& s) {
  if (d && d->traffic_class) return d->traffic_class;
  if (in.program_tos) return std::nullopt;  // already in the id
  return s.tos;
}

providers::QosDecision to_qos_decision(const std::optional<CmDecision>& d,
                                       std::optional<uint32_t> flow_label) {
  providers::QosDecision q;
  if (d) {
    q.sl = d->sl;
    q.traffic_class = d->traffic_class;
    if (d->rate_limit) {
      q.static_rate = *d->rate_limit;
      q.pace = d->level_rate_limit;
    }
    if (d->mtu_limit) q.path_mtu = static_cast<ibv_mtu>(*d->mtu_limit);
    // The kernel's CM gives a QP the local ACK timeout of its path's packet lifetime + 1 (the
    // time for a packet there and its ACK back); on RoCE it uses a fixed lifetime instead of
    // the level's, so the level's is applied here. 31 is the largest the field holds.
    if (d->packet_life)
      q.ack_timeout = static_cast<uint8_t>(std::min<int>(*d->packet_life + 1, 31));
  }
  q.flow_label = flow_label;
  return q;
}

std::optional<uint32_t> ud_flow_label(const providers::CmConnection& cm,
                                      const providers::FlowLabelSetting& mode) {
  if (cm.application_label || cm.dport == 0 || cm.sport == 0) return std::nullopt;
  return providers::cm_flow_label(mode, cm.dport, cm.sport);
}

std::vector<uint16_t> passive_classes(const policy::CompiledPolicy& policy) {
  // Boundaries of every qos-class range, within 1..255: each starts a run of classes that all
  // rules treat alike. A program's TOS is both its QoS-Class and its traffic class, so tclass
  // ranges split runs too.
  std::vector<uint16_t> out;
  auto bounds = [&out](const policy::RangeList& ranges) {
    for (const auto& r : ranges) {
      if (r.low >= 1 && r.low <= 255) out.push_back(static_cast<uint16_t>(r.low));
      if (r.high + 1 >= 1 && r.high + 1 <= 255) out.push_back(static_cast<uint16_t>(r.high + 1));
    }
  };
  for (const policy::MatchRule* rule : policy.rules()) {
    bounds(rule->qos_classes);
    bounds(rule->tclasses);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void index_passive_classes(CmSettings& s) {
  s.passive_classes =
      s.policy ? std::make_shared<const std::vector<uint16_t>>(passive_classes(*s.policy))
               : nullptr;
}

void cache_matches(CmSettings& s) {
  s.match_cache = std::make_shared<MatchCache>();
}

std::optional<CmDecision> decide_roce_passive(uint64_t sid, std::optional<uint8_t> received_tclass,
                                              uint16_t pkey, const CmSettings& s) {
  std::optional<CmDecision> plain = decide_roce(sid, std::nullopt, pkey, s);
  if (!received_tclass || !s.policy) return plain;
  const uint8_t t = *received_tclass;
  // The TOS the active side's match puts on the wire: the level's traffic class, else the
  // program's TOS (its QoS-Class), else the configured default.
  auto sent = [&](const std::optional<CmDecision>& d, std::optional<uint16_t> program_tos) {
    if (d && d->traffic_class) return static_cast<int>(*d->traffic_class);
    if (program_tos) return static_cast<int>(*program_tos);
    return static_cast<int>(s.tos.value_or(0));
  };
  if (plain && sent(plain, std::nullopt) == t) return plain;
  // A program TOS c is the active side's QoS-Class and its traffic class (tclass rules).
  auto with_class = [&](uint16_t c) -> std::optional<CmDecision> {
    auto d = decide_roce(sid, c, pkey, s, static_cast<uint8_t>(c));
    if (d && sent(d, c) == t) return d;
    return std::nullopt;
  };
  if (t != 0)
    if (auto d = with_class(t)) return d;
  // Classes no qos-class criterion tells apart from their run's first match as it does, and
  // without a traffic class of their level put only themselves on the wire (t, tried above):
  // one try per run finds what trying every class 1-255 would.
  std::vector<uint16_t> computed;
  if (!s.passive_classes) computed = passive_classes(*s.policy);
  for (uint16_t c : s.passive_classes ? *s.passive_classes : computed)
    if (c != t)
      if (auto d = with_class(c)) return d;
  return plain;
}

CmTag tag_of(const std::optional<CmDecision>& d, const IdInputs& in, const CmSettings& s) {
  CmTag tag;
  if (d) {
    tag.qos_class = d->qos_class;
    tag.tclass = d->match_tclass;
    tag.level_hash = level_hash_of(*d);
  } else {
    tag.qos_class = effective_qos_class(in, s);
    tag.tclass = in.program_tos;
  }
  return tag;
}

TaggedDecision decide_roce_tagged(uint64_t sid, const CmTag& tag,
                                  std::optional<uint8_t> received_tclass, uint16_t pkey,
                                  const CmSettings& s) {
  TaggedDecision out;
  out.decision = decide_roce(sid, tag.qos_class, pkey, s, tag.tclass);
  const auto& d = out.decision;
  if (d.has_value() != tag.level_hash.has_value() || (d && level_hash_of(*d) != *tag.level_hash))
    out.agrees = false;
  // What the active side's match put on the wire: the level's traffic class, else the
  // program's TOS (the configured default and the kernel's are not the level's to check).
  std::optional<uint8_t> sent = d && d->traffic_class ? d->traffic_class : tag.tclass;
  if (received_tclass && sent && *sent != *received_tclass) out.agrees = false;
  return out;
}

bool passive_application_label(uint32_t received_label, uint16_t dport, uint16_t sport) {
  received_label &= 0xFFFFF;
  return received_label != 0 && received_label != rdma_qos_flow_label_linux_cm(sport, dport);
}

bool apply_ud_decision(ibv_ah_attr& ah, const std::optional<CmDecision>& d,
                       const providers::CmConnection& cm, const providers::FlowLabelSetting& mode,
                       bool roce_v2) {
  bool changed = false;
  if (d) {
    if (ah.sl != d->sl) {
      ah.sl = d->sl;
      changed = true;
    }
    if (d->traffic_class && ah.is_global && ah.grh.traffic_class != *d->traffic_class) {
      ah.grh.traffic_class = *d->traffic_class;
      changed = true;
    }
    if (d->rate_limit && ah.static_rate != *d->rate_limit) {
      ah.static_rate = *d->rate_limit;
      changed = true;
    }
  }
  auto label = roce_v2 && ah.is_global ? ud_flow_label(cm, mode) : std::nullopt;
  if (label) {
    uint32_t kernel = rdma_qos_flow_label_linux_cm(cm.sport, cm.dport);
    if ((ah.grh.flow_label == 0 || ah.grh.flow_label == kernel) && *label != ah.grh.flow_label) {
      ah.grh.flow_label = *label;
      changed = true;
    }
  }
  return changed;
}

namespace {
// Every connection makes, reads and erases an entry on each side, and every rdma_destroy_id
// looks one up: one flat table, no allocation per id (pointer_map.h).
struct Registry {
  mutable SmallLock mutex;
  PointerMap<IdState> ids;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: ids may be used from atexit handlers
  return *r;
}
}  // namespace

IdRegistry& IdRegistry::instance() {
  static IdRegistry r;
  return r;
}

IdState IdRegistry::get(const void* id) const {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  const IdState* state = r.ids.find(id);
  return state == nullptr ? IdState{} : *state;
}

IdRegistry::Locked IdRegistry::lock(const void* id) {
  auto& r = registry();
  std::unique_lock lock(r.mutex);
  IdState& state = r.ids[id];
  return Locked(std::move(lock), state);
}

void IdRegistry::set_class(const void* id, uint16_t qos_class) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.ids[id].inputs.class_override = qos_class;
}

void IdRegistry::set_service_id(const void* id, uint64_t sid) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.ids[id].inputs.service_id_override = sid;
}

void IdRegistry::set_program_tos(const void* id, uint8_t tos) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.ids[id].inputs.program_tos = tos;
}

void IdRegistry::set_decision(const void* id, CmDecision d) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.ids[id].decision = std::move(d);
}

void IdRegistry::clear_decision(const void* id) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  if (IdState* state = r.ids.find(id)) state->decision.reset();
}

void IdRegistry::set_synchronous(const void* id, bool synchronous) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.ids[id].synchronous = synchronous;
}

void IdRegistry::set_peer_tag(const void* id, CmTag tag) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.ids[id].peer_tag = tag;
}

void IdRegistry::erase(const void* id) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.ids.erase(id);
}

void IdRegistry::lock_for_fork() {
  registry().mutex.lock();
}

void IdRegistry::unlock_after_fork() {
  registry().mutex.unlock();
}

}  // namespace rdmaqos::rdmacm
