// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos flow`: RoCE v2 flow labels and UDP source ports by the formulas the verbs side
// applies (label from CM ports or QPNs per mode; UDP source port from a label).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.h"
#include "rdma-qos/providers/entropy.h"
#include "rdma-qos/providers/flow_label_mode.h"

namespace rdmaqos::cli::cmd_flow {
namespace {

using providers::parse_unsigned;

struct FlowArgs {
  std::vector<std::string> cm_ports;
  std::vector<std::string> qpns;
  std::string mode = "rfc";
  std::string label;
  bool json = false;
};

// CLI11 validator: decimal or 0x-hex unsigned not above `max`.
CLI::Validator number_up_to(uint64_t max, const std::string& what) {
  return CLI::Validator(
      [max, what](std::string& value) -> std::string {
        if (parse_unsigned(value, max)) return "";
        return fmt::format("{} must be a number 0..{} (decimal or 0x-hex), not '{}'", what, max,
                           value);
      },
      what);
}

void print(const FlowArgs& a, uint32_t label, const nlohmann::json& input) {
  uint16_t sport = rdma_qos_udp_sport_from_flow_label(label);
  if (a.json) {
    nlohmann::json out = input;
    out["flow_label"] = label;
    out["udp_sport"] = sport;
    std::cout << out.dump() << "\n";
  } else {
    std::cout << fmt::format("flow label {} (0x{:05x})\nUDP source port {} (0x{:04x})\n", label,
                             label, sport, sport);
  }
}

void run_label(const FlowArgs& a) {
  auto setting = providers::parse_flow_label_setting(a.mode);
  if (!setting) {
    std::cerr << "rdma-qos flow label: --mode: " << setting.error().message << "\n";
    set_exit_code(2);
    return;
  }
  std::optional<uint32_t> label;
  nlohmann::json input{{"mode", providers::to_string(*setting)}};
  if (!a.cm_ports.empty()) {
    auto d = static_cast<uint16_t>(*parse_unsigned(a.cm_ports[0], 0xFFFF));
    auto s = static_cast<uint16_t>(*parse_unsigned(a.cm_ports[1], 0xFFFF));
    label = providers::cm_flow_label(*setting, d, s);
    input["cm_dport"] = d;
    input["cm_sport"] = s;
  } else {
    auto l = static_cast<uint32_t>(*parse_unsigned(a.qpns[0], 0xFFFFFF));
    auto r = static_cast<uint32_t>(*parse_unsigned(a.qpns[1], 0xFFFFFF));
    label = providers::qpn_flow_label(*setting, l, r);
    input["qpn_a"] = l;
    input["qpn_b"] = r;
  }
  if (!label) {
    std::cerr << "rdma-qos flow label: mode 'off' leaves the kernel's label; nothing to compute\n";
    set_exit_code(1);
    return;
  }
  print(a, *label, input);
}

void setup_flow(CLI::App& app) {
  auto* flow = app.add_subcommand("flow", "RoCE v2 flow labels and UDP source ports");
  flow->require_subcommand(1);
  auto args = std::make_shared<FlowArgs>();

  auto* label = flow->add_subcommand(
      "label", "flow label (and its UDP source port) of a connection, by the verbs-side formulas");
  auto* cm = label
                 ->add_option("--cm-ports", args->cm_ports,
                              "DPORT SPORT: CM service port and active-side CM source port")
                 ->expected(2)
                 ->check(number_up_to(0xFFFF, "port"));
  auto* qp = label->add_option("--qpns", args->qpns, "A B: the two 24-bit QP numbers")
                 ->expected(2)
                 ->check(number_up_to(0xFFFFFF, "QPN"));
  cm->excludes(qp);
  label->add_option("--mode", args->mode, "rfc (default), linux, spread, off, or a fixed label")
      ->capture_default_str();
  label->add_flag("--json", args->json, "print JSON");
  label->callback([args] {
    if (args->cm_ports.empty() && args->qpns.empty())
      throw CLI::RequiredError("one of --cm-ports or --qpns");
    run_label(*args);
  });

  auto* sport = flow->add_subcommand("sport", "RoCE v2 UDP source port of a flow label");
  sport->add_option("label", args->label, "flow label, decimal or 0x-hex (20 bits)")
      ->required()
      ->check(number_up_to(0xFFFFF, "flow label"));
  sport->add_flag("--json", args->json, "print JSON");
  sport->callback([args] {
    auto fl = static_cast<uint32_t>(*parse_unsigned(args->label, 0xFFFFF));
    print(*args, fl, nlohmann::json::object());
  });
}

const CommandRegistration kRegistration{"flow", &setup_flow};

}  // namespace
}  // namespace rdmaqos::cli::cmd_flow
