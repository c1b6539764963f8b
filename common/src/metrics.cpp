// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Metric tables, the snapshots filled against them, and the two forms derived from a snapshot:
// JSON and Prometheus text.
#include "rdma-qos/common/metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <utility>

#include "rdma-qos/common/prometheus.h"

namespace rdmaqos::common::metrics {
namespace {

bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && (i == 0 || c < '0' || c > '9')) return false;
  }
  return true;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// A number as JSON: integers as integers (counters read as counts), infinities and NaN (which
// JSON lacks) as Prometheus writes them.
nlohmann::json number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return static_cast<int64_t>(v);
  return v;
}

bool read_number(const nlohmann::json& j, double& out) {
  if (j.is_number()) {
    out = j.get<double>();
    return true;
  }
  if (!j.is_string()) return false;
  const auto& s = j.get_ref<const std::string&>();
  if (s == "NaN")
    out = std::nan("");
  else if (s == "+Inf")
    out = INFINITY;
  else if (s == "-Inf")
    out = -INFINITY;
  else
    return false;
  return true;
}

Error malformed(std::string message) {
  return make_error(ErrorCode::kMalformed, "metrics: " + std::move(message));
}

}  // namespace

const char* type_name(Type type) {
  switch (type) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

Table::Table(std::string prefix, std::vector<std::string> daemon_labels,
             std::vector<Family> families)
    : prefix_(std::move(prefix)),
      daemon_labels_(std::move(daemon_labels)),
      families_(std::move(families)) {
  for (size_t i = 0; i < families_.size(); ++i)
    index_.emplace(families_[i].name, static_cast<int>(i));
}

int Table::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? -1 : it->second;
}

std::vector<std::string> Table::problems() const {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const Family& f : families_) {
    const std::string full = prefix_ + f.name;
    if (!valid_name(full)) out.push_back(fmt::format("'{}' is not a metric name", full));
    if (!names.insert(full).second) out.push_back(fmt::format("{} is declared twice", full));
    if (f.help.empty()) out.push_back(fmt::format("{} has no help text", full));
    if (f.type == Type::kCounter && !ends_with(full, "_total"))
      out.push_back(fmt::format("{} is a counter not named *_total", full));
    std::set<std::string> labels;
    std::vector<std::string> all = daemon_labels_;
    all.insert(all.end(), f.labels.begin(), f.labels.end());
    for (const std::string& l : all) {
      if (!valid_name(l) || l.starts_with("__"))
        out.push_back(fmt::format("{}: '{}' is not a label name", full, l));
      if (!labels.insert(l).second) out.push_back(fmt::format("{}: label {} twice", full, l));
      if (f.type == Type::kHistogram && l == "le")
        out.push_back(fmt::format("{}: a histogram may not have a label le", full));
    }
  }
  return out;
}

Snapshot::Snapshot(const Table& table, std::vector<std::string> daemon_label_values)
    : table_(&table), daemon_values_(std::move(daemon_label_values)) {
  if (daemon_values_.size() != table.daemon_labels().size()) {
    problems_.push_back(fmt::format("{} daemon label values for {} daemon labels",
                                    daemon_values_.size(), table.daemon_labels().size()));
    daemon_values_.resize(table.daemon_labels().size());
  }
  families_.reserve(table.families().size());
  for (const Family& f : table.families()) {
    FamilySamples fs{table.prefix() + f.name, f.type, f.help, table.daemon_labels(), {}};
    fs.labels.insert(fs.labels.end(), f.labels.begin(), f.labels.end());
    families_.push_back(std::move(fs));
  }
}

FamilySamples* Snapshot::family_for(std::string_view family, const std::vector<std::string>& labels,
                                    bool histogram) {
  const int i = table_ == nullptr ? -1 : table_->find(family);
  if (i < 0) {
    problems_.push_back(fmt::format("a sample of {}, which the table does not declare", family));
    return nullptr;
  }
  const Family& f = table_->families()[static_cast<size_t>(i)];
  if (labels.size() != f.labels.size()) {
    problems_.push_back(fmt::format("a sample of {} with {} labels; it declares {}", family,
                                    labels.size(), f.labels.size()));
    return nullptr;
  }
  if ((f.type == Type::kHistogram) != histogram) {
    problems_.push_back(fmt::format("a {} sample of {}, a {}", histogram ? "histogram" : "plain",
                                    family, type_name(f.type)));
    return nullptr;
  }
  return &families_[static_cast<size_t>(i)];
}

void Snapshot::add(std::string_view family, std::vector<std::string> labels, double value) {
  FamilySamples* f = family_for(family, labels, false);
  if (f == nullptr) return;
  Sample s;
  s.labels = daemon_values_;
  s.labels.insert(s.labels.end(), std::make_move_iterator(labels.begin()),
                  std::make_move_iterator(labels.end()));
  s.value = value;
  f->samples.push_back(std::move(s));
}

