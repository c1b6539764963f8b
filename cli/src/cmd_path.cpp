// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos path`: ask the SA for PathRecords (or MultiPathRecords) with Service-ID and
// QoS-Class in the component mask, and `rdma-qos path cpi` for its ClassPortInfo.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "rdma-qos/common/number.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/port_values.h"
#include "rdma-qos/sa-client/client.h"
#include "sa_open.h"

namespace rdmaqos::cli::cmd_path {
namespace {

namespace sa = rdmaqos::sa;
using nlohmann::json;

constexpr uint64_t kMaxUnicastLid = 0xBFFF;

// The sa_lid knob (RDMA_QOS_SA_LID or the configuration file), as rdma-qos-lsd and the rdma_cm
// shim read it: the SA's LID per port; none when unset or invalid (the loader then keeps the
// default and says why).
config::PortValues configured_sa_lids() {
  auto loaded = config::load_host_config();
  for (const auto& e : loaded.errors) {
    const std::string line = format_diagnostic(e);
    if (line.find("sa_lid") != std::string::npos || line.find("SA_LID") != std::string::npos)
      std::cerr << "rdma-qos path: " << line << "\n";
  }
  auto lids = config::parse_port_lids(loaded.config.text("sa_lid"));
  return lids ? std::move(*lids) : config::PortValues{};
}

// A numeric option's text: decimal or 0x-hex, no larger than `max` (common/number: "010" is
// ten, never octal; overflow and junk are errors). The error names the option, as the user
// typed it, and the range.
struct NumberOption {
  const char* name;
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
};

rdmaqos::Result<uint64_t> parse_option(const NumberOption& o, const std::string& text) {
  auto n = parse_unsigned(text, o.max);
  if (n && *n >= o.min) return *n;
  const std::string range = o.max > 0xFFFFFF ? fmt::format("{}..{:#x}", o.min, o.max)
                                             : fmt::format("{}..{}", o.min, o.max);
  return rdmaqos::make_error(
      rdmaqos::ErrorCode::kInvalidArgument,
      fmt::format("{}: '{}' is not a number {} (decimal or 0x-hex)", o.name, text, range));
}

struct Connection {
  std::string ca;
  std::optional<std::string> port, sa_lid, timeout_ms;  // numbers, parsed by parse()
  std::string retries = "3";
  bool json_out = false;

  // Filled in by parse().
  int port_number = 0;
  std::optional<uint16_t> sa_lid_number;
  std::optional<int> timeout_number;
  int retries_number = 3;

  // The numeric options checked; an error (kInvalidArgument, naming the option) for a bad one.
  rdmaqos::Result<void> parse() {
    if (port) {
      auto n = parse_option({"--port", 0, 255}, *port);
      if (!n) return n.error();
      port_number = static_cast<int>(*n);
    }
    if (sa_lid) {
      auto n = parse_option({"--sa-lid", 1, kMaxUnicastLid}, *sa_lid);
      if (!n) return n.error();
      sa_lid_number = static_cast<uint16_t>(*n);
    }
    if (timeout_ms) {
      auto n = parse_option({"--timeout", 1, 3'600'000}, *timeout_ms);
      if (!n) return n.error();
      timeout_number = static_cast<int>(*n);
    }
    auto n = parse_option({"--retries", 0, 100}, retries);
    if (!n) return n.error();
    retries_number = static_cast<int>(*n);
    return {};
  }

  void add_to(CLI::App* cmd) {
    cmd->add_option("--ca", ca, "CA name (default: the first with an active IB port)");
    cmd->add_option("--port", port, "port number (default, or 0: the first active IB port)");
    cmd->add_option("--sa-lid", sa_lid,
                    "query this LID instead of the port's SM LID (default: the sa_lid knob, "
                    "RDMA_QOS_SA_LID, for the port opened)");
    cmd->add_option("--timeout", timeout_ms,
                    "per-attempt timeout in ms (default: from ClassPortInfo RespTimeValue)");
    cmd->add_option("--retries", retries, "resends after the first attempt")->capture_default_str();
    cmd->add_flag("--json", json_out, "print JSON");
  }

