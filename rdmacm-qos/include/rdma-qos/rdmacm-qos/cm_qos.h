// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rdma_cm layer's decisions as pure functions (Service-ID, QoS-Class, host-side policy match
// on RoCE, CM ports of a connection) and the per-id state, so they are tested without a device.
// The preload module wires them to librdmacm.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdma-qos/common/small_lock.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/providers/av_policy.h"
#include "rdma-qos/rdmacm-qos/cm_tag.h"

namespace rdmaqos::config {
class HostConfig;
}  // namespace rdmaqos::config

namespace rdmaqos::rdmacm {

class MatchCache;  // match_cache.h

// Port spaces (rdma_cma.h enum rdma_port_space).
inline constexpr int kPsIpoib = 0x0002;
inline constexpr int kPsTcp = 0x0106;
inline constexpr int kPsUdp = 0x0111;
inline constexpr int kPsIb = 0x013F;

// Service-ID = port space << 16 | port (Linux cma.c rdma_get_service_id).
constexpr uint64_t service_id(int port_space, uint16_t port) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(port_space)) << 16) | port;
}

// The port of an AF_INET / AF_INET6 address in host order; 0 for anything else.
uint16_t address_port(const sockaddr* addr);
// The flow label an AF_INET6 address carries (sin6_flowinfo), 0 otherwise.
uint32_t address_flow_label(const sockaddr* addr);
// The traffic class an AF_INET6 address carries (sin6_flowinfo bits 27:20, as IPv6 sockets
// take it), nullopt when none is set or for other families. A program that sets it asks for
// that TOS as it would with IPV6_TCLASS; the kernel's rdma_cm ignores it.
std::optional<uint8_t> address_traffic_class(const sockaddr* addr);
// The Service-ID an AF_IB address names (host order); nullopt for any other family.
std::optional<uint64_t> address_service_id(const sockaddr* addr);

// The CM ports the verbs layer folds into the symmetric label: dport is the service port,
// sport the active side's source port, on both sides. `local`/`remote` are the id's
// route.addr.src_addr / dst_addr.
providers::CmConnection cm_connection(const sockaddr* local, const sockaddr* remote, bool passive);

// Program-wide settings (host configuration knobs class, tos, service_id, roce_sl2tclass).
struct CmSettings {
  std::optional<uint16_t> qos_class;
  std::optional<uint8_t> tos;
  std::optional<uint64_t> service_id;
  std::array<std::optional<uint8_t>, 16> sl2tclass{};
  std::shared_ptr<const policy::CompiledPolicy> policy;  // null: no policy, stock behaviour
  // The QoS-Classes 1-255 the passive side tries (passive_classes); null: worked out per call.
  std::shared_ptr<const std::vector<uint16_t>> passive_classes;
  // decide_roce's results, shared by every copy of these settings; null: each call matches.
  std::shared_ptr<MatchCache> match_cache;
};

// The QoS-Classes 1-255 a passive side has to try to find the active side's level: one in each
// run of classes that every qos-class criterion of the policy treats alike (the lowest), since
// a class no rule tells apart from its neighbour matches as that neighbour does. Ascending.
std::vector<uint16_t> passive_classes(const policy::CompiledPolicy& policy);
// Works passive_classes out once for `s.policy` (call after setting it).
void index_passive_classes(CmSettings& s);
// Gives `s` a cache of decide_roce's results (match_cache.h): a policy set later empties it.
void cache_matches(CmSettings& s);

// Settings from the knobs class, tos, service_id and roce_sl2tclass, read through the knob
// table (its bounds); invalid settings were reported by the loader and mean "not set". In the
// static library only (cm_settings.cpp): librdmacm-qos reads no configuration.
CmSettings cm_settings_from(const config::HostConfig& config);

// The traffic classes of roce_sl2tclass ("104,0,72": SL 0, 1, 2); nullopt on bad text.
std::optional<std::array<std::optional<uint8_t>, 16>> parse_sl2tclass(const std::string& text);

// A policy for host-side matching, and what the host should say about it.
struct HostPolicy {
  std::shared_ptr<const policy::CompiledPolicy> policy;  // null when it has errors
  std::vector<std::string> messages;                     // errors and warnings, formatted
};
// Compiles `text` (OpenSM syntax) without a fabric. Rules that name source or destination
// groups cannot match on RoCE (no GUIDs there): each one gets a warning.
HostPolicy load_host_policy(const std::string& text, const std::string& file_name);

