// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric model to and from JSON (see discovery_json.h).
#include "rdma-qos/sa-responder/discovery_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <iterator>
#include <string_view>

#include <stdexcept>
#include <string>
#include <vector>

namespace rdmaqos::sad {
namespace {

// The bulk of a large model is its switches' SL2VL tables (one per input/output port pair:
// 95,529 at 1,980 CAs) and forwarding tables: each goes as one hex string, not as arrays of
// numbers, so the model in force crosses between the daemon and its discovery child fast.
constexpr char kHex[] = "0123456789abcdef";

// A port's SL2VL tables: 16 hex digits each (VL of SL 0..15), one after the other.
std::string sl2vl_hex(const std::vector<Sl2Vl>& tables) {
  std::string out(tables.size() * 16, '0');
  for (size_t t = 0; t < tables.size(); ++t)
    for (size_t sl = 0; sl < 16; ++sl) out[t * 16 + sl] = kHex[tables[t][sl] & 0xF];
  return out;
}

// A forwarding table: 2 hex digits an entry.
std::string lft_hex(const std::vector<uint8_t>& lft) {
  std::string out(lft.size() * 2, '0');
  for (size_t i = 0; i < lft.size(); ++i) {
    out[2 * i] = kHex[lft[i] >> 4];
    out[2 * i + 1] = kHex[lft[i] & 0xF];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  throw std::invalid_argument("not a hex digit");
}

std::vector<Sl2Vl> sl2vl_from(const std::string& s) {
  if (s.size() % 16 != 0) throw std::invalid_argument("SL2VL tables are 16 digits each");
  std::vector<Sl2Vl> out(s.size() / 16);
  for (size_t t = 0; t < out.size(); ++t)
    for (size_t sl = 0; sl < 16; ++sl) out[t][sl] = static_cast<uint8_t>(hex_digit(s[t * 16 + sl]));
  return out;
}

std::vector<uint8_t> lft_from(const std::string& s) {
  if (s.size() % 2 != 0) throw std::invalid_argument("LFT entries are 2 digits each");
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<uint8_t>(hex_digit(s[2 * i]) << 4 | hex_digit(s[2 * i + 1]));
  return out;
}

// A JSON string as nlohmann::json's dump() writes it (so parsing the line and dumping it again
// gives the line back): quote, backslash and control characters escaped, UTF-8 as it is. A
// byte that is not UTF-8 (a node description is whatever the node answers) becomes U+FFFD.
void put_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // The length of a well-formed UTF-8 sequence starting here, or 0.
    size_t len = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = cp << 6 | (cc & 0x3F);
    }
    // No overlong forms, surrogates or code points past U+10FFFF.
    ok = ok && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) &&
         !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  out += '"';
}

void put_guid(std::string& out, uint64_t guid) {
  fmt::format_to(std::back_inserter(out), "\"{:#018x}\"", guid);
}

void put_strings(std::string& out, const std::vector<std::string>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    put_string(out, v[i]);
  }
  out += ']';
}

}  // namespace

