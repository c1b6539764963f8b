// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The check's findings as JSON (for scripts) and as lines (for people).
#include <fmt/format.h>

#include "rdma-qos/fabric/check.h"

namespace rdmaqos::fabric {
namespace {

nlohmann::json port_json(const PortAt& p) {
  return {{"node_guid", fmt::format("{:#018x}", p.node_guid)},
          {"node", p.node},
          {"port", p.port},
          {"lid", p.lid}};
}

std::string port_text(const PortAt& p) {
  return fmt::format("{} ({:#x}) port {}", p.node, p.node_guid, p.port);
}

}  // namespace

nlohmann::json to_json(const CheckReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings) {
    nlohmann::json j = {{"kind", finding_kind_name(f.kind)}};
    if (f.kind != FindingKind::kUnread) j["port"] = port_json(f.at);
    if (!f.table.empty()) j["table"] = f.table;
    if (f.kind == FindingKind::kDifference) {
      j["intended"] = f.intended;
      j["actual"] = f.actual;
      j["source"] = f.source;
    } else {
      j["message"] = f.message;
    }
    if (!f.ports.empty()) {
      j["ports"] = nlohmann::json::array();
      for (const auto& p : f.ports) j["ports"].push_back(port_json(p));
    }
    findings.push_back(std::move(j));
  }
  return {{"ports", report.ports},
          {"tables", report.tables},
          {"differences", report.differences()},
          {"status", report.exit_code() == 0   ? "clean"
                     : report.exit_code() == 1 ? "differences"
                                               : "unread"},
          {"findings", std::move(findings)}};
}

std::vector<std::string> to_lines(const CheckReport& report) {
  std::vector<std::string> out;
  for (const auto& f : report.findings) {
    switch (f.kind) {
      case FindingKind::kDifference:
        out.push_back(fmt::format("{}: {}: intended {} ({}), actual {}", port_text(f.at), f.table,
                                  f.intended, f.source, f.actual));
        break;
      case FindingKind::kLevelDropped:
      case FindingKind::kLevelNoWeight:
        out.push_back(fmt::format("{} on {} port{}, first {} ({})", f.message, f.ports.size(),
                                  f.ports.size() == 1 ? "" : "s", port_text(f.at), f.table));
        break;
      case FindingKind::kTooLong:
        out.push_back(fmt::format("warning: {} on {} port{}, first {}", f.message, f.ports.size(),
                                  f.ports.size() == 1 ? "" : "s", port_text(f.at)));
        break;
      case FindingKind::kUnread: out.push_back("not read: " + f.message); break;
    }
  }
  out.push_back(fmt::format("{} port{}, {} table{} checked: {} difference{}", report.ports,
                            report.ports == 1 ? "" : "s", report.tables,
                            report.tables == 1 ? "" : "s", report.differences(),
                            report.differences() == 1 ? "" : "s"));
  return out;
}

}  // namespace rdmaqos::fabric
