// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The explain command's engine: the real answer to one query (through answer(), so it cannot
// drift from what clients get), the rule and level behind it, and the reason of every LID
// combination without a record, down to the hop where an SL meets VL 15.
#include "rdma-qos/sa-responder/explain.h"

#include <fmt/format.h>

#include <span>

#include "rdma-qos/sa-responder/counters.h"
#include "rdma-qos/sa-responder/path_bits.h"

namespace rdmaqos::sad {
namespace {

namespace pr = sa::pr_mask;
using nlohmann::json;

constexpr size_t kMaxReasons = 64;  // LMC 7 on both ends has 16,384 combinations
constexpr int kMaxHops = 64;

rdmaqos::Result<uint64_t> unsigned_field(const json& body, const char* name, uint64_t max) {
  const json& v = body.at(name);
  // Parsed text gives unsigned numbers; a json built in C++ from an int literal a signed one.
  const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  if (!whole || v.get<uint64_t>() > max) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                               fmt::format("explain: '{}' must be a number 0..{}", name, max));
  }
  return v.get<uint64_t>();
}

// {"selector": 0..3, "value": 0..63}, nothing else.
rdmaqos::Result<ExplainRequest::Selected> selected_field(const json& v, const std::string& name) {
  auto bad = [&name] {
    return rdmaqos::make_error(
        rdmaqos::ErrorCode::kInvalidArgument,
        fmt::format("explain: '{}' must be {{\"selector\": 0..3, \"value\": 0..63}}", name));
  };
  if (!v.is_object() || v.size() != 2 || !v.contains("selector") || !v.contains("value")) {
    return bad();
  }
  auto selector = unsigned_field(v, "selector", 3);
  auto value = unsigned_field(v, "value", 63);
  if (!selector || !value) return bad();
  return ExplainRequest::Selected{static_cast<sa::Selector>(*selector),
                                  static_cast<uint8_t>(*value)};
}

std::string location(const std::string& file, const rdmaqos::SourceLocation& l) {
  return fmt::format("{}:{}", file, l.line);
}

std::string describe_port(const FabricModel& f, Endpoint e) {
  const NodeModel& n = f.nodes.at(static_cast<size_t>(e.node));
  return fmt::format("'{}' port {}", n.description, e.port);
}

json end_json(const FabricModel& f, Endpoint e) {
  const PortModel& p = f.port(e);
  const NodeModel& n = f.nodes.at(static_cast<size_t>(e.node));
  return {{"node", n.description},
          {"port", e.port},
          {"guid", fmt::format("0x{:016x}", p.guid)},
          {"lid", p.lid},
          {"lmc", p.lmc}};
}

// Where the walk from `source` towards `dlid` first meets an SL-to-VL table that sends `sl` to
// VL 15; nullopt when no table on that walk does.
std::optional<std::string> vl15_hop(const FabricModel& f, Endpoint source, uint16_t dlid,
                                    uint8_t sl) {
  int node = source.node;
  uint8_t in_port = 0;
  const NodeModel* n = &f.nodes.at(static_cast<size_t>(node));
  if (n->type != policy::NodeType::kSwitch) {
    const PortModel& p = f.port(source);
    if (!p.sl2vl.empty() && p.sl2vl[0][sl] == 15) {
      return fmt::format("at the source port {}", describe_port(f, source));
    }
    if (p.peer_node < 0) return std::nullopt;
    node = p.peer_node;
    in_port = p.peer_port;
  }
  for (int hop = 0; hop < kMaxHops; ++hop) {
    n = &f.nodes.at(static_cast<size_t>(node));
    if (n->type != policy::NodeType::kSwitch || dlid >= n->lft.size()) return std::nullopt;
    const uint8_t out = n->lft[dlid];
    if (out == 0 || out >= n->ports.size()) return std::nullopt;
    const PortModel& egress = n->ports[out];
    if (in_port < egress.sl2vl.size() && egress.sl2vl[in_port][sl] == 15) {
      return fmt::format("at switch '{}' output port {} (from port {}), hop {}", n->description,
                         out, in_port, hop + 1);
    }
    if (egress.peer_node < 0) return std::nullopt;
    node = egress.peer_node;
    in_port = egress.peer_port;
  }
  return std::nullopt;
}