  rdmaqos::Result<std::unique_ptr<sa::Client>> open() const {
    sa::ClientOptions o;
    o.port.ca = ca;
    o.port.port = port_number;
    o.sa_lid = sa_lid_number;
    if (timeout_number) o.timeout = std::chrono::milliseconds(*timeout_number);
    o.retries = retries_number;
    return open_sa_client(o, sa_lid_number ? config::PortValues{} : configured_sa_lids());
  }
};

// A selector-prefixed value: ">1024" greater than, "<4096" less than, "=2048" or "2048"
// exactly, "+" (alone or before a value) the best available.
struct SelectedValue {
  sa::Selector selector = sa::Selector::kExactly;
  std::optional<uint8_t> code;
};

std::optional<SelectedValue> parse_selected(std::string text,
                                            bool (*to_code)(const std::string&, uint8_t&)) {
  SelectedValue v;
  if (!text.empty()) {
    switch (text[0]) {
      case '>':
        v.selector = sa::Selector::kGreaterThan;
        text.erase(0, 1);
        break;
      case '<':
        v.selector = sa::Selector::kLessThan;
        text.erase(0, 1);
        break;
      case '=':
        v.selector = sa::Selector::kExactly;
        text.erase(0, 1);
        break;
      case '+':
        v.selector = sa::Selector::kBest;
        text.erase(0, 1);
        break;
      default: break;
    }
  }
  if (text.empty()) {
    if (v.selector != sa::Selector::kBest) return std::nullopt;
    return v;
  }
  uint8_t code = 0;
  if (!to_code(text, code)) return std::nullopt;
  v.code = code;
  return v;
}

bool parse_number(const std::string& text, uint64_t& out) {
  auto n = parse_unsigned(text);
  if (n) out = *n;
  return n.has_value();
}

// MTU in bytes (256..4096) or as its code (1..5).
bool mtu_code(const std::string& text, uint8_t& code) {
  uint64_t n = 0;
  if (!parse_number(text, n)) return false;
  for (uint8_t c = 1; c <= 5; ++c)
    if (n == (128u << c)) return (code = c), true;
  if (n >= 1 && n <= 5) return (code = static_cast<uint8_t>(n)), true;
  return false;
}

constexpr double kRateGbps[] = {0,   0,   2.5, 10,  30,  5,   20, 40, 60,  80,  120, 14,  56,
                                112, 168, 25,  100, 200, 300, 28, 50, 400, 600, 800, 1200};

std::string rate_text(uint8_t code) {
  if (code < std::size(kRateGbps) && kRateGbps[code] > 0)
    return fmt::format("{:g} Gb/s", kRateGbps[code]);
  return fmt::format("code {}", code);
}

// Rate as its code (2..24) or in Gb/s with a "G" suffix ("20G").
bool rate_code(const std::string& text, uint8_t& code) {
  if (!text.empty() && (text.back() == 'G' || text.back() == 'g')) {
    // Gb/s may have a fraction (2.5G); every character before the G must be part of it.
    double g = 0;
    const char* end = text.data() + text.size() - 1;
    auto [ptr, ec] = std::from_chars(text.data(), end, g, std::chars_format::fixed);
    if (ec != std::errc() || ptr != end) return false;
    for (uint8_t c = 2; c < std::size(kRateGbps); ++c)
      if (kRateGbps[c] == g) return (code = c), true;
    return false;
  }
  uint64_t n = 0;
  if (!parse_number(text, n) || n > 63) return false;
  code = static_cast<uint8_t>(n);
  return true;
}

bool life_code(const std::string& text, uint8_t& code) {
  uint64_t n = 0;
  if (!parse_number(text, n) || n > 63) return false;
  code = static_cast<uint8_t>(n);
  return true;
}

const char* selector_text(sa::Selector s) {
  switch (s) {
    case sa::Selector::kGreaterThan: return ">";
    case sa::Selector::kLessThan: return "<";
    case sa::Selector::kExactly: return "=";
    case sa::Selector::kBest: return "+";
  }
  return "?";
}

json path_json(const sa::PathRecord& r) {
  return json{{"service_id", fmt::format("0x{:016x}", r.service_id)},
              {"dgid", sa::format_gid(r.dgid)},
              {"sgid", sa::format_gid(r.sgid)},
              {"dlid", r.dlid},
              {"slid", r.slid},
              {"raw_traffic", r.raw_traffic},
              {"flow_label", r.flow_label},
              {"hop_limit", r.hop_limit},
              {"tclass", r.tclass},
              {"reversible", r.reversible},
              {"numb_path", r.numb_path},
              {"pkey", fmt::format("0x{:04x}", r.pkey)},
              {"qos_class", r.qos_class},
              {"sl", r.sl},
              {"mtu", r.mtu},
              {"mtu_selector", static_cast<int>(r.mtu_selector)},
              {"rate", r.rate},
              {"rate_selector", static_cast<int>(r.rate_selector)},
              {"packet_life", r.packet_life},
              {"packet_life_selector", static_cast<int>(r.packet_life_selector)},
              {"preference", r.preference}};
}

void print_path(const sa::PathRecord& r, size_t i, size_t n) {
  std::cout << fmt::format(
      "PathRecord {}/{}\n"
      "  slid {}  dlid {}\n"
      "  sgid {}\n"
      "  dgid {}\n"
      "  service-id 0x{:016x}  qos-class {}  sl {}  pkey 0x{:04x}  tclass {}\n"
      "  mtu {}{} ({} bytes)  rate {}{} ({})  packet-life {}{}\n"
      "  flow-label 0x{:05x}  hop-limit {}  reversible {}  numb-path {}  raw-traffic {}  "
      "preference {}\n",
      i + 1, n, r.slid, r.dlid, sa::format_gid(r.sgid), sa::format_gid(r.dgid), r.service_id,
      r.qos_class, r.sl, r.pkey, r.tclass, selector_text(r.mtu_selector), r.mtu,
      r.mtu >= 1 && r.mtu <= 5 ? 128 << r.mtu : 0, selector_text(r.rate_selector), r.rate,
      rate_text(r.rate), selector_text(r.packet_life_selector), r.packet_life, r.flow_label,
      r.hop_limit, r.reversible ? 1 : 0, r.numb_path, r.raw_traffic ? 1 : 0, r.preference);
}

int report_error(const rdmaqos::Error& e, bool json_out) {
  if (json_out) {
    json j = {{"error", {{"code", rdmaqos::error_code_name(e.code)}, {"message", e.message}}}};
    if (e.code == rdmaqos::ErrorCode::kMadStatus) {
      j["error"]["mad_status"] = e.mad_status;
      j["error"]["mad_status_name"] = sa::mad_status_name(e.mad_status);
    }
    std::cout << j.dump() << "\n";
  } else {
    std::cerr << "rdma-qos path: " << rdmaqos::error_code_name(e.code) << ": " << e.message << "\n";
  }
  return 1;
}

std::vector<sa::Gid> parse_gid_list(const std::string& text, std::string& bad) {
  std::vector<sa::Gid> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) {
      auto g = sa::parse_gid(item);
      if (!g) {
        bad = item;
        return {};
      }
      out.push_back(*g);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

struct PathArgs {
  Connection conn;
  std::string dgid, sgid, sgids, dgids, mtu, rate, pkt_life;
  // Numbers, parsed by parse_numbers.
  std::optional<std::string> dlid_text, slid_text, pkey_text, qos_class_text, service_id_text,
      tclass_text, sl_text, numb_path_text;
  bool mpr = false;
  bool get = false;

  // Filled in by parse_numbers.
  std::optional<uint16_t> dlid, slid, pkey, qos_class;
  std::optional<uint64_t> service_id;
  std::optional<uint8_t> tclass, sl, numb_path;

  // Every numeric option checked; an error (kInvalidArgument) naming the first bad one.
  rdmaqos::Result<void> parse_numbers() {
    if (auto c = conn.parse(); !c) return c;
    std::optional<rdmaqos::Error> bad;
    auto one = [&bad]<typename T>(const NumberOption& o, const std::optional<std::string>& text,
                                  std::optional<T>& out) {
      if (!text) return true;
      auto n = parse_option(o, *text);
      if (!n) {
        bad = n.error();
        return false;
      }
      out = static_cast<T>(*n);
      return true;
    };
    const bool ok = one({"--dlid", 0, 0xFFFF}, dlid_text, dlid) &&
                    one({"--slid", 0, 0xFFFF}, slid_text, slid) &&
                    one({"--pkey", 0, 0xFFFF}, pkey_text, pkey) &&
                    one({"--qos-class", 0, 0xFFF}, qos_class_text, qos_class) &&
                    one({"--service-id"}, service_id_text, service_id) &&
                    one({"--tclass", 0, 0xFF}, tclass_text, tclass) &&
                    one({"--sl", 0, 15}, sl_text, sl) &&
                    one({"--numb-path", 0, 127}, numb_path_text, numb_path);
    if (!ok) return *bad;
    return {};
  }
};

int usage_error(const std::string& message, bool json_out) {
  return report_error(rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument, message), json_out);
}

int run_cpi(Connection conn) {
  if (auto parsed = conn.parse(); !parsed) return report_error(parsed.error(), conn.json_out);
  auto client = conn.open();
  if (!client) return report_error(client.error(), conn.json_out);
  auto cpi = (*client)->class_port_info();
  if (!cpi) return report_error(cpi.error(), conn.json_out);
  const sa::ClassPortInfo& c = *cpi;
  if (conn.json_out) {
    std::cout << json{{"sa_lid", (*client)->sa_lid()},
                      {"base_version", c.base_version},
                      {"class_version", c.class_version},
                      {"capability_mask", fmt::format("0x{:04x}", c.capability_mask)},
                      {"capability_mask2", fmt::format("0x{:07x}", c.capability_mask2)},
                      {"qos_supported", c.qos_supported()},
                      {"multipath_supported", c.multipath_supported()},
                      {"resp_time_value", c.resp_time_value},
                      {"resp_time_us", c.resp_time().count() / 1000.0},
                      {"redirect_lid", c.redirect_lid},
                      {"trap_lid", c.trap_lid}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << fmt::format(
      "SA ClassPortInfo (SA LID {})\n"
      "  base version {}  class version {}\n"
      "  CapabilityMask  0x{:04x}  MultiPath {}\n"
      "  CapabilityMask2 0x{:07x}  QoS {}\n"
      "  RespTimeValue   {} ({:.3f} ms)\n"
      "  redirect LID {}  trap LID {}\n",
      (*client)->sa_lid(), c.base_version, c.class_version, c.capability_mask,
      c.multipath_supported() ? "supported" : "not supported", c.capability_mask2,
      c.qos_supported() ? "supported" : "not supported", c.resp_time_value,
      c.resp_time().count() / 1e6, c.redirect_lid, c.trap_lid);
  return 0;
}

int run_path(PathArgs a) {
  if (auto parsed = a.parse_numbers(); !parsed)
    return report_error(parsed.error(), a.conn.json_out);
  std::optional<SelectedValue> mtu, rate, life;
  if (!a.mtu.empty() && !(mtu = parse_selected(a.mtu, &mtu_code)))
    return usage_error("--mtu: expected [<>=+]BYTES or code, e.g. '>1024' or '=2048'",
                       a.conn.json_out);
  if (!a.rate.empty() && !(rate = parse_selected(a.rate, &rate_code)))
    return usage_error("--rate: expected [<>=+]CODE or Gb/s with G, e.g. '=20G'", a.conn.json_out);
  if (!a.pkt_life.empty() && !(life = parse_selected(a.pkt_life, &life_code)))
    return usage_error("--pkt-life: expected [<>=+]VALUE (0-63)", a.conn.json_out);

  auto client = a.conn.open();
  if (!client) return report_error(client.error(), a.conn.json_out);
  sa::Client& c = **client;

  rdmaqos::Result<std::vector<sa::PathRecord>> paths = std::vector<sa::PathRecord>{};
  if (a.mpr) {
    sa::MultiPathQuery q;
    std::string bad;
    q.record.sgids = parse_gid_list(a.sgids, bad);
    if (!bad.empty()) return usage_error("--sgids: not a GID: " + bad, a.conn.json_out);
    q.record.dgids = parse_gid_list(a.dgids, bad);
    if (!bad.empty()) return usage_error("--dgids: not a GID: " + bad, a.conn.json_out);
    if (q.record.sgids.empty()) q.record.sgids.push_back(c.port().gid);
    if (q.record.dgids.empty()) return usage_error("--mpr needs --dgids", a.conn.json_out);
    auto& r = q.record;
    if (a.service_id) r.service_id = *a.service_id, q.comp_mask |= sa::mpr_mask::kServiceId;
    if (a.qos_class) r.qos_class = *a.qos_class, q.comp_mask |= sa::mpr_mask::kQosClass;
    if (a.tclass) r.tclass = *a.tclass, q.comp_mask |= sa::mpr_mask::kTClass;
    if (a.pkey) r.pkey = *a.pkey, q.comp_mask |= sa::mpr_mask::kPKey;
    if (a.sl) r.sl = *a.sl, q.comp_mask |= sa::mpr_mask::kSl;
    if (a.numb_path) r.numb_path = *a.numb_path, q.comp_mask |= sa::mpr_mask::kNumbPath;
    if (mtu) {
      r.mtu_selector = mtu->selector, q.comp_mask |= sa::mpr_mask::kMtuSelector;
      if (mtu->code) r.mtu = *mtu->code, q.comp_mask |= sa::mpr_mask::kMtu;
    }
    if (rate) {
      r.rate_selector = rate->selector, q.comp_mask |= sa::mpr_mask::kRateSelector;
      if (rate->code) r.rate = *rate->code, q.comp_mask |= sa::mpr_mask::kRate;
    }
    if (life) {
      r.packet_life_selector = life->selector, q.comp_mask |= sa::mpr_mask::kPacketLifeSelector;
      if (life->code) r.packet_life = *life->code, q.comp_mask |= sa::mpr_mask::kPacketLife;
    }
    paths = c.multipath_records(q);
  } else {
    sa::PathQuery q;
    q.get_table = !a.get;
    auto& r = q.record;
    if (!a.dgid.empty()) {
      auto g = sa::parse_gid(a.dgid);
      if (!g) return usage_error("--dgid: not a GID: " + a.dgid, a.conn.json_out);
      r.dgid = *g, q.comp_mask |= sa::pr_mask::kDgid;
    }
    if (!a.sgid.empty()) {
      auto g = sa::parse_gid(a.sgid);
      if (!g) return usage_error("--sgid: not a GID: " + a.sgid, a.conn.json_out);
      r.sgid = *g, q.comp_mask |= sa::pr_mask::kSgid;
    }
    if (a.dlid) r.dlid = *a.dlid, q.comp_mask |= sa::pr_mask::kDlid;
    if (a.slid) r.slid = *a.slid, q.comp_mask |= sa::pr_mask::kSlid;
    // Paths from this port unless the caller named a source.
    if (!a.slid && a.sgid.empty()) r.slid = c.port().lid, q.comp_mask |= sa::pr_mask::kSlid;
    if (a.service_id) r.service_id = *a.service_id, q.comp_mask |= sa::pr_mask::kServiceId;
    if (a.qos_class) r.qos_class = *a.qos_class, q.comp_mask |= sa::pr_mask::kQosClass;
    if (a.tclass) r.tclass = *a.tclass, q.comp_mask |= sa::pr_mask::kTClass;
    if (a.pkey) r.pkey = *a.pkey, q.comp_mask |= sa::pr_mask::kPKey;
    if (a.sl) r.sl = *a.sl, q.comp_mask |= sa::pr_mask::kSl;
    if (a.numb_path) r.numb_path = *a.numb_path, q.comp_mask |= sa::pr_mask::kNumbPath;
    if (mtu) {
      r.mtu_selector = mtu->selector, q.comp_mask |= sa::pr_mask::kMtuSelector;
      if (mtu->code) r.mtu = *mtu->code, q.comp_mask |= sa::pr_mask::kMtu;
    }
    if (rate) {
      r.rate_selector = rate->selector, q.comp_mask |= sa::pr_mask::kRateSelector;
      if (rate->code) r.rate = *rate->code, q.comp_mask |= sa::pr_mask::kRate;
    }
    if (life) {
      r.packet_life_selector = life->selector, q.comp_mask |= sa::pr_mask::kPacketLifeSelector;
      if (life->code) r.packet_life = *life->code, q.comp_mask |= sa::pr_mask::kPacketLife;
    }
    paths = c.path_records(q);
  }
  if (!paths) return report_error(paths.error(), a.conn.json_out);
  if (a.conn.json_out) {
    json list = json::array();
    for (const auto& p : *paths) list.push_back(path_json(p));
    std::cout << json{{"sa_lid", c.sa_lid()}, {"paths", list}}.dump() << "\n";
  } else {
    if (paths->empty()) std::cout << "no paths\n";
    for (size_t i = 0; i < paths->size(); ++i) print_path((*paths)[i], i, paths->size());
  }
  return 0;
}

void setup_path(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "path", "query the SA for PathRecords (Service-ID / QoS-Class aware) or MultiPathRecords");
  auto a = std::make_shared<PathArgs>();
  a->conn.add_to(cmd);
  cmd->add_option("--dgid", a->dgid, "destination GID");
  cmd->add_option("--dlid", a->dlid_text, "destination LID");
  cmd->add_option("--sgid", a->sgid, "source GID");
  cmd->add_option("--slid", a->slid_text, "source LID (default: this port's LID unless --sgid)");
  cmd->add_option("--service-id", a->service_id_text,
                  "Service ID (sets both Service-ID mask bits)");
  cmd->add_option("--qos-class", a->qos_class_text, "QoS class (12 bits)");
  cmd->add_option("--tclass", a->tclass_text, "traffic class");
  cmd->add_option("--pkey", a->pkey_text, "partition key");
  cmd->add_option("--sl", a->sl_text, "service level");
  cmd->add_option("--mtu", a->mtu,
                  "MTU with selector: [>|<|=|+]BYTES, e.g. '>1024', '=2048', '+' (largest)");
  cmd->add_option("--rate", a->rate, "rate with selector: [>|<|=|+]CODE or Gb/s ('=20G')");
  cmd->add_option("--pkt-life", a->pkt_life,
                  "packet lifetime with selector: [>|<|=|+]VALUE ('+': smallest)");
  cmd->add_option("--numb-path", a->numb_path_text, "number of paths asked for (NumbPath)");
  cmd->add_flag("--get", a->get, "one path with SubnAdmGet instead of every path (GetTable)");
  cmd->add_flag("--mpr", a->mpr, "MultiPathRecord query (GetMulti) with --sgids/--dgids");
  cmd->add_option("--sgids", a->sgids, "comma-separated source GIDs for --mpr (default: ours)");
  cmd->add_option("--dgids", a->dgids, "comma-separated destination GIDs for --mpr");
  cmd->footer(
      "Exit status: 0 answered, 1 error (timeout, SA status, bad argument). With --json errors "
      "are printed as {\"error\": {...}} on standard output.");

  auto* cpi = cmd->add_subcommand("cpi", "print the SA's ClassPortInfo with the QoS bit decoded");
  auto conn = std::make_shared<Connection>();
  conn->add_to(cpi);
  cpi->callback([conn] { set_exit_code(run_cpi(*conn)); });
  cmd->callback([a, cpi] {
    if (cpi->parsed()) return;
    set_exit_code(run_path(*a));
  });
}

const CommandRegistration kRegistration{"path", &setup_path};

}  // namespace
}  // namespace rdmaqos::cli::cmd_path
