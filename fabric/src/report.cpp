// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The check's findings as JSON (for scripts) and as lines (for people).
#include <fmt/format.h>

#include <cstdlib>

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
  const auto& fs = report.findings;
  for (size_t i = 0; i < fs.size(); ++i) {
    const Finding& f = fs[i];
    switch (f.kind) {
      case FindingKind::kDifference: {
        // A switch port's SL2VL tables usually differ alike for every input port: one line for
        // a run of consecutive input ports ("sl2vl 0-8->4"); --json keeps one finding a table.
        auto input = [](const Finding& g) {
          return g.table.starts_with("sl2vl ") ? std::atoi(g.table.c_str() + 6) : -2;
        };
        auto next = [&](const Finding& g, const Finding& prev) {
          return g.kind == f.kind && g.at.node_guid == f.at.node_guid && g.at.port == f.at.port &&
                 input(prev) >= 0 && input(g) == input(prev) + 1 && g.intended == f.intended &&
                 g.actual == f.actual && g.source == f.source;
        };
        size_t last = i;
        while (last + 1 < fs.size() && next(fs[last + 1], fs[last])) ++last;
        const std::string table =
            last == i ? f.table
                      : fmt::format("sl2vl {}-{}->{}", input(f), input(fs[last]), f.at.port);
        out.push_back(fmt::format("{}: {}: intended {} ({}), actual {}", port_text(f.at), table,
                                  f.intended, f.source, f.actual));
        i = last;
        break;
      }
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