// The SL the engine would have used: the request's, the level's, or the requested partition's.
std::optional<uint8_t> chosen_sl(const AnswerContext& ctx, const ExplainRequest& r,
                                 const policy::Level* level) {
  if (r.sl) return r.sl;
  if (level != nullptr) return level->sl;
  if (r.pkey && ctx.partitions != nullptr) {
    for (const policy::Partition& p : *ctx.partitions) {
      if ((p.pkey & 0x7FFF) == (*r.pkey & 0x7FFF)) return p.sl.value_or(0);
    }
  }
  return std::nullopt;
}

std::string reason_text(const AnswerContext& ctx, const ExplainRequest& r,
                        const policy::Level* level, Rejection why, Endpoint s, Endpoint d,
                        uint16_t slid, uint16_t dlid) {
  const FabricModel& f = *ctx.fabric;
  switch (why) {
    case Rejection::kNone: return "";
    case Rejection::kNoRoute:
      return fmt::format("no route: the forwarding tables do not lead from {} to LID {}",
                         describe_port(f, s), dlid);
    case Rejection::kLevelSlDropped:
    case Rejection::kSlDropped: {
      auto sl = chosen_sl(ctx, r, level);
      if (!sl) return "the SL maps to VL 15 on the path";
      if (auto hop = vl15_hop(f, s, dlid, *sl))
        return fmt::format("SL {} maps to VL 15 {}", *sl, *hop);
      if (auto hop = vl15_hop(f, d, slid, *sl)) {
        return fmt::format("SL {} maps to VL 15 on the way back {}", *sl, *hop);
      }
      return fmt::format("SL {} maps to VL 15 on the path", *sl);
    }
    case Rejection::kSelector: {
      auto walk = f.walk(s, dlid);
      std::string path = walk ? fmt::format(
                                    " (its links give MTU code {}, rate code {}, before "
                                    "the level's limits)",
                                    walk->mtu, walk->rate)
                              : std::string();
      return "a requested MTU, rate or packet-life selector cannot be met" + path;
    }
    case Rejection::kPkeyNotShared:
      return fmt::format("no shared partition: the ends do not share PKey 0x{:04x}",
                         r.pkey.value_or(0));
    case Rejection::kPkeyNotInLevel:
      return fmt::format("PKey 0x{:04x} is not one of the level's pkeys", r.pkey.value_or(0));
    case Rejection::kLevelPkeyNotShared:
      return "no shared partition: the ends share none of the level's pkeys";
    case Rejection::kNoCommonPkey: return "no shared partition: the ends share no PKey";
    case Rejection::kSlNotLevel:
      return fmt::format("the requested SL {} is not the level's SL {}", r.sl.value_or(0),
                         level != nullptr ? level->sl : 0);
    case Rejection::kSlNotRouting:
      return fmt::format("the requested SL {} is not the one the routing engine gives this path",
                         r.sl.value_or(0));
  }
  return "";
}

json level_json(const policy::Level& l, const std::string& file) {
  json out = {{"name", l.name}, {"sl", l.sl}};
  const bool simple = l.name.rfind("SimpleQoSLevel", 0) == 0;
  out["location"] = simple ? json("qos-ulps") : json(location(file, l.location));
  if (l.mtu_limit) out["mtu_limit"] = *l.mtu_limit;
  if (l.rate_limit) out["rate_limit"] = *l.rate_limit;
  if (l.packet_life) out["packet_life"] = *l.packet_life;
  json bits = json::array();
  if (const policy::RangeList* b = level_path_bits(l)) {
    for (const policy::Range& r : *b) bits.push_back({r.low, r.high});
  }
  out["path_bits"] = bits;
  return out;
}