// Written out directly, not through nlohmann::json's tree: a large model is several MB, and the
// daemon waits for it. Keys in the order nlohmann::json sorts them.
std::string fabric_json_line(const Discovery& d) {
  const auto& m = d.model;
  std::string out;
  out.reserve(1024 + m.nodes.size() * 512);
  auto it = std::back_inserter(out);
  out += "{\"missing\":";
  put_strings(out, d.missing);
  out += ",\"nodes\":[";
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const NodeModel& n = m.nodes[i];
    if (i > 0) out += ',';
    out += "{\"description\":";
    put_string(out, n.description);
    out += ",\"guid\":";
    put_guid(out, n.guid);
    out += ",\"lft\":\"";
    out += lft_hex(n.lft);
    fmt::format_to(it, "\",\"lft_size\":{},\"ports\":[", n.lft.size());
    bool first = true;
    for (size_t p = 0; p < n.ports.size(); ++p) {
      const PortModel& pm = n.ports[p];
      if (!pm.present) continue;
      if (!first) out += ',';
      first = false;
      fmt::format_to(it, "{{\"capability_mask\":{},\"capability_mask2\":{},\"guid\":",
                     pm.capability_mask, pm.capability_mask2);
      put_guid(out, pm.guid);
      fmt::format_to(it,
                     ",\"lid\":{},\"lmc\":{},\"mtu_cap\":{},\"peer_node\":{},\"peer_port\":{},"
                     "\"pkeys\":[{}],\"port\":{},\"rate\":{},\"sl2vl\":\"",
                     pm.lid, pm.lmc, pm.mtu_cap, pm.peer_node, pm.peer_port,
                     fmt::join(pm.pkeys, ","), p, pm.rate);
      out += sl2vl_hex(pm.sl2vl);
      out += "\"}";
    }
    fmt::format_to(it, "],\"type\":{}}}", static_cast<int>(n.type));
  }
  // Paths from the port discovery ran at to every endpoint: what the SA will answer from.
  out += "],\"paths\":[";
  bool first = true;
  for (const Endpoint& e : m.endpoints()) {
    if (!first) out += ',';
    first = false;
    const uint16_t dlid = m.port(e).lid;
    auto w = m.walk(d.self, dlid);
    if (!w) {
      fmt::format_to(it, "{{\"dlid\":{},\"reachable\":false}}", dlid);
      continue;
    }
    fmt::format_to(it,
                   "{{\"dlid\":{},\"hops\":{},\"mtu\":{},\"rate\":{},\"reachable\":true,"
                   "\"valid_sls\":{}}}",
                   dlid, w->hops, w->mtu, w->rate, w->valid_sls);
  }
  fmt::format_to(it, "],\"self\":{{\"node\":{},\"port\":{}}},\"subnet_prefix\":", d.self.node,
                 d.self.port);
  put_guid(out, m.subnet_prefix);
  fmt::format_to(it, ",\"subnet_timeout\":{},\"warnings\":", m.subnet_timeout);
  put_strings(out, d.warnings);
  out += '}';
  return out;
}

nlohmann::json fabric_json(const Discovery& d) {
  return nlohmann::json::parse(fabric_json_line(d));
}

namespace {

// Reads the model straight from the JSON text's events (nlohmann::json's SAX interface), without
// building the tree: the daemon reads every re-discovery's model, the incremental child the
// model in force, several MB each on a large fabric. Keys in any order; unknown keys skipped;
// a value of the wrong type, a missing field or a number out of its field's range is no model.
class ModelReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<Discovery> result() {
    if (failed_ || !done_ || !top_.all()) return std::nullopt;
    return std::move(d_);
  }