// Per-id inputs set by the program (rdma_set_option TOS, the rdma_qos.h overrides).
struct IdInputs {
  std::optional<uint16_t> class_override;
  std::optional<uint64_t> service_id_override;
  std::optional<uint8_t> program_tos;
};

struct CmDecision {
  uint64_t service_id = 0;
  std::optional<uint16_t> qos_class;
  uint8_t sl = 0;
  std::optional<uint8_t> traffic_class;  // from roce_sl2tclass; nullopt: TOS left alone
  std::optional<uint8_t> mtu_limit;      // enum ibv_mtu (IBA code)
  std::optional<uint8_t> rate_limit;     // enum ibv_rate (IBA code)
  // rate_limit is the matched level's own rate-limit (the host policy: RoCE), so the QP is
  // paced at it too (QosDecision::pace). An SA's answer (InfiniBand) carries the path's rate,
  // lowered to the level's rate-limit if the level has one: the host cannot tell which, so that
  // rate only goes into the address vector.
  bool level_rate_limit = false;
  std::optional<uint8_t> packet_life;   // the level's packet lifetime (IBA code, 0..31)
  std::optional<uint8_t> match_tclass;  // the traffic class matched with (the program's TOS)
  std::optional<size_t> rule;
  // The level's name, interned (level_name) so that it stays valid for the life of the process:
  // a decision is copied into the per-id and per-QP state at several steps of every connection,
  // and with a view it copies as plain bytes (a std::string copied its characters each time, and
  // allocated for names longer than its inline buffer, such as qos-ulps' levels).
  std::string_view level;
  // cm_tag_level_hash(level), worked out once per match (decide_roce) instead of at each
  // connection's tag; 0 when the decision was made without a match (then worked out on use).
  uint32_t level_hash = 0;
};

// The process-lifetime copy of a level name: one per distinct name (the names of the policies a
// process loads; a reload with the same names adds none). Thread-safe.
std::string_view level_name(std::string_view name);
// For a host module's fork handlers (level_name's lock, taken inside the registries' locks when
// a match runs under them): taken before fork, released after it on both sides.
void lock_level_names_for_fork();
void unlock_level_names_after_fork();

// The Service-ID and QoS-Class a connection queries with: overrides first, then the program's
// TOS as QoS-Class, then the settings.
uint64_t effective_service_id(int port_space, uint16_t port, const IdInputs& in,
                              const CmSettings& s);
// The same for an active id's destination address: an AF_IB address carries its own
// Service-ID (sib_sid, as the kernel's rdma_get_service_id takes it); IP addresses give
// port space << 16 | port.
uint64_t effective_service_id(int port_space, const sockaddr* dst, const IdInputs& in,
                              const CmSettings& s);
std::optional<uint16_t> effective_qos_class(const IdInputs& in, const CmSettings& s);

// RoCE: the host-side match (Service-ID, QoS-Class, PKey, and the traffic class for the
// policy's tclass rules: the program's TOS / IPV6_TCLASS); nullopt without a policy. Through
// `s.match_cache` when it has one; the traffic class of the level's SL is always `s`'s own
// roce_sl2tclass.
std::optional<CmDecision> decide_roce(uint64_t sid, std::optional<uint16_t> qos_class,
                                      uint16_t pkey, const CmSettings& s,
                                      std::optional<uint8_t> tclass = std::nullopt);

// The TOS to give the id before route resolution: the level's traffic class, else the
// program's own (nothing to do), else the configured default; nullopt: leave it.
std::optional<uint8_t> tos_to_set(const std::optional<CmDecision>& d, const IdInputs& in,
                                  const CmSettings& s);

// What the verbs layer applies: to a connection's QP, the level of `d`; to address handles
// created for a UD id's peer, also `flow_label`, the id's CM-port label (ud_flow_label), which is
// part of a UD id's decision even where no policy matched (`d` nullopt).
providers::QosDecision to_qos_decision(const std::optional<CmDecision>& d,
                                       std::optional<uint32_t> flow_label = std::nullopt);