json record_json(const sa::PathRecord& r) {
  return {{"sgid", sa::format_gid(r.sgid)},
          {"dgid", sa::format_gid(r.dgid)},
          {"slid", r.slid},
          {"dlid", r.dlid},
          {"sl", r.sl},
          {"pkey", fmt::format("0x{:04x}", r.pkey)},
          {"mtu", r.mtu},
          {"rate", r.rate},
          {"packet_life", r.packet_life},
          {"reversible", r.reversible},
          {"preference", r.preference}};
}

PathRequest path_request(const ExplainRequest& r) {
  PathRequest q;
  auto set = [&q](bool present, uint64_t bits) {
    if (present) q.comp_mask |= bits;
  };
  set(r.slid.has_value(), pr::kSlid);
  set(r.dlid.has_value(), pr::kDlid);
  set(r.sgid.has_value(), pr::kSgid);
  set(r.dgid.has_value(), pr::kDgid);
  set(r.service_id.has_value(), pr::kServiceIdMsb | pr::kServiceIdLsb);
  set(r.qos_class.has_value(), pr::kQosClass);
  set(r.pkey.has_value(), pr::kPKey);
  set(r.sl.has_value(), pr::kSl);
  q.record.slid = r.slid.value_or(0);
  q.record.dlid = r.dlid.value_or(0);
  if (r.sgid) q.record.sgid = *r.sgid;
  if (r.dgid) q.record.dgid = *r.dgid;
  q.record.service_id = r.service_id.value_or(0);
  q.record.qos_class = r.qos_class.value_or(0);
  q.record.pkey = r.pkey.value_or(0);
  q.record.sl = r.sl.value_or(0);
  if (r.mtu) {
    q.comp_mask |= pr::kMtu | pr::kMtuSelector;
    q.record.mtu_selector = r.mtu->selector;
    q.record.mtu = r.mtu->value;
  }
  if (r.rate) {
    q.comp_mask |= pr::kRate | pr::kRateSelector;
    q.record.rate_selector = r.rate->selector;
    q.record.rate = r.rate->value;
  }
  if (r.packet_life) {
    q.comp_mask |= pr::kPacketLife | pr::kPacketLifeSelector;
    q.record.packet_life_selector = r.packet_life->selector;
    q.record.packet_life = r.packet_life->value;
  }
  return q;
}

// The end a LID or GID names; kNotFound when it names none, kInvalidArgument when the two
// disagree or neither is given.
rdmaqos::Result<Endpoint> resolve(const FabricModel& f, std::optional<uint16_t> lid,
                                  std::optional<sa::Gid> gid, const char* which) {
  using rdmaqos::ErrorCode;
  using rdmaqos::make_error;
  std::optional<Endpoint> by_lid, by_gid;
  if (lid) {
    by_lid = f.by_lid(*lid);
    if (!by_lid)
      return make_error(ErrorCode::kNotFound,
                        fmt::format("the {} LID {} names no port of the fabric", which, *lid));
  }
  if (gid) {
    by_gid = f.by_guid(sa::gid_guid(*gid));
    if (!by_gid) {
      return make_error(
          ErrorCode::kNotFound,
          fmt::format("the {} GID {} names no port of the fabric", which, sa::format_gid(*gid)));
    }
  }
  if (by_lid && by_gid && *by_lid != *by_gid) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("the {} LID and GID name different ports", which));
  }
  if (by_lid) return *by_lid;
  if (by_gid) return *by_gid;
  return make_error(ErrorCode::kInvalidArgument,
                    fmt::format("explain needs the {} (a LID or a GID)", which));
}

// The query as a PathRecord GetTable; nullopt when its record does not encode.
std::optional<sa::SaMad> query_mad(const PathRequest& q) {
  auto bytes = sa::encode_path_record(q.record);
  if (!bytes) return std::nullopt;
  sa::SaMad m;
  m.mad.method = sa::method::kGetTable;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.sa.comp_mask = q.comp_mask;
  m.sa.sm_key = 0;
  m.data.assign(bytes->begin(), bytes->end());
  return m;
}