  bool null() override { return scalar(Value{}); }
  bool boolean(bool) override { return scalar(Value{}); }
  bool number_integer(number_integer_t v) override { return scalar(Value{Value::kInteger, v, {}}); }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<number_unsigned_t>(INT64_MAX)) return scalar(Value{});
    return scalar(Value{Value::kInteger, static_cast<int64_t>(v), {}});
  }
  bool number_float(number_float_t, const string_t&) override { return scalar(Value{}); }
  bool string(string_t& v) override { return scalar(Value{Value::kString, 0, std::move(v)}); }
  bool binary(binary_t&) override { return fail(); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return fail();
  }

  bool start_object(std::size_t) override {
    if (skip_ > 0) return ++skip_, true;
    const Ctx at = stack_.empty() ? Ctx::kNone : stack_.back();
    if (at == Ctx::kNone && !done_) return push(Ctx::kTop);
    if (at == Ctx::kTop && key_ == "self") return push(Ctx::kSelf);
    if (at == Ctx::kNodes) {
      node_ = NodeModel{};
      node_fields_.reset();
      return push(Ctx::kNode);
    }
    if (at == Ctx::kPorts) {
      port_ = PortModel{};
      port_.present = true;
      port_num_ = 0;
      port_fields_.reset();
      return push(Ctx::kPort);
    }
    if (at == Ctx::kTop || at == Ctx::kNode || at == Ctx::kPort) return ++skip_, true;  // unknown
    return fail();
  }
  bool end_object() override {
    if (skip_ > 0) return --skip_, true;
    const Ctx at = stack_.back();
    stack_.pop_back();
    if (at == Ctx::kTop) {
      done_ = true;
      return finish();
    }
    if (at == Ctx::kSelf) return self_fields_.all() || fail();
    if (at == Ctx::kNode) {
      if (!node_fields_.all()) return fail();
      d_.model.nodes.push_back(std::move(node_));
      return true;
    }
    if (at == Ctx::kPort) {
      if (!port_fields_.all()) return fail();
      if (node_.ports.size() <= port_num_) node_.ports.resize(port_num_ + 1);
      node_.ports[port_num_] = std::move(port_);
      return true;
    }
    return fail();
  }
  bool start_array(std::size_t) override {
    if (skip_ > 0) return ++skip_, true;
    const Ctx at = stack_.empty() ? Ctx::kNone : stack_.back();
    if (at == Ctx::kTop) {
      if (key_ == "missing") return top_.set(kMissing), push(Ctx::kMissing);
      if (key_ == "warnings") return push(Ctx::kWarnings);
      if (key_ == "nodes") return top_.set(kNodes), push(Ctx::kNodes);
      return ++skip_, true;  // "paths", and what a later version adds
    }
    if (at == Ctx::kNode && key_ == "ports") return node_fields_.set(kPorts), push(Ctx::kPorts);
    if (at == Ctx::kNode && key_ == "lft") {
      node_fields_.set(kLft);
      node_.lft.clear();
      return push(Ctx::kLft);
    }
    if (at == Ctx::kPort && key_ == "pkeys") return port_fields_.set(kPkeys), push(Ctx::kPkeys);
    if (at == Ctx::kPort && key_ == "sl2vl") {
      port_fields_.set(kSl2Vl);
      port_.sl2vl.clear();
      return push(Ctx::kSl2VlTables);
    }
    if (at == Ctx::kSl2VlTables) {
      port_.sl2vl.emplace_back();
      sl_ = 0;
      return push(Ctx::kSl2VlTable);
    }
    if (at == Ctx::kNode || at == Ctx::kPort) return ++skip_, true;
    return fail();
  }
  bool end_array() override {
    if (skip_ > 0) return --skip_, true;
    const Ctx at = stack_.back();
    stack_.pop_back();
    if (at == Ctx::kSl2VlTable && sl_ != 16) return fail();
    return true;
  }

 private:
  enum class Ctx {
    kNone,
    kTop,
    kSelf,
    kMissing,
    kWarnings,
    kNodes,
    kNode,
    kPorts,
    kPort,
    kLft,
    kPkeys,
    kSl2VlTables,
    kSl2VlTable
  };
  struct Value {
    enum Kind { kOther, kInteger, kString } kind = kOther;
    int64_t integer = 0;
    std::string text;
  };
  // Required fields seen, a bit each.
  struct Fields {
    uint32_t seen = 0, wanted = 0;
    explicit Fields(uint32_t all) : wanted(all) {}
    void set(uint32_t bit) { seen |= bit; }
    bool all() const { return (seen & wanted) == wanted; }
    void reset() { seen = 0; }
  };
  // Top level.
  static constexpr uint32_t kPrefix = 1, kMissing = 2, kNodes = 4;
  // A node.
  static constexpr uint32_t kGuid = 1, kType = 2, kDescription = 4, kLft = 8, kPorts = 16;
  // A port.
  static constexpr uint32_t kPort = 1, kPortGuid = 2, kLid = 4, kLmc = 8, kMtu = 16, kRate = 32,
                            kPkeys = 64, kSl2Vl = 128, kPeerNode = 256, kPeerPort = 512;
  // Self.
  static constexpr uint32_t kSelfNode = 1, kSelfPort = 2;

  bool fail() {
    failed_ = true;
    return false;
  }
  bool push(Ctx c) {
    stack_.push_back(c);
    return true;
  }
  // An integer in [lo, hi] into `out`.
  template <typename T>
  bool integer(const Value& v, int64_t lo, int64_t hi, T& out) {
    if (v.kind != Value::kInteger || v.integer < lo || v.integer > hi) return fail();
    out = static_cast<T>(v.integer);
    return true;
  }
  bool guid(const Value& v, uint64_t& out) {
    if (v.kind != Value::kString) return fail();
    try {
      size_t used = 0;
      out = std::stoull(v.text, &used, 16);
      return used == v.text.size() || fail();
    } catch (const std::exception&) {
      return fail();
    }
  }

  bool scalar(Value v) {
    if (skip_ > 0) return true;
    const Ctx at = stack_.empty() ? Ctx::kNone : stack_.back();
    try {
      switch (at) {
        case Ctx::kTop:
          if (key_ == "subnet_prefix") return top_.set(kPrefix), guid(v, d_.model.subnet_prefix);
          if (key_ == "self" || key_ == "missing" || key_ == "nodes") return fail();
          return true;  // subnet_timeout (the daemon's option sets it), later additions
        case Ctx::kSelf:
          if (key_ == "node")
            return self_fields_.set(kSelfNode), integer(v, 0, INT32_MAX, d_.self.node);
          if (key_ == "port") return self_fields_.set(kSelfPort), integer(v, 0, 255, d_.self.port);
          return true;
        case Ctx::kMissing:
        case Ctx::kWarnings:
          if (v.kind != Value::kString) return fail();
          (at == Ctx::kMissing ? d_.missing : d_.warnings).push_back(std::move(v.text));
          return true;
        case Ctx::kNode:
          if (key_ == "guid") return node_fields_.set(kGuid), guid(v, node_.guid);
          if (key_ == "type") {
            node_fields_.set(kType);
            uint8_t type = 0;
            if (!integer(v, 0, 255, type)) return false;
            node_.type = static_cast<policy::NodeType>(type);
            return true;
          }
          if (key_ == "description") {
            node_fields_.set(kDescription);
            if (v.kind != Value::kString) return fail();
            node_.description = std::move(v.text);
            return true;
          }
          if (key_ == "lft") {
            node_fields_.set(kLft);
            if (v.kind != Value::kString) return fail();
            node_.lft = lft_from(v.text);
            return true;
          }
          if (key_ == "ports") return fail();
          return true;
        case Ctx::kLft: return integer(v, 0, 255, node_.lft.emplace_back());
        case Ctx::kPort:
          if (key_ == "port") return port_fields_.set(kPort), integer(v, 0, 255, port_num_);
          if (key_ == "guid") return port_fields_.set(kPortGuid), guid(v, port_.guid);
          if (key_ == "lid") return port_fields_.set(kLid), integer(v, 0, 0xFFFF, port_.lid);
          if (key_ == "lmc") return port_fields_.set(kLmc), integer(v, 0, 7, port_.lmc);
          if (key_ == "mtu_cap") return port_fields_.set(kMtu), integer(v, 0, 255, port_.mtu_cap);
          if (key_ == "rate") return port_fields_.set(kRate), integer(v, 0, 255, port_.rate);
          if (key_ == "capability_mask") return integer(v, 0, UINT32_MAX, port_.capability_mask);
          if (key_ == "capability_mask2") return integer(v, 0, 0xFFFF, port_.capability_mask2);
          if (key_ == "peer_node") {
            return port_fields_.set(kPeerNode), integer(v, -1, INT32_MAX, port_.peer_node);
          }
          if (key_ == "peer_port")
            return port_fields_.set(kPeerPort), integer(v, 0, 255, port_.peer_port);
          if (key_ == "sl2vl") {
            port_fields_.set(kSl2Vl);
            if (v.kind != Value::kString) return fail();
            port_.sl2vl = sl2vl_from(v.text);
            return true;
          }
          if (key_ == "pkeys") return fail();
          return true;
        case Ctx::kPkeys: return integer(v, 0, 0xFFFF, port_.pkeys.emplace_back());
        case Ctx::kSl2VlTable:
          if (sl_ >= 16) return fail();
          return integer(v, 0, 15, port_.sl2vl.back()[sl_++]);
        default: return fail();
      }
    } catch (const std::exception&) {  // a hex string that is not one
      return fail();
    }
  }

  // What the tree cannot say for itself: peers and the node of its own in range.
  bool finish() {
    const auto count = static_cast<int>(d_.model.nodes.size());
    for (const auto& n : d_.model.nodes)
      for (const auto& p : n.ports)
        if (p.peer_node >= count) return fail();
    if (!self_fields_.all() || d_.self.node >= count ||
        d_.self.port >= d_.model.nodes[static_cast<size_t>(d_.self.node)].ports.size()) {
      return fail();
    }
    d_.model.sm_port_guid = d_.model.port(d_.self).guid;
    d_.model.index();
    return true;
  }

  Discovery d_;
  std::vector<Ctx> stack_;
  std::string key_;
  int skip_ = 0;  // depth inside a value skipped
  bool failed_ = false, done_ = false;
  NodeModel node_;
  PortModel port_;
  size_t port_num_ = 0;
  size_t sl_ = 0;
  Fields top_{kPrefix | kMissing | kNodes}, self_fields_{kSelfNode | kSelfPort};
  Fields node_fields_{kGuid | kType | kDescription | kLft | kPorts};
  Fields port_fields_{kPort | kPortGuid | kLid | kLmc | kMtu | kRate | kPkeys | kSl2Vl | kPeerNode |
                      kPeerPort};
};

}  // namespace

std::optional<Discovery> discovery_from_json_text(std::string_view text) {
  ModelReader reader;
  const bool ok = nlohmann::json::sax_parse(text, &reader);
  if (!ok) return std::nullopt;
  return reader.result();
}

// The model back from --dump-fabric --json.
std::optional<Discovery> discovery_from_json(const nlohmann::json& j) {
  return discovery_from_json_text(j.dump());
}

}  // namespace rdmaqos::sad
