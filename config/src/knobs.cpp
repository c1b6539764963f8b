// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The knob table (see knobs.h). Add a knob here and it appears in rdma-qos.conf, the
// environment and `rdma-qos env` at once; document it in config/man/rdma-qos.conf.5.md too.
#include "rdma-qos/config/knobs.h"

#include "rdma-qos/common/number.h"
#include "rdma-qos/config/port_values.h"

#include <fmt/format.h>

#include <array>
#include <vector>

namespace rdmaqos::config {
namespace {

// Every number a knob takes is read by the project's one parser (decimal or 0x-hex, blanks
// around ignored), so a value this table accepts is the value its consumer reads.
std::optional<unsigned long long> parse_number(std::string_view t) {
  return parse_unsigned(t);
}

// Why a knob's value is refused.
Error invalid(std::string why) {
  return make_error(ErrorCode::kInvalidArgument, std::move(why));
}

// The flow-label setting: a mode name or a fixed 20-bit label.
Result<void> flow_label_value(std::string_view v) {
  for (std::string_view mode : {"rfc", "linux", "spread", "off"})
    if (v == mode) return {};
  auto n = parse_number(v);
  if (n && *n >= 1 && *n <= 0xFFFFF) return {};
  return invalid(fmt::format("'{}' is not rfc, linux, spread, off or a label 1..0xfffff", v));
}

// An optional number: empty means "not set".
Validator optional_unsigned_up_to(unsigned long long max) {
  auto inner = unsigned_up_to(max);
  return [inner](std::string_view v) -> Result<void> {
    if (v.empty()) return {};
    return inner(v);
  };
}

Validator port_values_up_to(uint64_t max) {
  return [max](std::string_view v) -> Result<void> {
    auto values = parse_port_values(v, max);
    if (values) return {};
    return values.error();
  };
}

// roce_sl2tclass: up to 16 comma-separated traffic classes, for SL 0, 1, ...
Result<void> sl2tclass_value(std::string_view v) {
  if (v.empty()) return {};
  size_t count = 0;
  while (true) {
    size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    auto n = parse_number(item);
    if (!n || *n > 255)
      return invalid(fmt::format("'{}' is not a list of traffic classes 0..255 for SL 0..15", v));
    if (++count > 16) return invalid(fmt::format("'{}' lists more than 16 SLs", v));
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return {};
}

Validator number_between(unsigned long long min, unsigned long long max) {
  return [min, max](std::string_view v) -> Result<void> {
    auto n = parse_number(v);
    if (n && *n >= min && *n <= max) return {};
    return invalid(fmt::format("'{}' is not a number {}..{} (decimal or 0x-hex)", v, min, max));
  };
}

// A numeric knob: its validator and the bounds HostConfig::number reads come from one range.
Knob numeric(std::string_view key, std::string_view env, std::string_view default_value,
             std::string_view doc, uint64_t min, uint64_t max) {
  return Knob{key, env,   default_value,        doc, number_between(min, max),
              {},  false, NumberRange{min, max}};
}

// The same for a number that may be left empty ("not set"): read with optional_number.
Knob optional_numeric(std::string_view key, std::string_view env, std::string_view doc,
                      uint64_t max) {
  return Knob{key, env, "", doc, optional_unsigned_up_to(max), {}, false, NumberRange{0, max}};
}

// A unicast LID per port (port_values.h), or empty.
Result<void> sa_lid_value(std::string_view v) {
  auto lids = parse_port_lids(v);
  if (lids) return {};
  return lids.error();
}

const std::vector<Knob>& table() {
  static const std::vector<Knob> kKnobs = {
      {"policy_file", "RDMA_QOS_POLICY", "/etc/rdma/qos-policy.conf",
       "QoS policy file in OpenSM's qos-policy.conf syntax, enforced host-side on RoCE", any_text(),
       "RDMA_QOS_POLICY_FILE"},
      {"flow_label", "RDMA_QOS_FLOW_LABEL", "rfc",
       "flow label mode for RoCE v2 QPs: rfc, linux, spread, off, or a fixed label (1..0xfffff)",
       &flow_label_value},
      optional_numeric(
          "sl", "RDMA_QOS_SL",
          "service level (0-15) applied to every QP of a plain verbs program; empty: not applied",
          15),
      optional_numeric(
          "tclass", "RDMA_QOS_TCLASS",
          "traffic class (0-255, DSCP << 2) applied to every RoCE QP of a plain verbs program; "
          "empty: not applied",
          255),
      {"apply_on_ib", "RDMA_QOS_APPLY_ON_IB", "0",
       "1: the verbs interposer also applies sl and tclass to QPs on InfiniBand ports (default: "
       "RoCE only; the SA's level for a plain-verbs QP with a class applies either way)",
       one_of({"0", "1"})},
      {"verbs_values", "RDMA_QOS_VERBS_VALUES", "keep",
       "plain-verbs QPs and address handles given a level by the policy: keep (a non-zero SL, "
       "traffic class or static rate the program set, and its ACK timeout, stay; zero gets the "
       "level's) or replace (the level's always); the MTU is only ever lowered, under both",
       one_of({"keep", "replace"})},
      numeric("verbs_sa_wait_ms", "RDMA_QOS_VERBS_SA_WAIT_MS", "250",
              "InfiniBand: the longest a plain-verbs QP's RTR transition waits for the SA's path "
              "(1-60000 ms); slower or failed answers leave the QP stock, and are remembered for "
              "cache_ttl",
              1, 60000),
      {"kernel_roce_tos", "RDMA_QOS_KERNEL_ROCE_TOS", "",
       "default TOS (0-255) of kernel rdma_cm users (iSER, NFS/RDMA, NVMe-oF...) per RoCE port: "
       "[DEV[:PORT]=]TOS, comma-separated; the most specific entry wins; empty: not set",
       port_values_up_to(255)},
      {"kernel_roce_sl", "RDMA_QOS_KERNEL_ROCE_SL", "",
       "default QoS level of kernel rdma_cm users per RoCE port, as an SL (0-15) whose traffic "
       "class roce_sl2tclass gives: [DEV[:PORT]=]SL, comma-separated; kernel_roce_tos wins "
       "where both cover a port; empty: not set",
       port_values_up_to(15)},
      {"kernel_roce_mode", "RDMA_QOS_KERNEL_ROCE_MODE", "",
       "default RoCE mode of kernel rdma_cm users: v1, v2, or empty (not set)",
       one_of({"", "v1", "v2"})},
      optional_numeric(
          "class", "RDMA_QOS_CLASS",
          "QoS-Class (0-4095) of rdma_cm connections whose program sets no TOS, and of plain-verbs "
          "QPs (their level from the host policy on RoCE, the SA on InfiniBand); empty: none",
          0xFFF),
      optional_numeric(
          "tos", "RDMA_QOS_TOS",
          "TOS (0-255) given to rdma_cm connections whose program sets none and whose level maps "
          "to no traffic class; empty: the kernel's default",
          255),
      optional_numeric(
          "service_id", "RDMA_QOS_SERVICE_ID",
          "Service-ID (64-bit) used instead of port space << 16 | port for every rdma_cm "
          "connection of the program, and matched on for its plain-verbs QPs; empty: computed per "
          "connection (plain verbs: none)",
          ~0ULL),
      {"roce_sl2tclass", "RDMA_QOS_ROCE_SL2TCLASS", "",
       "RoCE: traffic class (DSCP << 2, 0-255) for SL 0, 1, ... 15, comma-separated like "
       "opensm.conf's sl2vl; SLs not listed keep the program's TOS; empty: no mapping",
       &sl2tclass_value},
      {"cm_tag", "RDMA_QOS_CM_TAG", "1",
       "RoCE rdma_cm connections: 1 adds a 16-byte tag (the QoS-Class and TOS the policy was "
       "matched with) to the end of the connection request's private data when the program "
       "leaves room, and takes it out of requests received, so the accepting side matches "
       "once and gets the same level; 0 neither adds nor reads one",
       one_of({"0", "1"})},
      {"sa", "RDMA_QOS_SA", "auto",
       "InfiniBand: query the SA with Service-ID and QoS-Class before route resolution: auto "
       "(fall back to the kernel's route resolution when the SA fails, warning once per reason), "
       "on (the same, and also warn when MultiPathRecord cannot be used), off",
       one_of({"on", "off", "auto"})},
      {"sa_lid", "RDMA_QOS_SA_LID", "",
       "InfiniBand: LID of the SA (1-0xbfff), one for every port or per port "
       "([DEV[:PORT]=]LID, comma-separated); empty, or a port no entry names: the port's SM LID",
       &sa_lid_value},
      numeric("sa_timeout_ms", "RDMA_QOS_SA_TIMEOUT_MS", "1000",
              "InfiniBand: timeout of one SA query attempt in milliseconds (1-60000)", 1, 60000),
      numeric("sa_retries", "RDMA_QOS_SA_RETRIES", "2",
              "InfiniBand: SA query retries after the first attempt (0-10)", 0, 10),
      numeric("sa_backoff", "RDMA_QOS_SA_BACKOFF", "5",
              "InfiniBand: seconds an SA that timed out or could not be reached is not asked "
              "again by the process; its connections meanwhile use the kernel's route "
              "resolution at once (0: ask every time, up to 300)",
              0, 300),
      {"path_service", "RDMA_QOS_PATH_SERVICE", "/run/rdma-qos/paths.sock",
       "InfiniBand: the node's path service socket (rdma-qos-lsd), asked before the SA: one SA "
       "query per path for every process of the node, and no umad access needed; a process "
       "whose service is not running asks the SA itself; empty: never asked (each process asks "
       "the SA); rdma-qos-lsd listens here",
       any_text()},
      {"mpr", "RDMA_QOS_MPR", "0",
       "InfiniBand: 1 asks MultiPathRecord when the SA advertises it, 0 PathRecord",
       one_of({"0", "1"})},
      numeric("cache_ttl", "RDMA_QOS_CACHE_TTL", "10",
              "seconds a path answer stays in the per-process cache and in rdma-qos-lsd's node "
              "cache, and so the longest a running program keeps a path after a policy reload "
              "(twice that for a plain-verbs QP asked through the node's service; 0: no cache, "
              "up to 86400)",
              0, 86400),
      {"log_level", "RDMA_QOS_LOG", "warn",
       "messages of the preload module printed: error, warn, info or debug (each includes the "
       "ones before it)",
       one_of({"error", "warn", "info", "debug"}), "RDMA_QOS_LOG_LEVEL"},
      {"sad_socket", "RDMA_QOS_SAD_SOCKET", "",
       "control socket of the rdma-qos-sad that `rdma-qos sad` operates; empty: --ca/--port, "
       "else the only daemon in /run/rdma-qos",
       any_text()},
      {"preload_module",
       "RDMA_QOS_PRELOAD_MODULE",
       "",
       "preload module rdma-qos-run loads instead of the installed one (environment only: "
       "rdma-qos-run chooses it before the program starts); empty: the installed module",
       any_text(),
       {},
       true},
      {"cli",
       "RDMA_QOS_CLI",
       "",
       "the rdma-qos command rdma-qos-run asks for the HPC stacks' variables (environment "
       "only); empty: the one installed next to rdma-qos-run, else rdma-qos on PATH",
       any_text(),
       {},
       true},
      {"sad_options",
       "RDMA_QOS_SAD_OPTIONS",
       "",
       "rdma-qos-sad's command line in /etc/rdma/rdma-qos-sad/CA:PORT.conf, the environment "
       "file of rdma-qos-sad@CA:PORT.service (environment only); without that file the port "
       "runs no SA",
       any_text(),
       {},
       true},
      {"test_record", "RDMA_QOS_TEST_RECORD", "",
       "test hook: append the rdma_cm decisions and what the verbs interposer passed on to this "
       "file (JSON lines)",
       any_text()},
  };
  return kKnobs;
}

}  // namespace

std::span<const Knob> knobs() {
  return table();
}

const Knob* find_knob(std::string_view key) {
  for (const auto& k : table())
    if (k.key == key) return &k;
  return nullptr;
}

Validator one_of(std::initializer_list<std::string_view> choices) {
  std::vector<std::string> c(choices.begin(), choices.end());
  return [c](std::string_view v) -> Result<void> {
    for (const auto& choice : c)
      if (v == choice) return {};
    return invalid(fmt::format("'{}' is not one of: {}", v, fmt::join(c, ", ")));
  };
}

Validator unsigned_up_to(unsigned long long max) {
  return [max](std::string_view v) -> Result<void> {
    auto n = parse_number(v);
    if (n && *n <= max) return {};
    return invalid(fmt::format("'{}' is not a number 0..{} (decimal or 0x-hex)", v, max));
  };
}

Validator any_text() {
  return [](std::string_view) -> Result<void> { return {}; };
}

}  // namespace rdmaqos::config
