// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Metrics declared once per daemon: a Table of metric families (name, type, help, label names)
// is the one list of what a daemon exports; a Snapshot is filled against it when the stats are
// asked for, and both forms are derived from that one snapshot: the generic JSON form (the
// "metrics" member of the stats reply) and Prometheus' text exposition format. The CLI renders
// the JSON form it receives over the control socket as Prometheus text, whichever daemon sent
// it, through the same code (prometheus_text(const nlohmann::json&)).
//
// The JSON form, an array with one object per family, in the table's order:
//   {"name": "rdma_qos_sad_requests_total", "type": "counter", "help": "...",
//    "labels": ["ca", "port", "method", "attribute"],
//    "samples": [{"labels": ["mlx5_0", "1", "Get", "PathRecord"], "value": 6}]}
// A histogram's sample has, instead of "value", "bounds" (upper bounds), "buckets" (per bucket,
// not cumulative; one more than the bounds: the last is +Inf), "count" and "sum".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdma-qos/common/result.h"

namespace rdmaqos::common::metrics {

enum class Type { kCounter, kGauge, kHistogram };

// "counter", "gauge", "histogram" (Prometheus' TYPE words).
const char* type_name(Type type);

// One family as its daemon declares it. `name` is given without the table's prefix; `labels`
// are the sample's own label names, in the order they are written.
struct Family {
  std::string name;
  Type type = Type::kCounter;
  std::string help;
  std::vector<std::string> labels = {};
};

// A daemon's metric families. `prefix` is put before every family name ("rdma_qos_sad_");
// `daemon_labels` are labels every sample carries, written before its own (a daemon's ca and
// port, say).
class Table {
 public:
  Table(std::string prefix, std::vector<std::string> daemon_labels, std::vector<Family> families);

  const std::string& prefix() const { return prefix_; }
  const std::vector<std::string>& daemon_labels() const { return daemon_labels_; }
  const std::vector<Family>& families() const { return families_; }
  // The index of the family named `name` (without the prefix), or -1.
  int find(std::string_view name) const;

  // What Prometheus or promtool would refuse in the declarations, one sentence each: a name or
  // label name out of [a-zA-Z_][a-zA-Z0-9_]*, a family declared twice, a label twice in a
  // family, a counter not ending in _total, an empty help text, a histogram labelled "le".
  // Each daemon's unit tests require it empty.
  std::vector<std::string> problems() const;

 private:
  std::string prefix_;
  std::vector<std::string> daemon_labels_;
  std::vector<Family> families_;
  std::unordered_map<std::string, int> index_;
};

// One sample; label values in the order of the family's labels (its daemon labels first).
struct Sample {
  std::vector<std::string> labels;
  double value = 0;  // counter, gauge
  // histogram
  std::vector<double> bounds;
  std::vector<uint64_t> buckets;
  double sum = 0;
};

// A family with its samples, complete in itself: what the JSON form holds and what is written.
struct FamilySamples {
  std::string name;  // with the prefix
  Type type = Type::kCounter;
  std::string help;
  std::vector<std::string> labels;  // the daemon labels, then the family's own
  std::vector<Sample> samples;
};

// The values of a table's families at one moment. Every declared family is in it (with no
// samples until some are added), in the table's order; samples keep the order they were added.
class Snapshot {
 public:
  // `daemon_label_values`: one per daemon label of the table, carried by every sample.
  explicit Snapshot(const Table& table, std::vector<std::string> daemon_label_values = {});

  // A counter's or gauge's sample: `family` without the prefix, `labels` the values of the
  // family's own labels. A family the table lacks, a label count that differs from the
  // declaration, a histogram family: a programming error, recorded in problems() and the
  // sample left out.
  void add(std::string_view family, std::vector<std::string> labels, double value);
  // A histogram's sample from upper bounds and per-bucket counts (bounds.size() + 1 of them:
  // the last is +Inf); the same checks, and the bucket count.
  void histogram(std::string_view family, std::vector<std::string> labels,
                 std::vector<double> bounds, std::vector<uint64_t> buckets, double sum);

  const std::vector<FamilySamples>& families() const { return families_; }
  // The programming errors met while filling it (empty when all is well; tests require that).
  const std::vector<std::string>& problems() const { return problems_; }

  // The snapshot a JSON form describes, checked: known types, label counts that match, bucket
  // counts that fit their bounds.
  static Result<Snapshot> from_json(const nlohmann::json& metrics);

 private:
  Snapshot() = default;
  FamilySamples* family_for(std::string_view family, const std::vector<std::string>& labels,
                            bool histogram);

  const Table* table_ = nullptr;
  std::vector<std::string> daemon_values_;
  std::vector<FamilySamples> families_;
  std::vector<std::string> problems_;
};

// The JSON form (see above).
nlohmann::json to_json(const Snapshot& snapshot);

// Prometheus text (exposition format 0.0.4): HELP and TYPE of every family, then its samples.
std::string prometheus_text(const Snapshot& snapshot);

// The JSON form a daemon sent (the "metrics" member of its stats reply) as Prometheus text, or
// why it cannot be (missing: a daemon older than this CLI; malformed).
Result<std::string> prometheus_text(const nlohmann::json& metrics);

}  // namespace rdmaqos::common::metrics