void Snapshot::histogram(std::string_view family, std::vector<std::string> labels,
                         std::vector<double> bounds, std::vector<uint64_t> buckets, double sum) {
  FamilySamples* f = family_for(family, labels, true);
  if (f == nullptr) return;
  if (buckets.size() != bounds.size() + 1) {
    problems_.push_back(fmt::format("a sample of {} with {} buckets for {} bounds", family,
                                    buckets.size(), bounds.size()));
    return;
  }
  Sample s;
  s.labels = daemon_values_;
  s.labels.insert(s.labels.end(), std::make_move_iterator(labels.begin()),
                  std::make_move_iterator(labels.end()));
  s.bounds = std::move(bounds);
  s.buckets = std::move(buckets);
  s.sum = sum;
  f->samples.push_back(std::move(s));
}

nlohmann::json to_json(const Snapshot& snapshot) {
  nlohmann::json out = nlohmann::json::array();
  for (const FamilySamples& f : snapshot.families()) {
    nlohmann::json samples = nlohmann::json::array();
    for (const Sample& s : f.samples) {
      nlohmann::json j = {{"labels", s.labels}};
      if (f.type == Type::kHistogram) {
        uint64_t count = 0;
        for (uint64_t b : s.buckets) count += b;
        j["bounds"] = s.bounds;
        j["buckets"] = s.buckets;
        j["count"] = count;
        j["sum"] = number(s.sum);
      } else {
        j["value"] = number(s.value);
      }
      samples.push_back(std::move(j));
    }
    out.push_back({{"name", f.name},
                   {"type", type_name(f.type)},
                   {"help", f.help},
                   {"labels", f.labels},
                   {"samples", std::move(samples)}});
  }
  return out;
}

Result<Snapshot> Snapshot::from_json(const nlohmann::json& metrics) {
  if (!metrics.is_array()) return malformed("not an array of metric families");
  Snapshot snapshot;
  try {
    for (const nlohmann::json& j : metrics) {
      FamilySamples f;
      f.name = j.at("name").get<std::string>();
      if (!valid_name(f.name)) return malformed(fmt::format("'{}' is not a metric name", f.name));
      const auto type = j.at("type").get<std::string>();
      if (type == "counter")
        f.type = Type::kCounter;
      else if (type == "gauge")
        f.type = Type::kGauge;
      else if (type == "histogram")
        f.type = Type::kHistogram;
      else
        return malformed(fmt::format("{}: unknown type '{}'", f.name, type));
      f.help = j.at("help").get<std::string>();
      f.labels = j.at("labels").get<std::vector<std::string>>();
      for (const std::string& l : f.labels)
        if (!valid_name(l)) return malformed(fmt::format("{}: bad label name '{}'", f.name, l));
      for (const nlohmann::json& js : j.at("samples")) {
        Sample s;
        s.labels = js.at("labels").get<std::vector<std::string>>();
        if (s.labels.size() != f.labels.size())
          return malformed(fmt::format("{}: a sample with {} labels of {}", f.name, s.labels.size(),
                                       f.labels.size()));
        if (f.type == Type::kHistogram) {
          s.bounds = js.at("bounds").get<std::vector<double>>();
          s.buckets = js.at("buckets").get<std::vector<uint64_t>>();
          if (s.buckets.size() != s.bounds.size() + 1)
            return malformed(fmt::format("{}: {} buckets for {} bounds", f.name, s.buckets.size(),
                                         s.bounds.size()));
          if (!read_number(js.at("sum"), s.sum))
            return malformed(fmt::format("{}: a sum that is not a number", f.name));
        } else if (!read_number(js.at("value"), s.value)) {
          return malformed(fmt::format("{}: a value that is not a number", f.name));
        }
        f.samples.push_back(std::move(s));
      }
      snapshot.families_.push_back(std::move(f));
    }
  } catch (const nlohmann::json::exception& e) {
    return malformed(e.what());
  }
  return snapshot;
}

std::string prometheus_text(const Snapshot& snapshot) {
  PrometheusText p;
  for (const FamilySamples& f : snapshot.families()) {
    p.family(f.name, type_name(f.type), f.help);
    for (const Sample& s : f.samples) {
      Labels labels;
      for (size_t i = 0; i < f.labels.size() && i < s.labels.size(); ++i)
        labels.emplace_back(f.labels[i], s.labels[i]);
      if (f.type == Type::kHistogram)
        p.histogram(f.name, labels, s.bounds, s.buckets, s.sum);
      else
        p.sample(f.name, labels, s.value);
    }
  }
  return p.text();
}

Result<std::string> prometheus_text(const nlohmann::json& metrics) {
  if (metrics.is_null())
    return malformed("the stats carry none (a daemon older than this rdma-qos?)");
  auto snapshot = Snapshot::from_json(metrics);
  if (!snapshot) return snapshot.error();
  return prometheus_text(*snapshot);
}

}  // namespace rdmaqos::common::metrics
