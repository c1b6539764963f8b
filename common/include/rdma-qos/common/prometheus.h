// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Prometheus text exposition format (version 0.0.4): the metric families a daemon's stats
// become for `--format prometheus`, a node-exporter textfile collector or a scrape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmaqos::common {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // Labels every sample carries (the daemon's ca and port, say).
  explicit PrometheusText(Labels common = {}) : common_(std::move(common)) {}

  // Starts a family: "# HELP" and "# TYPE" lines. type: counter, gauge, histogram.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // One sample of the current family (name may add a suffix: _bucket, _sum, _count).
  void sample(std::string_view name, const Labels& labels, double value);
  // A histogram from upper bounds and per-bucket (not cumulative) counts; the last count is
  // the +Inf bucket.
  void histogram(std::string_view name, const Labels& labels, const std::vector<double>& bounds,
                 const std::vector<uint64_t>& buckets, double sum);

  const std::string& text() const { return out_; }

 private:
  Labels common_;
  std::string out_;
};

// A label value with backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);

}  // namespace rdmaqos::common
