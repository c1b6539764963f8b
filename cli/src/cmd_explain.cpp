// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The explain subcommand of `rdma-qos sad` and `rdma-qos opensm-plugin`: sends one concrete
// query to the running SA's control socket and shows the rule, the level, the answer and why a
// LID combination got no record.
#include "cmd_explain.h"
#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/common/number.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string_view>

#include "command.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-responder/control.h"
#include "rdma-qos/sa-responder/explain.h"

namespace rdmaqos::cli {
namespace cmd_explain {
namespace {

using nlohmann::json;

struct ExplainArgs {
  std::optional<uint16_t> slid, dlid, pkey, qos_class, sl;
  std::string sgid, dgid;
  std::optional<uint64_t> service_id;
  std::string mtu, rate, pkt_life;  // [>|<|=|+]CODE
  bool json = false;
  double timeout = 30;
};

// "[>|<|=|+]CODE" (no prefix: exactly), as a PathRecord's selector and 6-bit value.
std::optional<sad::ExplainRequest::Selected> selected(const std::string& text) {
  sad::ExplainRequest::Selected out;
  std::string number = text;
  if (!text.empty() && std::string_view("><=+").find(text[0]) != std::string_view::npos) {
    static constexpr std::pair<char, sa::Selector> kPrefixes[] = {{'>', sa::Selector::kGreaterThan},
                                                                  {'<', sa::Selector::kLessThan},
                                                                  {'=', sa::Selector::kExactly},
                                                                  {'+', sa::Selector::kBest}};
    for (auto [c, s] : kPrefixes)
      if (text[0] == c) out.selector = s;
    number = text.substr(1);
  }
  auto v = parse_unsigned(number, 63);
  if (!v) return std::nullopt;
  out.value = static_cast<uint8_t>(*v);
  return out;
}

void print_text(const json& e) {
  if (e.contains("error")) {
    std::cout << e.value("error", "") << "\n";
    return;
  }
  auto end = [](const json& p) {
    return fmt::format("'{}' port {} (LID {}, LMC {}, GUID {})", p.value("node", "?"),
                       p.value("port", 0), p.value("lid", 0), p.value("lmc", 0),
                       p.value("guid", "?"));
  };
  std::cout << "source:      " << end(e["source"]) << "\n";
  std::cout << "destination: " << end(e["destination"]) << "\n";
  if (e["rule"].is_object()) {
    const json& r = e["rule"];
    std::cout << fmt::format("rule:        #{} at {}{}\n", r.value("index", 0),
                             r.value("location", "?"),
                             r.value("use", "").empty() ? "" : " (" + r.value("use", "") + ")");
  } else if (e.value("rule_default", false)) {
    std::cout << "rule:        none matched: the default level\n";
  } else {
    std::cout << "rule:        no policy (partition SLs)\n";
  }
  if (e["level"].is_object()) {
    const json& l = e["level"];
    std::string limits = fmt::format("SL {}", l.value("sl", 0));
    if (l.contains("mtu_limit")) limits += fmt::format(", mtu-limit {}", l["mtu_limit"].get<int>());
    if (l.contains("rate_limit"))
      limits += fmt::format(", rate-limit {}", l["rate_limit"].get<int>());
    if (l.contains("packet_life"))
      limits += fmt::format(", packet-life {}", l["packet_life"].get<int>());
    std::string bits;
    for (const json& r : l["path_bits"]) {
      if (!bits.empty()) bits += ",";
      bits += r[0] == r[1] ? fmt::format("{}", r[0].get<uint64_t>())
                           : fmt::format("{}-{}", r[0].get<uint64_t>(), r[1].get<uint64_t>());
    }
    if (!bits.empty()) limits += ", path-bits " + bits;
    std::cout << fmt::format("level:       {} at {}: {}\n", l.value("name", "?"),
                             l.value("location", "?"), limits);
  }
  for (const json& r : e["records"]) {
    std::cout << fmt::format(
        "record:      SLID {} DLID {} SL {} PKey {} MTU {} rate {} packet-life {} "
        "reversible {} preference {}\n",
        r.value("slid", 0), r.value("dlid", 0), r.value("sl", 0), r.value("pkey", "?"),
        r.value("mtu", 0), r.value("rate", 0), r.value("packet_life", 0),
        r.value("reversible", false) ? 1 : 0, r.value("preference", 0));
  }
  for (const json& n : e["no_record"]) {
    std::cout << fmt::format("no record:   SLID {} DLID {}: {} ({})\n", n.value("slid", 0),
                             n.value("dlid", 0), n.value("detail", ""), n.value("reason", ""));
  }
  std::cout << e.value("summary", "") << "\n";
}

void run(const ExplainArgs& a, const std::string& front, const std::optional<std::string>& socket) {
  if (!socket) {
    set_exit_code(2);
    return;
  }
  sad::ExplainRequest r;
  r.slid = a.slid;
  r.dlid = a.dlid;
  r.service_id = a.service_id;
  r.qos_class = a.qos_class;
  r.pkey = a.pkey;
  r.sl = a.sl;
  for (auto [text, out] : {std::pair{&a.mtu, &r.mtu}, std::pair{&a.rate, &r.rate},
                           std::pair{&a.pkt_life, &r.packet_life}}) {
    if (text->empty()) continue;
    *out = selected(*text);
    if (!*out) {
      std::cerr << fmt::format("rdma-qos {} explain: '{}' is not [>|<|=|+]CODE (0..63)\n", front,
                               *text);
      set_exit_code(2);
      return;
    }
  }
  for (auto [text, out] : {std::pair{&a.sgid, &r.sgid}, std::pair{&a.dgid, &r.dgid}}) {
    if (text->empty()) continue;
    *out = sa::parse_gid(*text);
    if (!*out) {
      std::cerr << fmt::format("rdma-qos {} explain: '{}' is not a GID\n", front, *text);
      set_exit_code(2);
      return;
    }
  }
  auto reply = sad::control_call(*socket, sad::explain_request_json(r),
                                 std::chrono::milliseconds(static_cast<long>(a.timeout * 1000)));
  if (!reply) {
    std::cerr << fmt::format("rdma-qos {} explain: {}: {}\n", front, *socket,
                             reply.error().message);
    set_exit_code(2);
    return;
  }
  const json& body = *reply;
  if (!body.value("ok", false) || !body.contains("explain") || !body["explain"].is_object()) {
    if (a.json) {
      std::cout << body.dump() << "\n";
    } else {
      std::cerr << fmt::format("rdma-qos {} explain: {}\n", front,
                               body.value("message", "the SA could not explain"));
    }
    set_exit_code(2);
    return;
  }
  const json& e = body["explain"];
  if (a.json) {
    std::cout << e.dump() << "\n";
  } else {
    print_text(e);
  }
  if (e.contains("error")) {
    set_exit_code(2);
  } else {
    set_exit_code(e.value("answered", false) ? 0 : 1);
  }
}

}  // namespace
}  // namespace cmd_explain

CLI::App* add_explain_command(CLI::App* parent, const std::string& front,
                              std::function<std::optional<std::string>()> socket) {
  auto* sub = parent->add_subcommand(
      "explain",
      "ask the running SA about one query: the rule and level it matches, its answer, and why "
      "a path got no record");
  auto a = std::make_shared<cmd_explain::ExplainArgs>();
  add_number(*sub, "--slid", a->slid, "source LID");
  sub->add_option("--sgid", a->sgid, "source GID");
  add_number(*sub, "--dlid", a->dlid, "destination LID (names that one LID of the port)");
  sub->add_option("--dgid", a->dgid, "destination GID");
  add_number(*sub, "--service-id", a->service_id, "Service ID");
  add_number(*sub, "--qos-class", a->qos_class, "QoS class (12 bits)")->check(CLI::Range(0, 0xFFF));
  add_number(*sub, "--pkey", a->pkey, "partition key");
  add_number(*sub, "--sl", a->sl, "service level")->check(CLI::Range(0, 15));
  sub->add_option("--mtu", a->mtu, "MTU with selector: [>|<|=|+]CODE (1..5: 256..4096 bytes)");
  sub->add_option("--rate", a->rate, "rate with selector: [>|<|=|+]CODE (IBA rate code)");
  sub->add_option("--pkt-life", a->pkt_life, "packet life with selector: [>|<|=|+]VALUE");
  sub->add_flag("--json", a->json, "print the SA's explanation as JSON");
  sub->add_option("--timeout", a->timeout, "seconds to wait for the reply")->capture_default_str();
  sub->callback([a, front, socket] { cmd_explain::run(*a, front, socket()); });
  return sub;
}

}  // namespace rdmaqos::cli
