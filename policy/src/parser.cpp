// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Hand-written, line-oriented parser of OpenSM's qos-policy.conf syntax: the blocks and their
// fields (the qos-ulps shorthand is in qos_ulps.cpp, the checks after parsing in validate.cpp).
// It follows the lexing rules of OpenSM's lexer (blank dropping, octal numbers, comments, case;
// Documentation/opensm-semantics.md) but recovers after every error so one pass reports all.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <string>

#include "parser_parts.h"
#include "range_util.h"
#include "rdma-qos/policy/policy.h"
#include "text_util.h"

namespace rdmaqos::policy {

namespace {

enum class Ctx {
  kTop,
  kPortGroups,
  kPortGroup,
  kQosSetup,
  kVlarbTables,
  kVlarbScope,
  kSl2vlTables,
  kSl2vlScope,
  kQosLevels,
  kQosLevel,
  kMatchRules,
  kMatchRule,
  kUlps,
};

struct Block {
  std::string_view open;
  std::string_view close;
  Ctx ctx;
  Ctx parent;
};

constexpr std::array<Block, 13> kBlocks = {{
    {"port-groups", "end-port-groups", Ctx::kPortGroups, Ctx::kTop},
    {"port-group", "end-port-group", Ctx::kPortGroup, Ctx::kPortGroups},
    {"qos-setup", "end-qos-setup", Ctx::kQosSetup, Ctx::kTop},
    {"vlarb-tables", "end-vlarb-tables", Ctx::kVlarbTables, Ctx::kQosSetup},
    {"vlarb-scope", "end-vlarb-scope", Ctx::kVlarbScope, Ctx::kVlarbTables},
    {"sl2vl-tables", "end-sl2vl-tables", Ctx::kSl2vlTables, Ctx::kQosSetup},
    {"sl2vl-scope", "end-sl2vl-scope", Ctx::kSl2vlScope, Ctx::kSl2vlTables},
    {"qos-levels", "end-qos-levels", Ctx::kQosLevels, Ctx::kTop},
    {"qos-level", "end-qos-level", Ctx::kQosLevel, Ctx::kQosLevels},
    {"qos-match-rules", "end-qos-match-rules", Ctx::kMatchRules, Ctx::kTop},
    {"qos-match-rule", "end-qos-match-rule", Ctx::kMatchRule, Ctx::kMatchRules},
    {"qos-ulps", "end-qos-ulps", Ctx::kUlps, Ctx::kTop},
    {"", "", Ctx::kTop, Ctx::kTop},  // the file itself
}};

constexpr size_t kMaxErrors = 100;
constexpr size_t kMaxWarnings = 1000;

// Keeps the first kMaxErrors + 1 errors (the parser's own "too many errors" included) and
// kMaxWarnings warnings; the rest of each kind become one diagnostic saying how many.
void bound_diagnostics(std::vector<Diagnostic>& diagnostics) {
  std::vector<Diagnostic> kept;
  size_t errors = 0, warnings = 0, dropped_errors = 0, dropped_warnings = 0;
  std::optional<SourceLocation> first_dropped_error, first_dropped_warning;
  for (auto& d : diagnostics) {
    bool is_error = d.severity == Severity::kError;
    size_t& seen = is_error ? errors : warnings;
    if (++seen <= (is_error ? kMaxErrors + 1 : kMaxWarnings)) {
      kept.push_back(std::move(d));
      continue;
    }
    auto& first = is_error ? first_dropped_error : first_dropped_warning;
    if (!first) first = d.location;
    ++(is_error ? dropped_errors : dropped_warnings);
  }
  if (dropped_errors)
    kept.push_back({Severity::kError,
                    *first_dropped_error,
                    fmt::format("too many errors: {} more not shown", dropped_errors),
                    {}});
  if (dropped_warnings)
    kept.push_back({Severity::kWarning,
                    *first_dropped_warning,
                    fmt::format("too many warnings: {} more not shown", dropped_warnings),
                    {}});
  diagnostics = std::move(kept);
}

const Block& block_of(Ctx c) {
  for (const auto& b : kBlocks)
    if (b.ctx == c) return b;
  return kBlocks.back();
}

// Field keywords of each block (the keyword includes its colon, as in OpenSM's lexer).
struct FieldSet {
  Ctx ctx;
  std::vector<std::string_view> fields;
};

const std::vector<FieldSet>& field_sets() {
  static const std::vector<FieldSet> kSets = {
      {Ctx::kPortGroup,
       {"name", "use", "port-guid", "port-name", "pkey", "partition", "node-type"}},
      {Ctx::kVlarbScope,
       {"group", "across", "across-to", "across-from", "vlarb-high", "vlarb-low", "vl-high-limit"}},
      {Ctx::kSl2vlScope,
       {"group", "across", "across-to", "across-from", "from", "to", "sl2vl-table"}},
      {Ctx::kQosLevel,
       {"name", "use", "sl", "mtu-limit", "rate-limit", "packet-life", "pkey", "path-bits"}},
      {Ctx::kMatchRule,
       {"use", "qos-class", "service-id", "source", "destination", "pkey", "tclass",
        "qos-level-name"}},
  };
  return kSets;
}

bool is_field_of(Ctx c, std::string_view f) {
  for (const auto& s : field_sets())
    if (s.ctx == c) return std::find(s.fields.begin(), s.fields.end(), f) != s.fields.end();
  return false;
}

bool is_any_field(std::string_view f) {
  for (const auto& s : field_sets())
    if (std::find(s.fields.begin(), s.fields.end(), f) != s.fields.end()) return true;
  return false;
}

bool is_any_keyword(std::string_view w) {
  for (const auto& b : kBlocks)
    if (!b.open.empty() && (b.open == w || b.close == w)) return true;
  return is_any_field(w);
}

// One comma-separated item of a value, with and without its blanks.
struct Item {
  std::string text;  // blanks dropped (inside quotes: kept, quotes removed)
  std::string raw;   // as written, trimmed
  SourceLocation location;
  bool quoted = false;
  bool had_inner_blanks = false;
};

// A block being filled, with the line of each single-valued field seen (duplicate detection).
struct Open {
  Ctx ctx;
  SourceLocation location;
  std::map<std::string, int, std::less<>> seen;
  PortGroup group;
  QosLevel level;
  bool has_sl = false;
  MatchRule rule;
  VlArbScope vlarb;
  Sl2VlScope sl2vl;
};

class Parser : public ValueReader {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  ParseResult run() {
    stack_.push_back(Open{Ctx::kTop, {1, 1}, {}, {}, {}, false, {}, {}, {}});
    size_t start = 0;
    int line_no = 1;
    while (start <= text_.size() && !stopped_) {
      size_t nl = text_.find('\n', start);
      if (nl == std::string_view::npos) nl = text_.size();
      parse_line(text_.substr(start, nl - start), line_no);
      start = nl + 1;
      ++line_no;
    }
    while (stack_.size() > 1) {
      const Block& b = block_of(stack_.back().ctx);
      error(stack_.back().location, fmt::format("'{}' is never closed", b.open),
            fmt::format("add '{}'", b.close));
      close_top();
    }
    // After "too many errors" nothing more is said: the rest of the file was not read.
    if (!stopped_) validate_policy(result_, setup_refs_);
    std::stable_sort(result_.diagnostics.begin(), result_.diagnostics.end(),
                     [](const Diagnostic& a, const Diagnostic& b) {
                       return std::tie(a.location.line, a.location.column) <
                              std::tie(b.location.line, b.location.column);
                     });
    bound_diagnostics(result_.diagnostics);
    return std::move(result_);
  }

