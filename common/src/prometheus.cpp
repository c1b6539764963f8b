// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Prometheus text exposition: HELP/TYPE lines, escaped labels, cumulative histogram buckets.
#include "rdma-qos/common/prometheus.h"

#include <fmt/format.h>

#include <cmath>

namespace rdmaqos::common {
namespace {

// Go's strconv formatting, which Prometheus parses: integers without a fraction, +Inf, NaN.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  // HELP text escapes only backslash and newline.
  std::string h;
  for (char c : help) {
    if (c == '\n')
      h.append("\\n");
    else if (c == '\\')
      h.append("\\\\");
    else
      h.push_back(c);
  }
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, h, name, type);
}

void PrometheusText::sample(std::string_view name, const Labels& labels, double value) {
  out_.append(name);
  bool first = true;
  auto add = [&](const std::pair<std::string, std::string>& l) {
    out_.push_back(first ? '{' : ',');
    first = false;
    out_ += fmt::format("{}=\"{}\"", l.first, escape_label_value(l.second));
  };
  for (const auto& l : common_) add(l);
  for (const auto& l : labels) add(l);
  if (!first) out_.push_back('}');
  out_ += fmt::format(" {}\n", number(value));
}

void PrometheusText::histogram(std::string_view name, const Labels& labels,
                               const std::vector<double>& bounds,
                               const std::vector<uint64_t>& buckets, double sum) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    cumulative += buckets[i];
    Labels with_le = labels;
    with_le.emplace_back("le", i < bounds.size() ? number(bounds[i]) : std::string("+Inf"));
    sample(fmt::format("{}_bucket", name), with_le, static_cast<double>(cumulative));
  }
  sample(fmt::format("{}_sum", name), labels, sum);
  sample(fmt::format("{}_count", name), labels, static_cast<double>(cumulative));
}

}  // namespace rdmaqos::common