// The records the SA answers: the query as a PathRecord GetTable, on nobody's behalf.
std::vector<sa::PathRecord> real_answer(AnswerContext ctx, const PathRequest& q) {
  ctx.requester.reset();
  ctx.requester_unknown = false;
  ctx.observer = nullptr;
  auto m = query_mad(q);
  if (!m) return {};
  std::vector<sa::PathRecord> out;
  auto resp = answer(ctx, *m);
  if (!resp || resp->mad.status != 0) return out;
  for (size_t at = 0; at + sa::kPathRecordSize <= resp->data.size(); at += sa::kPathRecordSize) {
    auto r = sa::decode_path_record(std::span(resp->data).subspan(at));
    if (r) out.push_back(*r);
  }
  return out;
}

}  // namespace

std::optional<sa::SaMad> explain_query(const ExplainRequest& request) {
  return query_mad(path_request(request));
}

rdmaqos::Result<ExplainRequest> parse_explain_request(const json& body) {
  if (!body.is_object()) {
    return rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                               "explain: expected a JSON object");
  }
  ExplainRequest r;
  for (const auto& [key, value] : body.items()) {
    if (key == "command") continue;
    if (key == "sgid" || key == "dgid") {
      std::optional<sa::Gid> gid;
      if (value.is_string()) gid = sa::parse_gid(value.get<std::string>());
      if (!gid) {
        return rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                                   fmt::format("explain: '{}' must be a GID (fe80::...)", key));
      }
      (key == "sgid" ? r.sgid : r.dgid) = *gid;
      continue;
    }
    if (key == "mtu" || key == "rate" || key == "packet_life") {
      auto sel = selected_field(value, key);
      if (!sel) return sel.error();
      (key == "mtu" ? r.mtu : key == "rate" ? r.rate : r.packet_life) = *sel;
      continue;
    }
    uint64_t max = 0;
    if (key == "slid" || key == "dlid" || key == "pkey") {
      max = 0xFFFF;
    } else if (key == "service_id") {
      max = UINT64_MAX;
    } else if (key == "qos_class") {
      max = 0xFFF;
    } else if (key == "sl") {
      max = 15;
    } else {
      return rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument,
                                 fmt::format("explain: unknown field '{}'", key));
    }
    auto v = unsigned_field(body, key.c_str(), max);
    if (!v) return v.error();
    if (key == "slid") r.slid = static_cast<uint16_t>(*v);
    if (key == "dlid") r.dlid = static_cast<uint16_t>(*v);
    if (key == "pkey") r.pkey = static_cast<uint16_t>(*v);
    if (key == "service_id") r.service_id = *v;
    if (key == "qos_class") r.qos_class = static_cast<uint16_t>(*v);
    if (key == "sl") r.sl = static_cast<uint8_t>(*v);
  }
  return r;
}

json explain_request_json(const ExplainRequest& r) {
  json out = {{"command", "explain"}};
  if (r.slid) out["slid"] = *r.slid;
  if (r.dlid) out["dlid"] = *r.dlid;
  if (r.sgid) out["sgid"] = sa::format_gid(*r.sgid);
  if (r.dgid) out["dgid"] = sa::format_gid(*r.dgid);
  if (r.service_id) out["service_id"] = *r.service_id;
  if (r.qos_class) out["qos_class"] = *r.qos_class;
  if (r.pkey) out["pkey"] = *r.pkey;
  if (r.sl) out["sl"] = *r.sl;
  auto put = [&out](const char* key, const std::optional<ExplainRequest::Selected>& v) {
    if (v) out[key] = {{"selector", static_cast<int>(v->selector)}, {"value", v->value}};
  };
  put("mtu", r.mtu);
  put("rate", r.rate);
  put("packet_life", r.packet_life);
  return out;
}

