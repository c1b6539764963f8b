// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Match cost of the compiled policy at 10 / 1k / 10k / 100k rules, compile time and index
// memory. Rules combine Service-ID ranges, QoS-class ranges and source/destination port groups
// (GUID ranges, up to 1M GUIDs per group); the queries match the last rule or none.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <malloc.h>

#include "rdma-qos/policy/compiled_policy.h"

namespace pol = rdmaqos::policy;

namespace {

constexpr uint64_t kGuidBase = 0x0002c90300000000;
constexpr uint64_t kGroupGuids = 1 << 20;  // 1M GUIDs per group
constexpr int kGroups = 8;
constexpr uint64_t kSidBase = 0x100000;

uint64_t group_guid(int g) {
  return kGuidBase + static_cast<uint64_t>(g) * kGroupGuids;
}

pol::Policy make_policy(int rules) {
  pol::Policy p;
  for (int g = 0; g < kGroups; ++g) {
    pol::PortGroup grp;
    grp.name = fmt::format("G{}", g);
    grp.port_guids = {{group_guid(g), group_guid(g) + kGroupGuids - 1}};
    p.port_groups.push_back(grp);
  }
  for (int l = 0; l < 16; ++l) {
    pol::QosLevel lvl;
    lvl.name = l == 0 ? "DEFAULT" : fmt::format("L{}", l);
    lvl.sl = static_cast<uint8_t>(l);
    p.levels.push_back(lvl);
  }
  for (int i = 0; i < rules; ++i) {
    pol::MatchRule r;
    uint64_t sid = kSidBase + static_cast<uint64_t>(i) * 16;
    r.service_ids = {{sid, sid + 7}};
    uint64_t c = static_cast<uint64_t>(i * 3 % 4000);
    r.qos_classes = {{c, c + 2}};
    r.sources = {fmt::format("G{}", i % kGroups)};
    r.destinations = {fmt::format("G{}", (i + 3) % kGroups)};
    r.level_name = fmt::format("L{}", 1 + i % 15);
    p.rules.push_back(r);
  }
  return p;
}

pol::PathQuery last_rule_query(int rules) {
  int i = rules - 1;
  pol::PathQuery q;
  q.component_mask = pol::kCompServiceIdMsb | pol::kCompServiceIdLsb | pol::kCompQosClass;
  q.service_id = kSidBase + static_cast<uint64_t>(i) * 16 + 3;
  q.qos_class = static_cast<uint16_t>(i * 3 % 4000 + 1);
  q.source_guid = group_guid(i % kGroups) + 12345;
  q.destination_guid = group_guid((i + 3) % kGroups) + 777;
  return q;
}

std::shared_ptr<const pol::CompiledPolicy> compiled(int rules) {
  pol::CompileResult r = pol::CompiledPolicy::compile(make_policy(rules), nullptr);
  if (!r.policy) std::abort();
  return r.policy;
}

void BM_MatchLastRule(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto p = compiled(n);
  pol::PathQuery q = last_rule_query(n);
  if (p->match(q).rule != static_cast<size_t>(n - 1)) state.SkipWithError("wrong rule");
  for (auto _ : state) benchmark::DoNotOptimize(p->match(q));
  state.counters["rules"] = n;
}

void BM_MatchNoRule(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto p = compiled(n);
  pol::PathQuery q = last_rule_query(n);
  q.service_id = kSidBase + static_cast<uint64_t>(n) * 16 + 100;  // beyond every rule
  if (p->match(q).rule) state.SkipWithError("unexpected match");
  for (auto _ : state) benchmark::DoNotOptimize(p->match(q));
  state.counters["rules"] = n;
}

// OpenSM's algorithm for comparison: the linear scan (explain() without its bookkeeping cost
// would be faster still, but it is the same order).
void BM_LinearScanLastRule(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto p = compiled(n);
  pol::PathQuery q = last_rule_query(n);
  for (auto _ : state) benchmark::DoNotOptimize(p->explain(q).result.rule);
  state.counters["rules"] = n;
}

void BM_Compile(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  pol::Policy base = make_policy(n);
  size_t bytes = 0;
  for (auto _ : state) {
    pol::Policy copy = base;
    size_t before = mallinfo2().uordblks;
    pol::CompileResult r = pol::CompiledPolicy::compile(std::move(copy), nullptr);
    bytes = mallinfo2().uordblks - before;
    benchmark::DoNotOptimize(r.policy);
  }
  state.counters["rules"] = n;
  state.counters["bytes"] = static_cast<double>(bytes);
  // Target: at most 200 bytes per rule at 100k rules.
  state.counters["bytes_per_rule"] = static_cast<double>(bytes) / n;
}

}  // namespace

BENCHMARK(BM_MatchLastRule)->Arg(10)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(BM_MatchNoRule)->Arg(10)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(BM_LinearScanLastRule)->Arg(10)->Arg(1000)->Arg(10000);
BENCHMARK(BM_Compile)->Arg(10)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