 private:
  // Diagnostics are bounded: a file that is mostly errors (or not a policy at all) gets
  // kMaxErrors of them and one "too many errors", and the rest of it is not read, so its cost
  // stays linear and small. Warnings never stop parsing (they never make a policy unusable);
  // bound_diagnostics() keeps the first kMaxWarnings of them.
  void error(SourceLocation at, std::string msg, std::string hint = {}) override {
    if (stopped_) return;
    if (errors_ == kMaxErrors) {
      result_.diagnostics.push_back({Severity::kError, at,
                                     fmt::format("too many errors ({}); stopping here", kMaxErrors),
                                     "fix the errors above and check the file again"});
      stopped_ = true;
      return;
    }
    ++errors_;
    result_.diagnostics.push_back({Severity::kError, at, std::move(msg), std::move(hint)});
  }
  void warning(SourceLocation at, std::string msg, std::string hint = {}) override {
    if (stopped_) return;
    result_.diagnostics.push_back({Severity::kWarning, at, std::move(msg), std::move(hint)});
  }

  Ctx ctx() const { return stack_.back().ctx; }

  void parse_line(std::string_view line, int line_no) {
    // '#' starts a comment outside quotes, also after a value and on a last line without a
    // final newline (OpenSM rejects the latter; the compatibility table says accept it).
    bool quoted = false;
    size_t end = line.size();
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') quoted = !quoted;
      if (line[i] == '#' && !quoted) {
        end = i;
        break;
      }
    }
    line = line.substr(0, end);
    size_t pos = 0;
    while (true) {
      while (pos < line.size() && is_blank(line[pos])) ++pos;
      if (pos >= line.size()) return;
      SourceLocation at{line_no, static_cast<int>(pos) + 1};
      size_t wend = pos;
      while (wend < line.size() && is_word_char(line[wend])) ++wend;
      std::string_view word = line.substr(pos, wend - pos);
      if (word.empty()) {
        error(at, fmt::format("unexpected '{}'", line[pos]));
        return;
      }
      if (handle_block_keyword(word, at)) {
        pos = wend;
        continue;
      }
      if (ctx() == Ctx::kUlps) {
        parse_qos_ulp(line.substr(pos), at, line, *this, result_.policy);
        return;
      }
      size_t colon = wend;
      while (colon < line.size() && is_blank(line[colon])) ++colon;
      if (colon < line.size() && line[colon] == ':') {
        handle_field(word, at, line.substr(colon + 1), line_no, static_cast<int>(colon) + 2);
        return;
      }
      unknown_keyword(word, at);
      return;
    }
  }

