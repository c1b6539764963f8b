// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Kernel RoCE defaults through the rdma_cm configfs tree (see roce_defaults.h).
#include "rdma-qos/kmod-shim/roce_defaults.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rdma-qos/common/number.h"

namespace rdmaqos::kmod {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// configfs attributes take one write of the whole value; report the kernel's errno.
Result<void> write_value(const std::string& path, const std::string& value) {
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr)
    return make_error(ErrorCode::kTransport, fmt::format("{}: {}", path, strerror(errno)));
  bool ok = fputs(value.c_str(), f) >= 0;
  int err = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) return make_error(ErrorCode::kTransport, fmt::format("{}: {}", path, strerror(err)));
  return {};
}

ApplyResult failure(RocePort port, std::string file, Error error) {
  ApplyResult r;
  r.port = std::move(port);
  r.file = std::move(file);
  r.error = std::move(error);
  return r;
}

std::string mode_text(const std::string& mode) {
  return mode == "v1" ? "IB/RoCE v1" : "RoCE v2";
}

// The device's configfs directory appears on mkdir (the rdma_cm module creates its ports).
Result<void> ensure_device_dir(const KernelPaths& paths, const std::string& device) {
  std::string dir = paths.configfs_rdma_cm + "/" + device;
  if (mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return {};
  if (errno == ENOENT)
    return make_error(
        ErrorCode::kNotFound,
        fmt::format("{}: not found (is configfs mounted and the rdma_cm module loaded?)",
                    paths.configfs_rdma_cm));
  return make_error(ErrorCode::kTransport, fmt::format("{}: {}", dir, strerror(errno)));
}

}  // namespace

Result<std::vector<RocePort>> list_roce_ports(const KernelPaths& paths) {
  std::vector<RocePort> out;
  std::error_code ec;
  if (!fs::exists(paths.sysfs_infiniband, ec)) return out;  // no RDMA devices
  for (const auto& dev : fs::directory_iterator(paths.sysfs_infiniband, ec)) {
    fs::path ports = dev.path() / "ports";
    std::error_code pec;
    for (const auto& p : fs::directory_iterator(ports, pec)) {
      auto layer = read_line((p.path() / "link_layer").string());
      if (!layer || *layer != "Ethernet") continue;
      auto n = parse_unsigned(p.path().filename().string(), UINT32_MAX);
      if (!n) continue;
      out.push_back({dev.path().filename().string(), static_cast<uint32_t>(*n)});
    }
  }
  if (ec)
    return make_error(ErrorCode::kTransport,
                      fmt::format("{}: {}", paths.sysfs_infiniband, ec.message()));
  std::sort(out.begin(), out.end(), [](const RocePort& a, const RocePort& b) {
    return std::tie(a.device, a.port) < std::tie(b.device, b.port);
  });
  return out;
}

PortDefaults read_port_defaults(const KernelPaths& paths, const RocePort& port) {
  PortDefaults d{port, std::nullopt, std::nullopt};
  std::string base = fmt::format("{}/{}/ports/{}/", paths.configfs_rdma_cm, port.device, port.port);
  if (auto tos = read_line(base + "default_roce_tos")) {
    if (auto v = parse_unsigned(*tos, 255)) d.tos = static_cast<uint8_t>(*v);
  }
  d.mode = read_line(base + "default_roce_mode");
  return d;
}

Result<std::optional<uint64_t>> desired_tos(const DesiredDefaults& desired, std::string_view device,
                                            uint32_t port) {
  using Tos = std::optional<uint64_t>;
  if (auto tos = desired.tos.lookup(device, port)) return tos;
  auto sl = desired.sl.lookup(device, port);
  if (!sl) return Tos();
  if (*sl < desired.sl2tclass.size() && desired.sl2tclass[*sl]) return Tos(*desired.sl2tclass[*sl]);
  return make_error(
      ErrorCode::kInvalidArgument,
      fmt::format(
          "kernel_roce_sl: SL {} of {}:{} has no traffic class in roce_sl2tclass (list one for SL "
          "0..{}, or set kernel_roce_tos for this port)",
          *sl, device, port, *sl));
}

std::vector<ApplyResult> apply_roce_defaults(const KernelPaths& paths,
                                             const DesiredDefaults& desired,
                                             const std::optional<std::string>& device,
                                             std::optional<uint32_t> port, bool dry_run) {
  std::vector<ApplyResult> results;
  auto listed = list_roce_ports(paths);
  std::vector<RocePort> ports;
  if (listed)
    ports = std::move(listed).value();
  else
    results.push_back(failure({}, paths.sysfs_infiniband, listed.error()));
  bool matched = false;
  for (const auto& p : ports) {
    if (device && p.device != *device) continue;
    if (port && p.port != *port) continue;
    matched = true;
    auto wanted = desired_tos(desired, p.device, p.port);
    if (!wanted) {
      results.push_back(failure(p, "kernel_roce_sl", wanted.error()));
      continue;
    }
    const std::optional<uint64_t> tos = *wanted;
    if (!tos && desired.mode.empty()) continue;  // nothing asked for this port
    std::string base = fmt::format("{}/{}/ports/{}/", paths.configfs_rdma_cm, p.device, p.port);
    if (!dry_run) {
      if (auto made = ensure_device_dir(paths, p.device); !made) {
        results.push_back(failure(p, paths.configfs_rdma_cm + "/" + p.device, made.error()));
        continue;
      }
    }
    PortDefaults now = read_port_defaults(paths, p);
    auto handle = [&](const std::string& file, const std::optional<std::string>& before,
                      const std::string& after) {
      ApplyResult r{p, base + file, before.value_or(""), after, false, std::nullopt};
      if (before && *before == after) {
        results.push_back(r);
        return;
      }
      r.changed = true;
      if (!dry_run) {
        if (auto written = write_value(r.file, after); !written) {
          r.error = written.error();
          r.changed = false;
        }
      }
      results.push_back(r);
    };
    if (tos)
      handle("default_roce_tos", now.tos ? std::optional(std::to_string(*now.tos)) : std::nullopt,
             std::to_string(*tos));
    if (!desired.mode.empty()) handle("default_roce_mode", now.mode, mode_text(desired.mode));
  }
  if (!matched && (device || port))
    results.push_back(failure(
        {device.value_or(""), port.value_or(0)}, paths.sysfs_infiniband,
        make_error(
            ErrorCode::kNotFound,
            fmt::format("{}: no RoCE port {}{}", paths.sysfs_infiniband, device.value_or("*"),
                        port ? fmt::format(":{}", *port) : std::string()))));
  return results;
}

}  // namespace rdmaqos::kmod
