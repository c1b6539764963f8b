// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: the environment knobs. Every program the preload is loaded into reads its
// RDMA_QOS_* variables (and rdma-qos.conf) at start, so both are untrusted input. The input is
// the file's text, a NUL, then an environment block as /proc/PID/environ has it (NAME=value
// entries, each ended by a NUL). The loader must not crash, every diagnostic names the file or
// the variable, and what it keeps is usable: each knob's final text passes its own validator,
// and the parsers the components run on that text (the rdma_cm settings, the flow label mode,
// the per-port values) accept it and agree with HostConfig::number.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "rdma-qos/common/number.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/knobs.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/providers/flow_label_mode.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"

namespace {

std::map<std::string, std::string, std::less<>> g_env;  // this input's environment

std::optional<std::string> fuzz_env(std::string_view name) {
  auto it = g_env.find(name);
  if (it == g_env.end()) return std::nullopt;
  return it->second;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cfg = rdmaqos::config;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view text = in.substr(0, nul);
  g_env.clear();
  if (nul != std::string_view::npos) {
    std::string_view env = in.substr(nul + 1);
    while (!env.empty()) {
      size_t end = env.find('\0');
      std::string_view entry = env.substr(0, end);
      size_t eq = entry.find('=');
      if (eq != std::string_view::npos)  // as getenv: the first entry of a name wins
        g_env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
      if (end == std::string_view::npos) break;
      env.remove_prefix(end + 1);
    }
  }
  cfg::LoadResult r = cfg::parse_host_config(text, "fuzz.conf", &fuzz_env);
  for (const auto& d : r.errors)
    check(rdmaqos::format_diagnostic(d).rfind("fuzz.conf:", 0) == 0 ||
          rdmaqos::format_diagnostic(d).rfind("RDMA_QOS_", 0) == 0);
  for (const auto& d : r.warnings)
    check(rdmaqos::format_diagnostic(d).rfind("fuzz.conf:", 0) == 0 ||
          rdmaqos::format_diagnostic(d).rfind("RDMA_QOS_", 0) == 0);
  const cfg::HostConfig& c = r.config;
  // Invalid settings keep their defaults: whatever is left passes the knob's validator.
  for (const cfg::Knob& k : cfg::knobs()) {
    const std::string& v = c.text(k.key);
    if (k.validate) check(k.validate(v).ok());
    if (k.range && !k.default_value.empty()) check(c.number(k.key) <= k.range->max);
    if (k.range && k.default_value.empty()) {
      auto n = c.optional_number(k.key);
      check(!n || *n <= k.range->max);
    }
  }
  // What the preload's rdma_cm layer makes of them (preload/src/config.cpp).
  rdmaqos::rdmacm::CmSettings s = rdmaqos::rdmacm::cm_settings_from(c);
  if (!c.text("class").empty()) check(s.qos_class && *s.qos_class == c.optional_number("class"));
  if (!c.text("tos").empty()) check(s.tos && *s.tos == c.optional_number("tos"));
  if (!c.text("service_id").empty())
    check(s.service_id && *s.service_id == rdmaqos::parse_unsigned(c.text("service_id")));
  if (!c.text("roce_sl2tclass").empty())
    check(rdmaqos::rdmacm::parse_sl2tclass(c.text("roce_sl2tclass")).has_value());
  check(rdmaqos::providers::parse_flow_label_setting(c.text("flow_label")).ok());
  // The per-port values rdma-qos-lsd and `rdma-qos kernel` look up.
  for (auto [key, max] :
       {std::pair<std::string_view, uint64_t>{"kernel_roce_tos", 255}, {"kernel_roce_sl", 15}}) {
    auto values = cfg::parse_port_values(c.text(key), max);
    check(values.ok());
    for (const char* dev : {"", "mlx5_0", "rxe0"})
      for (uint32_t port : {0u, 1u, 2u})
        if (auto v = values->lookup(dev, port)) check(*v <= max);
  }
  return 0;
}