  void unknown_keyword(std::string_view word, SourceLocation at) {
    std::string low = lower(word);
    if (low != word && is_any_keyword(low)) {
      error(at, fmt::format("unknown keyword '{}'", word),
            fmt::format("keywords are lower case: '{}'", low));
    } else if (is_any_field(word)) {
      error(at, fmt::format("'{}' must be followed by ':'", word));
    } else {
      error(at, fmt::format("unknown keyword '{}'", word));
    }
  }

  // Section open/close keywords; returns false when `word` is not one.
  bool handle_block_keyword(std::string_view word, SourceLocation at) {
    for (const auto& b : kBlocks) {
      if (b.open.empty()) continue;
      if (word == b.open) {
        // The same block opened again while one is open means its end is missing: close it
        // first. So no kind of block is on the stack twice, the stack stays a few deep and a
        // file of misplaced keywords costs linear time (it used to nest one frame per line
        // and search the whole stack on each).
        if (std::any_of(stack_.begin(), stack_.end(),
                        [&](const Open& o) { return o.ctx == b.ctx; })) {
          while (ctx() != b.ctx) missing_end(at, word);
          missing_end(at, word);
        }
        if (ctx() != b.parent) {
          auto it = std::find_if(stack_.begin(), stack_.end(),
                                 [&](const Open& o) { return o.ctx == b.parent; });
          if (it != stack_.end()) {
            while (ctx() != b.parent) missing_end(at, word);
          } else {
            error(at, fmt::format("'{}' must be inside '{}'", b.open, block_of(b.parent).open));
          }
        }
        Open o{b.ctx, at, {}, {}, {}, false, {}, {}, {}};
        o.group.location = o.level.location = o.rule.location = o.vlarb.location =
            o.sl2vl.location = at;
        stack_.push_back(std::move(o));
        return true;
      }
      if (word == b.close) {
        auto it = std::find_if(stack_.begin(), stack_.end(),
                               [&](const Open& o) { return o.ctx == b.ctx; });
        if (it == stack_.end()) {
          error(at, fmt::format("'{}' without a matching '{}'", b.close, b.open));
          return true;
        }
        while (ctx() != b.ctx) missing_end(at, word);
        stack_.back().rule.end_line = at.line;
        close_top();
        return true;
      }
    }
    return false;
  }

  void missing_end(SourceLocation at, std::string_view before) {
    const Block& inner = block_of(ctx());
    error(at, fmt::format("missing '{}' before '{}'", inner.close, before),
          fmt::format("'{}' opened at line {}", inner.open, stack_.back().location.line));
    stack_.back().rule.end_line = at.line;
    close_top();
  }