json explain(const AnswerContext& ctx, const ExplainRequest& request,
             const std::string& policy_file) {
  const FabricModel& f = *ctx.fabric;
  auto s = resolve(f, request.slid, request.sgid, "source");
  auto d = resolve(f, request.dlid, request.dgid, "destination");
  // Both looked at before either is reported, so neither error goes unexamined.
  const bool source_ok = s.ok();
  const bool destination_ok = d.ok();
  if (!source_ok || !destination_ok) {
    const std::string& error = (source_ok ? d : s).error().message;
    return {{"answered", false}, {"error", error}, {"summary", error}};
  }
  // The values the SA refuses outright (MAD status REQ_INVALID) give no path to explain.
  if ((request.rate && !valid_rate(request.rate->value)) ||
      (request.mtu && (request.mtu->value < 1 || request.mtu->value > 5))) {
    const std::string error =
        "the SA refuses the request (REQ_INVALID): an MTU code must be "
        "1..5 and a rate code 2..22";
    return {{"answered", false}, {"error", error}, {"summary", error}};
  }
  const Endpoint source = *s, destination = *d;
  const PathRequest q = path_request(request);
  json out = {{"source", end_json(f, source)}, {"destination", end_json(f, destination)}};

  // The rule: the matcher's linear scan, which names the rule it stopped at.
  const policy::Level* level = nullptr;
  out["rule"] = nullptr;
  out["level"] = nullptr;
  if (ctx.policy != nullptr) {
    policy::PathQuery pq;
    pq.component_mask = q.comp_mask;
    pq.service_id = q.record.service_id;
    pq.qos_class = q.record.qos_class;
    pq.pkey = q.record.pkey;
    pq.source_guid = f.port(source).guid;
    pq.source_type = f.nodes.at(static_cast<size_t>(source.node)).type;
    pq.destination_guid = f.port(destination).guid;
    pq.destination_type = f.nodes.at(static_cast<size_t>(destination.node)).type;
    policy::Explanation e = ctx.policy->explain(pq);
    level = e.result.level;
    if (e.result.rule) {
      const policy::MatchRule& rule = *ctx.policy->rules().at(*e.result.rule);
      out["rule"] = {{"index", *e.result.rule},
                     {"location", location(policy_file, rule.location)},
                     {"use", rule.use},
                     {"text", rule.text}};
    }
    if (level != nullptr) out["level"] = level_json(*level, policy_file);
  }
  out["rule_default"] = ctx.policy != nullptr && out["rule"].is_null();

  json records = json::array();
  for (const sa::PathRecord& r : real_answer(ctx, q)) records.push_back(record_json(r));
  const bool answered = !records.empty();
  out["records"] = records;
  out["answered"] = answered;

  // Why each LID combination the SA considered gave no record.
  const PortModel& dst = f.port(destination);
  LidOffsets offsets = allowed_dlid_offsets(nullptr, dst.lmc);
  if (!request.dlid && ctx.policy != nullptr && level != nullptr) {
    offsets = allowed_dlid_offsets(level_path_bits(*level), dst.lmc);
  }
  json reasons = json::array();
  for_each_lid_pair(
      f.port(source), dst, request.slid.value_or(0), request.dlid.value_or(0),
      [&](const LidPair& lp) {
        if (!offsets.test(static_cast<size_t>(lp.dlid - dst.lid))) return true;
        PairAnswer a = answer_lid_pair(ctx, q, source, destination, lp.slid, lp.dlid);
        if (a.rejection == Rejection::kNone) return true;
        reasons.push_back({{"slid", lp.slid},
                           {"dlid", lp.dlid},
                           {"reason", rejection_name(a.rejection)},
                           {"detail", reason_text(ctx, request, level, a.rejection, source,
                                                  destination, lp.slid, lp.dlid)}});
        return reasons.size() < kMaxReasons;
      });
  out["no_record"] = reasons;
  if (answered) {
    out["summary"] = fmt::format("{} record{}", records.size(), records.size() == 1 ? "" : "s");
  } else if (!reasons.empty()) {
    out["summary"] = "no record: " + reasons[0]["detail"].get<std::string>();
  } else {
    out["summary"] = "no record";
  }
  return out;
}

}  // namespace rdmaqos::sad