// The CM-port label `mode` chooses for a UD id (RFC, Linux, spread or fixed); nullopt when the
// program chose its own label, the CM ports are unknown or the mode is off.
std::optional<uint32_t> ud_flow_label(const providers::CmConnection& cm,
                                      const providers::FlowLabelSetting& mode);

// Passive side: the REQ carries the active side's traffic class (its TOS) but not the QoS-Class
// it matched on. Both hosts share the configuration, so the passive side looks for the match
// that gives that traffic class: the Service-ID alone first, then the QoS-Class equal to the
// received traffic class, then every other QoS-Class 1-255 (a class a program set as TOS) in
// ascending order, trying one class per run of classes the policy treats alike;
// without one it matches on the Service-ID alone. `received_tclass` is the connection's path
// record traffic class; nullopt when unknown.
std::optional<CmDecision> decide_roce_passive(uint64_t sid, std::optional<uint8_t> received_tclass,
                                              uint16_t pkey, const CmSettings& s);

// The tag the active side's module sends for a connection (cm_tag.h): the QoS-Class and
// traffic class it matched with and the level it got (`d`), or the same inputs without a level
// when nothing matched.
CmTag tag_of(const std::optional<CmDecision>& d, const IdInputs& in, const CmSettings& s);

// Passive side, when the REQ carried the active side's tag: one match on what the active side
// matched with (the Service-ID both sides derive alike, the tag's QoS-Class and traffic class).
// `agrees` is false when this host's policy gives another level than the active side's (its
// level hash differs), or a level whose traffic class is not the one received: the hosts'
// policies (or roce_sl2tclass) differ, and this host's own level for those inputs applies.
struct TaggedDecision {
  std::optional<CmDecision> decision;
  bool agrees = true;
};
TaggedDecision decide_roce_tagged(uint64_t sid, const CmTag& tag,
                                  std::optional<uint8_t> received_tclass, uint16_t pkey,
                                  const CmSettings& s);

// Passive side: whether the active program chose its own flow label. The REQ's label is either
// the kernel's (sport * 31 + dport) & 0xFFFFF or the program's IPv6 sin6_flowinfo.
bool passive_application_label(uint32_t received_label, uint16_t dport, uint16_t sport);

// UD ids (RDMA_PS_UDP, RDMA_PS_IPOIB): the address handle attributes librdmacm hands the program
// (event->param.ud.ah_attr), changed so that ibv_create_ah from them carries the decision: SL,
// the level's traffic class, static rate; on RoCE v2 the id's label (ud_flow_label) when the
// label is 0 or the kernel's own sport * 31 + dport (the program chose none). True when changed.
bool apply_ud_decision(ibv_ah_attr& ah, const std::optional<CmDecision>& d,
                       const providers::CmConnection& cm, const providers::FlowLabelSetting& mode,
                       bool roce_v2);

// Per-id state, keyed by the id's address; thread-safe.
struct IdState {
  IdInputs inputs;
  std::optional<CmDecision> decision;
  std::optional<CmTag> peer_tag;  // passive side: the tag the connection request carried
  bool synchronous = false;       // created without an event channel, or migrated to none
};

class IdRegistry {
 public:
  // An id's state under the registry's lock (made when the id had none), for a step that reads
  // and writes it at once; the lock is released when this goes.
  class Locked {
   public:
    IdState& operator*() const { return *state_; }
    IdState* operator->() const { return state_; }

   private:
    friend class IdRegistry;
    Locked(std::unique_lock<SmallLock> lock, IdState& state)
        : lock_(std::move(lock)), state_(&state) {}
    std::unique_lock<SmallLock> lock_;
    IdState* state_;
  };

  static IdRegistry& instance();
  IdState get(const void* id) const;  // empty state when unknown
  Locked lock(const void* id);
  void set_class(const void* id, uint16_t qos_class);
  void set_service_id(const void* id, uint64_t sid);
  void set_program_tos(const void* id, uint8_t tos);
  void set_decision(const void* id, CmDecision d);
  void clear_decision(const void* id);
  void set_synchronous(const void* id, bool synchronous = true);
  void set_peer_tag(const void* id, CmTag tag);
  void erase(const void* id);
  // For a host module's fork handlers: fork() copies only the calling thread, so a lock another
  // thread held would stay held in the child. Taken before fork, released after, on both sides.
  void lock_for_fork();
  void unlock_after_fork();
};

}  // namespace rdmaqos::rdmacm
