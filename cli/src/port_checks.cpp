// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The mlx5 traffic class override read from sysfs, and the two warnings of `rdma-qos run-env`
// (see port_checks.h).
#include "port_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>

#include "rdma-qos/common/number.h"

namespace rdmaqos::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kGlobalPrefix = "Global tclass=";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Numbered subdirectories of `dir` (sysfs port numbers), in numeric order.
std::vector<int> numbered_entries(const fs::path& dir) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (auto n = parse_unsigned(e.path().filename().string(), 255))
      out.push_back(static_cast<int>(*n));
  std::sort(out.begin(), out.end());
  return out;
}

std::string port_text(const std::string& device, int port) {
  return fmt::format("{} port {}", device, port);
}

}  // namespace

std::optional<TclassOverride> parse_tclass_override(std::string_view text) {
  TclassOverride o;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    if (line.substr(0, kGlobalPrefix.size()) == kGlobalPrefix) {
      if (auto v = parse_unsigned(line.substr(kGlobalPrefix.size()), 255))
        o.global = static_cast<uint8_t>(*v);
    } else if (line.find("tclass=") != std::string_view::npos) {
      ++o.rules;
    }
  }
  if (!o.global && o.rules == 0) return std::nullopt;
  return o;
}

std::vector<TclassOverride> read_tclass_overrides(const fs::path& sysfs_root) {
  std::vector<fs::path> devices;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sysfs_root, ec)) devices.push_back(e.path());
  std::sort(devices.begin(), devices.end());
  std::vector<TclassOverride> out;
  for (const auto& dev : devices) {
    for (int port : numbered_entries(dev / "tc")) {
      std::ifstream in(dev / "tc" / std::to_string(port) / "traffic_class");
      if (!in) continue;
      const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (auto o = parse_tclass_override(text)) {
        o->device = dev.filename().string();
        o->port = port;
        out.push_back(std::move(*o));
      }
    }
  }
  return out;
}

std::optional<std::string> tclass_override_warning(const std::vector<TclassOverride>& overrides,
                                                   const fs::path& sysfs_root,
                                                   std::optional<uint8_t> policy_tc) {
  if (overrides.empty()) return std::nullopt;
  std::string ports;
  const TclassOverride* with_global = nullptr;
  for (const auto& o : overrides) {
    std::string what;
    if (o.global) {
      what = fmt::format("Global tclass={}", *o.global);
      if (with_global == nullptr) with_global = &o;
    }
    if (o.rules > 0)
      what += fmt::format("{}{} destination rule{}", what.empty() ? "" : ", ", o.rules,
                          o.rules == 1 ? "" : "s");
    ports += fmt::format("{}{} ({})", ports.empty() ? "" : ", ", port_text(o.device, o.port), what);
  }
  std::string text = fmt::format(
      "the mlx5 traffic class override is set on {}: the kernel gives every verbs QP with a GRH "
      "on {} that traffic class (a destination rule: the QPs to its destinations), over what "
      "UCX_IB_TRAFFIC_CLASS, NCCL_IB_TC and the other stack variables say{}; only QPs made "
      "through DEVX (UCX's mlx5 transports, NCCL's GIN GDAKI, NVSHMEM's IBGDA and IBDEVX) keep "
      "the variables' value",
      ports, overrides.size() == 1 ? "that port" : "those ports",
      policy_tc ? fmt::format(" (this class: {})", *policy_tc) : std::string());
  if (with_global != nullptr)
    text += fmt::format("; writing -1 to {} removes the port's global value",
                        (sysfs_root / with_global->device / "tc" /
                         std::to_string(with_global->port) / "traffic_class")
                            .string());
  return text;
}

std::optional<std::string> ar_sl_warning(uint8_t sl, const std::vector<ArSlMask>& ports,
                                         std::optional<std::string_view> ucx_ar_enable) {
  std::string outside;
  for (const auto& p : ports) {
    if (p.mask == 0 || (p.mask >> sl & 1) != 0) continue;
    std::string sls;
    for (int s = 0; s < 16; ++s)
      if ((p.mask >> s & 1) != 0) sls += fmt::format("{}{}", sls.empty() ? "" : ",", s);
    outside +=
        fmt::format("{}{} (adaptive routing on SL{} {})", outside.empty() ? "" : ", ",
                    port_text(p.device, p.port), (p.mask & (p.mask - 1)) != 0 ? "s" : "", sls);
  }
  if (outside.empty()) return std::nullopt;
  std::string text = fmt::format(
      "SL {} has no adaptive routing on {}: this class's traffic there is routed statically; "
      "give its level an SL with adaptive routing, or enable adaptive routing on SL {} in the "
      "subnet manager",
      sl, outside, sl);
  if (ucx_ar_enable) {
    std::string v(*ucx_ar_enable);
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (v == "y" || v == "yes" || v == "on" || v == "1")
      text +=
          fmt::format("; UCX refuses SL {} there under UCX_IB_AR_ENABLE={}", sl, *ucx_ar_enable);
  }
  return text;
}

}  // namespace rdmaqos::cli