  void close_top() {
    Open o = std::move(stack_.back());
    stack_.pop_back();
    Policy& p = result_.policy;
    switch (o.ctx) {
      case Ctx::kPortGroup:
        if (o.group.name.empty()) {
          error(o.location, "port-group has no 'name'");
        } else {
          o.group.port_guids = merge_ranges(std::move(o.group.port_guids));
          o.group.pkeys = merge_ranges(std::move(o.group.pkeys));
          p.port_groups.push_back(std::move(o.group));
        }
        break;
      case Ctx::kQosLevel:
        if (o.level.name.empty()) error(o.location, "qos-level has no 'name'");
        if (!o.has_sl)
          error(o.location, o.level.name.empty()
                                ? std::string("qos-level has no 'sl'")
                                : fmt::format("qos-level '{}' has no 'sl'", o.level.name));
        if (!o.level.name.empty()) {
          o.level.pkeys = merge_ranges(std::move(o.level.pkeys));
          o.level.path_bits = merge_ranges(std::move(o.level.path_bits));
          p.levels.push_back(std::move(o.level));
        }
        break;
      case Ctx::kMatchRule: {
        MatchRule& r = o.rule;
        if (r.level_name.empty()) {
          error(o.location, "qos-match-rule has no 'qos-level-name'");
          break;
        }
        r.qos_classes = merge_rule_ranges(std::move(r.qos_classes), "qos-class", o.location);
        r.service_ids = merge_rule_ranges(std::move(r.service_ids), "service-id", o.location);
        r.pkeys = merge_rule_ranges(std::move(r.pkeys), "pkey", o.location);
        r.tclasses = merge_rule_ranges(std::move(r.tclasses), "tclass", o.location);
        r.text = fmt::format("qos-match-rule (lines {}-{})", o.location.line, r.end_line);
        p.rules.push_back(std::move(r));
        break;
      }
      case Ctx::kVlarbScope:
        if (o.vlarb.groups.empty() && o.vlarb.across.empty() && o.vlarb.across_to.empty() &&
            o.vlarb.across_from.empty())
          warning(o.location, "vlarb-scope selects no ports",
                  "add 'group', 'across', 'across-to' or 'across-from'");
        p.setup.vlarb_scopes.push_back(std::move(o.vlarb));
        break;
      case Ctx::kSl2vlScope:
        if (o.sl2vl.groups.empty() && o.sl2vl.across.empty() && o.sl2vl.across_to.empty() &&
            o.sl2vl.across_from.empty())
          warning(o.location, "sl2vl-scope selects no ports",
                  "add 'group', 'across', 'across-to' or 'across-from'");
        if (o.sl2vl.sl2vl.empty()) warning(o.location, "sl2vl-scope has no 'sl2vl-table'");
        p.setup.sl2vl_scopes.push_back(std::move(o.sl2vl));
        break;
      default: break;
    }
  }

  RangeList merge_rule_ranges(RangeList ranges, std::string_view field, SourceLocation at) {
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.low < b.low; });
    for (size_t i = 1; i < ranges.size(); ++i) {
      if (ranges[i].low <= ranges[i - 1].high) {
        warning(at, fmt::format("overlapping {} ranges in one rule: {} and {}", field,
                                format_range(ranges[i - 1]), format_range(ranges[i])));
        break;
      }
    }
    return merge_ranges(std::move(ranges));
  }

  // ---- values ---------------------------------------------------------------------------

  std::vector<Item> split_items(std::string_view value, int line_no, int col0) {
    std::vector<Item> items;
    size_t i = 0;
    while (i <= value.size()) {
      size_t start = i;
      bool quoted = false;
      while (i < value.size() && (quoted || value[i] != ',')) {
        if (value[i] == '"') quoted = !quoted;
        ++i;
      }
      std::string_view piece = value.substr(start, i - start);
      size_t b = 0, e = piece.size();
      while (b < e && is_blank(piece[b])) ++b;
      while (e > b && is_blank(piece[e - 1])) --e;
      Item it;
      it.raw = std::string(piece.substr(b, e - b));
      it.location = {line_no, col0 + static_cast<int>(start + b)};
      if (it.raw.size() >= 2 && it.raw.front() == '"' && it.raw.back() == '"') {
        it.quoted = true;
        it.text = it.raw.substr(1, it.raw.size() - 2);
      } else {
        for (char c : it.raw) {
          if (is_blank(c))
            it.had_inner_blanks = true;
          else if (c != '"')
            it.text += c;
        }
      }
      if (!it.raw.empty()) items.push_back(std::move(it));
      ++i;
    }
    return items;
  }

  std::optional<uint64_t> number(std::string_view s, SourceLocation at) {
    if (s.empty()) {
      error(at, "expected a number");
      return std::nullopt;
    }
    uint64_t v = 0;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      for (char c : s.substr(2)) {
        if (!std::isxdigit(static_cast<unsigned char>(c))) {
          error(at, fmt::format("'{}' is not a number", s));
          return std::nullopt;
        }
        if (v >> 60) {
          error(at, fmt::format("'{}' does not fit in 64 bits", s));
          return std::nullopt;
        }
        v = v * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                               ? c - '0'
                                               : std::tolower(c) - 'a' + 10);
      }
      return v;
    }
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        error(at, fmt::format("'{}' is not a number", s));
        return std::nullopt;
      }
    }
    if (s.size() > 1 && s[0] == '0') {
      // strtoull(..., 0) reads a leading 0 as octal; OpenSM silently stops at 8 or 9.
      if (s.find_first_of("89") != std::string_view::npos) {
        error(at, fmt::format("'{}' is not a valid octal number", s),
              "a leading 0 means octal, as in OpenSM; drop the leading 0");
        return std::nullopt;
      }
      for (char c : s) {
        // strtoull would saturate (ERANGE); wrapping would silently turn it into a small value.
        if (v >> 61) {
          error(at, fmt::format("'{}' does not fit in 64 bits", s));
          return std::nullopt;
        }
        v = v * 8 + static_cast<uint64_t>(c - '0');
      }
      warning(at, fmt::format("'{}' is octal ({}), as OpenSM reads it", s, v),
              fmt::format("write {} or 0x{:x} to say what you mean", v, v));
      return v;
    }
    for (char c : s) {
      uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10) {
        error(at, fmt::format("'{}' does not fit in 64 bits", s));
        return std::nullopt;
      }
      v = v * 10 + d;
    }
    return v;
  }

  // "a" or "a-b" (blanks dropped); a reversed range is swapped with a warning.
  std::optional<Range> range(const Item& it) {
    size_t dash = it.text.find('-');
    if (dash == std::string::npos) {
      auto v = number(it.text, it.location);
      if (!v) return std::nullopt;
      return Range{*v, *v};
    }
    auto lo = number(it.text.substr(0, dash), it.location);
    auto hi = number(it.text.substr(dash + 1), it.location);
    if (!lo || !hi) return std::nullopt;
    if (*lo > *hi) {
      warning(it.location,
              fmt::format("reversed range {}, read as {}-{}", it.text, it.text.substr(dash + 1),
                          it.text.substr(0, dash)),
              "OpenSM swaps reversed ranges silently");
      std::swap(*lo, *hi);
    }
    return Range{*lo, *hi};
  }

  // Appends the ranges of a list value; values above `max` are errors.
  void range_list(std::string_view value, int line_no, int col0, std::string_view field,
                  uint64_t max, RangeList& out, bool pkey_mask = false) override {
    auto items = split_items(value, line_no, col0);
    if (items.empty()) error({line_no, col0}, fmt::format("'{}' needs a value", field));
    for (const auto& it : items) {
      auto r = range(it);
      if (!r) continue;
      if (r->high > max) {
        size_t dash = it.text.find('-');
        std::string written = dash == std::string::npos ? it.text : it.text.substr(dash + 1);
        error(it.location, fmt::format("{} {} is out of range (0..{})", field, written,
                                       format_number(max, max)));
        continue;
      }
      if (pkey_mask) *r = Range{r->low & 0x7FFF, r->high & 0x7FFF};
      if (pkey_mask && r->low > r->high) *r = Range{0, 0x7FFF};  // 0x7FFF-0x8001 wraps
      out.push_back(*r);
    }
  }

  std::optional<uint64_t> single_number(std::string_view value, int line_no, int col0,
                                        std::string_view field, uint64_t min,
                                        uint64_t max) override {
    auto items = split_items(value, line_no, col0);
    if (items.size() != 1) {
      error({line_no, col0}, fmt::format("'{}' takes one number", field));
      return std::nullopt;
    }
    auto v = number(items[0].text, items[0].location);
    if (!v) return std::nullopt;
    if (*v < min || *v > max) {
      error(items[0].location, fmt::format("{} {} is out of range ({}..{})", field, *v, min, max));
      return std::nullopt;
    }
    return v;
  }

  std::vector<std::string> names(std::string_view value, int line_no, int col0,
                                 std::string_view field,
                                 std::vector<SourceLocation>* locations = nullptr) {
    std::vector<std::string> out;
    auto items = split_items(value, line_no, col0);
    if (items.empty()) error({line_no, col0}, fmt::format("'{}' needs a value", field));
    for (auto& it : items) {
      out.push_back(it.text);
      if (locations) locations->push_back(it.location);
    }
    return out;
  }

  std::string single_name(std::string_view value, int line_no, int col0, std::string_view field) {
    auto items = split_items(value, line_no, col0);
    if (items.size() != 1) {
      error({line_no, col0}, fmt::format("'{}' takes one name", field));
      return items.empty() ? std::string() : items[0].text;
    }
    return items[0].text;
  }

  // ---- fields ---------------------------------------------------------------------------

  bool once(std::string_view field, SourceLocation at) {
    auto& seen = stack_.back().seen;
    auto it = seen.find(field);
    if (it != seen.end()) {
      error(at, fmt::format("duplicate '{}' in '{}' (first at line {})", field,
                            block_of(ctx()).open, it->second));
      return false;
    }
    seen.emplace(std::string(field), at.line);
    return true;
  }

  void handle_field(std::string_view field, SourceLocation at, std::string_view value, int line_no,
                    int col0) {
    if (!is_field_of(ctx(), field)) {
      if (is_any_field(field)) {
        std::string where = ctx() == Ctx::kTop ? std::string("outside any section")
                                               : fmt::format("in '{}'", block_of(ctx()).open);
        error(at, fmt::format("'{}' is not allowed {}", field, where));
      } else {
        unknown_keyword(field, at);
      }
      return;
    }
    Open& o = stack_.back();
    const bool is_use = field == "use";
    if (is_use) {
      size_t b = 0;
      while (b < value.size() && is_blank(value[b])) ++b;
      std::string text(value.substr(b));
      while (!text.empty() && is_blank(text.back())) text.pop_back();
      if (!once(field, at)) return;
      if (o.ctx == Ctx::kPortGroup) o.group.use = text;
      if (o.ctx == Ctx::kQosLevel) o.level.use = text;
      if (o.ctx == Ctx::kMatchRule) o.rule.use = text;
      return;
    }
    switch (o.ctx) {
      case Ctx::kPortGroup: port_group_field(o.group, field, at, value, line_no, col0); break;
      case Ctx::kQosLevel: level_field(o, field, at, value, line_no, col0); break;
      case Ctx::kMatchRule: rule_field(o.rule, field, at, value, line_no, col0); break;
      case Ctx::kVlarbScope: vlarb_field(o.vlarb, field, at, value, line_no, col0); break;
      case Ctx::kSl2vlScope: sl2vl_field(o.sl2vl, field, at, value, line_no, col0); break;
      default: break;
    }
  }

  void port_group_field(PortGroup& g, std::string_view field, SourceLocation at,
                        std::string_view value, int line_no, int col0) {
    if (field == "name") {
      if (once(field, at)) g.name = single_name(value, line_no, col0, field);
    } else if (field == "port-guid") {
      range_list(value, line_no, col0, field, UINT64_MAX, g.port_guids);
    } else if (field == "pkey") {
      range_list(value, line_no, col0, field, 0xFFFF, g.pkeys, true);
    } else if (field == "partition") {
      for (auto& n : names(value, line_no, col0, field)) g.partitions.push_back(n);
    } else if (field == "node-type") {
      auto items = split_items(value, line_no, col0);
      if (items.empty()) error({line_no, col0}, "'node-type' needs a value");
      for (const auto& it : items) {
        std::string t = lower(it.text);
        if (t == "ca") {
          g.node_types |= kNodeTypeCa;
        } else if (t == "switch") {
          g.node_types |= kNodeTypeSwitch;
        } else if (t == "router") {
          g.node_types |= kNodeTypeRouter;
        } else if (t == "all") {
          g.node_types |= kNodeTypeAll;
        } else if (t == "self") {
          g.self = true;
        } else {
          error(it.location, fmt::format("unknown node-type '{}'", it.raw),
                "node types are CA, SWITCH, ROUTER, ALL and SELF");
        }
      }
    } else if (field == "port-name") {
      auto items = split_items(value, line_no, col0);
      if (items.empty()) error({line_no, col0}, "'port-name' needs a value");
      for (const auto& it : items) port_name(g, it);
    }
  }

  void port_name(PortGroup& g, const Item& it) {
    // Unquoted names keep their blanks here: OpenSM drops them and never matches.
    std::string text = it.quoted ? it.text : it.raw;
    size_t slash = text.rfind('/');
    if (slash == std::string::npos || slash + 1 >= text.size() ||
        (text[slash + 1] != 'P' && text[slash + 1] != 'p')) {
      error(it.location, fmt::format("port-name '{}' has no '/P<n>' port suffix", text),
            "write \"node description/P<port number>\"");
      return;
    }
    std::string_view num = std::string_view(text).substr(slash + 2);
    bool digits = !num.empty() && std::all_of(num.begin(), num.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (!digits || num.size() > 3) {
      error(it.location, fmt::format("port-name '{}' has no '/P<n>' port suffix", text),
            "write \"node description/P<port number>\"");
      return;
    }
    int port = std::stoi(std::string(num));
    if (port == 0 || port > 254) {
      error(it.location,
            fmt::format("port number {} in port-name '{}' is out of range (1..254)", port, text));
      return;
    }
    if (!it.quoted && it.had_inner_blanks) {
      warning(it.location,
              fmt::format("unquoted port-name '{}' contains blanks: OpenSM drops them and never "
                          "matches it; rdma-qos matches it as written",
                          text),
              fmt::format("write it quoted: \"{}\"", text));
    }
    g.port_names.push_back(PortName{text.substr(0, slash), port, it.location});
  }

  void level_field(Open& o, std::string_view field, SourceLocation at, std::string_view value,
                   int line_no, int col0) {
    QosLevel& l = o.level;
    if (field == "name") {
      if (once(field, at)) l.name = single_name(value, line_no, col0, field);
    } else if (field == "sl") {
      if (!once(field, at)) return;
      o.has_sl = true;  // a bad value is its own error, not also "no 'sl'"
      if (auto v = single_number(value, line_no, col0, field, 0, 15))
        l.sl = static_cast<uint8_t>(*v);
    } else if (field == "mtu-limit") {
      if (!once(field, at)) return;
      if (auto v = single_number(value, line_no, col0, field, 1, 5))
        l.mtu_limit = static_cast<uint8_t>(*v);
    } else if (field == "rate-limit") {
      if (!once(field, at)) return;
      if (auto v = single_number(value, line_no, col0, field, 2, 22))
        l.rate_limit = static_cast<uint8_t>(*v);
    } else if (field == "packet-life") {
      if (!once(field, at)) return;
      // 6 bits in a PathRecord: only a larger value would spill into the selector bits.
      if (auto v = single_number(value, line_no, col0, field, 0, 63))
        l.packet_life = static_cast<uint8_t>(*v);
    } else if (field == "pkey") {
      range_list(value, line_no, col0, field, 0xFFFF, l.pkeys, true);
    } else if (field == "path-bits") {
      range_list(value, line_no, col0, field, 0x7F, l.path_bits);
    }
  }

  void rule_field(MatchRule& r, std::string_view field, SourceLocation at, std::string_view value,
                  int line_no, int col0) {
    if (field == "qos-class") {
      range_list(value, line_no, col0, field, 0xFFF, r.qos_classes);
    } else if (field == "service-id") {
      range_list(value, line_no, col0, field, UINT64_MAX, r.service_ids);
    } else if (field == "pkey") {
      range_list(value, line_no, col0, field, 0xFFFF, r.pkeys, true);
    } else if (field == "tclass") {
      // An rdma-qos extension: the 8-bit traffic class (IPv6 TClass / IPv4 TOS on RoCE).
      range_list(value, line_no, col0, field, 0xFF, r.tclasses);
      if (!r.tclass_location) r.tclass_location = at;
    } else if (field == "source") {
      for (auto& n : names(value, line_no, col0, field, &r.source_locations))
        r.sources.push_back(n);
    } else if (field == "destination") {
      for (auto& n : names(value, line_no, col0, field, &r.destination_locations))
        r.destinations.push_back(n);
    } else if (field == "qos-level-name") {
      if (!once(field, at)) return;
      r.level_name = single_name(value, line_no, col0, field);
      r.level_location = at;
    }
  }

  template <typename Scope>
  bool scope_groups(Scope& s, std::string_view field, std::string_view value, int line_no,
                    int col0) {
    std::vector<std::string>* target = field == "group"         ? &s.groups
                                       : field == "across"      ? &s.across
                                       : field == "across-to"   ? &s.across_to
                                       : field == "across-from" ? &s.across_from
                                                                : nullptr;
    if (!target) return false;
    std::vector<SourceLocation> locs;
    for (auto& n : names(value, line_no, col0, field, &locs)) target->push_back(n);
    for (size_t i = 0; i < locs.size(); ++i)
      setup_refs_.push_back({(*target)[target->size() - locs.size() + i], locs[i]});
    return true;
  }

  void vlarb_field(VlArbScope& s, std::string_view field, SourceLocation at, std::string_view value,
                   int line_no, int col0) {
    if (scope_groups(s, field, value, line_no, col0)) return;
    if (field == "vl-high-limit") {
      if (!once(field, at)) return;
      if (auto v = single_number(value, line_no, col0, field, 0, 255))
        s.vl_high_limit = static_cast<uint8_t>(*v);
      return;
    }
    auto& table = field == "vlarb-high" ? s.vlarb_high : s.vlarb_low;
    auto items = split_items(value, line_no, col0);
    if (items.empty()) error({line_no, col0}, fmt::format("'{}' needs a value", field));
    for (const auto& it : items) {
      size_t colon = it.text.find(':');
      if (colon == std::string::npos) {
        error(it.location, fmt::format("'{}' entry '{}' is not VL:weight", field, it.raw));
        continue;
      }
      auto vl = number(it.text.substr(0, colon), it.location);
      auto w = number(it.text.substr(colon + 1), it.location);
      if (!vl || !w) continue;
      if (*vl > 14) {
        error(it.location, fmt::format("VL {} is out of range (0..14)", *vl));
        continue;
      }
      if (*w > 255) {
        error(it.location, fmt::format("weight {} is out of range (0..255)", *w));
        continue;
      }
      table.emplace_back(static_cast<uint8_t>(*vl), static_cast<uint8_t>(*w));
    }
  }

  void sl2vl_field(Sl2VlScope& s, std::string_view field, SourceLocation at, std::string_view value,
                   int line_no, int col0) {
    if (scope_groups(s, field, value, line_no, col0)) return;
    if (field == "from" || field == "to") {
      auto& ports = field == "from" ? s.from_ports : s.to_ports;
      bool& all = field == "from" ? s.from_all : s.to_all;
      for (const auto& it : split_items(value, line_no, col0)) {
        if (it.text == "*") {
          all = true;
          continue;
        }
        RangeList rl;
        range_list(it.raw, it.location.line, it.location.column, field, 254, rl);
        for (const auto& r : rl)
          for (uint64_t p = r.low; p <= r.high; ++p) ports.push_back(static_cast<uint8_t>(p));
      }
      return;
    }
    if (field == "sl2vl-table") {
      if (!once(field, at)) return;
      auto items = split_items(value, line_no, col0);
      for (const auto& it : items) {
        auto v = number(it.text, it.location);
        if (!v) continue;
        if (*v > 15) {
          error(it.location, fmt::format("VL {} is out of range (0..15)", *v));
          continue;
        }
        s.sl2vl.push_back(static_cast<uint8_t>(*v));
      }
      // The RFC's rule: fewer than 16 values leave the remaining SLs on VL 0.
      if (items.size() > 16)
        error(at,
              fmt::format("sl2vl-table has {} entries, at most 16 (one VL per SL)", items.size()));
      else if (items.empty())
        error(at, "sl2vl-table has no entries (one VL per SL, from SL 0)");
      s.sl2vl.resize(16, 0);
    }
  }

  std::string_view text_;
  size_t errors_ = 0;
  bool stopped_ = false;  // kMaxErrors reached: the rest of the file is not read
  std::vector<Open> stack_;
  std::vector<std::pair<std::string, SourceLocation>> setup_refs_;
  ParseResult result_;
};

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const QosLevel* Policy::find_level(std::string_view name) const {
  for (const auto& l : levels)
    if (iequals(l.name, name)) return &l;
  return nullptr;
}

const PortGroup* Policy::find_group(std::string_view name) const {
  for (const auto& g : port_groups)
    if (iequals(g.name, name)) return &g;
  return nullptr;
}

const QosLevel* Policy::default_level() const {
  return find_level("DEFAULT");
}

ParseResult parse_policy(std::string_view text) {
  return Parser(text).run();
}

}  // namespace rdmaqos::policy
