// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The preload module's own work per RoCE connection (both sides, no device, no kernel), as
// rdmacm-qos.bench.setup_time's connections make it do: route resolution's decision, the active
// side's QP registration and connection tag, the passive side's tag taken out, its decision from
// the tag and its QP registration, both ids and QPs forgotten. Each step is the library call
// the module makes, in the module's order, with the VM bench's host policy. Two ways side by
// side: as before this bench (every connection matches the policy; separate registry steps to
// read an id's state and to store its decision) and as now (matches cached per Service-ID,
// class, P_Key and traffic class; one locked registry step each), with warm caches and with the
// data caches emptied before every connection (what an emulated guest, where a connection's
// code and data are cold every time, comes closer to). Prints Google Benchmark's table, then
// each pair's CPU time and ratio.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/rdmacm-qos/cm_qos.h"
#include "rdma-qos/rdmacm-qos/cm_tag.h"

namespace {

namespace rdmacm = rdmaqos::rdmacm;
namespace providers = rdmaqos::providers;

// The bench group's ports: the client connects from 40000 to the server's 7512 (level BENCH).
constexpr uint16_t kServicePort = 7512;
constexpr uint16_t kClientPort = 40000;
constexpr uint16_t kPkey = 0xFFFF;

rdmacm::CmSettings settings(bool cached) {
  std::ifstream in(RDMA_QOS_CM_POLICY);
  std::stringstream text;
  text << in.rdbuf();
  rdmacm::CmSettings s;
  s.sl2tclass = *rdmacm::parse_sl2tclass("0,32,136,104,0,72,184");
  s.policy = rdmacm::load_host_policy(text.str(), RDMA_QOS_CM_POLICY).policy;
  if (!s.policy) throw std::runtime_error("the VM bench's policy does not load");
  rdmacm::index_passive_classes(s);
  if (cached) rdmacm::cache_matches(s);
  return s;
}

// Stand-ins for the two ids and QPs of one connection (the registries key them by address).
struct Connection {
  int active_id = 0, passive_id = 0;
  ibv_qp active_qp{}, passive_qp{};
};

// Route resolution on the active side: read the id's inputs, decide, store the decision.
std::optional<rdmacm::CmDecision> resolve_route(const void* id, const rdmacm::CmSettings& s,
                                                bool one_step) {
  auto& ids = rdmacm::IdRegistry::instance();
  const uint64_t sid = rdmacm::service_id(rdmacm::kPsTcp, kServicePort);
  if (one_step) {
    auto st = ids.lock(id);
    auto d = rdmacm::decide_roce(sid, rdmacm::effective_qos_class(st->inputs, s), kPkey, s,
                                 st->inputs.program_tos);
    if (d) st->decision = *d;
    return d;
  }
  rdmacm::IdState st = ids.get(id);
  auto d = rdmacm::decide_roce(sid, rdmacm::effective_qos_class(st.inputs, s), kPkey, s,
                               st.inputs.program_tos);
  if (d) ids.set_decision(id, *d);
  return d;
}

// One whole connection's module work, both sides.
void connect(Connection& c, const rdmacm::CmSettings& s, bool one_step) {
  auto& ids = rdmacm::IdRegistry::instance();
  auto& qps = providers::QpRegistry::instance();
  const providers::CmConnection cm{kServicePort, kClientPort, false};
  benchmark::DoNotOptimize(resolve_route(&c.active_id, s, one_step));
  // rdma_connect: the active QP registered with its decision, the tag added.
  rdmacm::IdState active = ids.get(&c.active_id);
  qps.register_rdma_cm(&c.active_qp, cm, rdmacm::to_qos_decision(active.decision));
  std::array<uint8_t, rdmacm::kCmReqPrivateDataSize> request{};
  rdmacm::add_cm_tag(nullptr, 0, rdmacm::tag_of(active.decision, active.inputs, s), cm.dport,
                     cm.sport, request);
  // The CONNECT_REQUEST event: the tag taken out of the private data.
  if (auto tag = rdmacm::take_cm_tag(request.data(), request.size(), cm.dport, cm.sport))
    ids.set_peer_tag(&c.passive_id, *tag);
  // rdma_accept: the passive side's decision from the tag, stored, the QP registered.
  const uint64_t sid = rdmacm::service_id(rdmacm::kPsTcp, kServicePort);
  std::optional<rdmacm::CmDecision> d;
  if (one_step) {
    auto st = ids.lock(&c.passive_id);
    d = rdmacm::decide_roce_tagged(sid, *st->peer_tag, 104, kPkey, s).decision;
    if (d) st->decision = *d;
  } else {
    rdmacm::IdState st = ids.get(&c.passive_id);
    d = rdmacm::decide_roce_tagged(sid, *st.peer_tag, 104, kPkey, s).decision;
    if (d) ids.set_decision(&c.passive_id, *d);
  }
  qps.register_rdma_cm(&c.passive_qp, cm, rdmacm::to_qos_decision(d));
  // rdma_destroy_id and ibv_destroy_qp on both sides.
  ids.erase(&c.active_id);
  ids.erase(&c.passive_id);
  qps.erase(&c.active_qp);
  qps.erase(&c.passive_qp);
}

// Larger than the last-level cache of the machines this runs on (32 MiB on the build machine):
// walking it evicts the connection's data.
void evict_data_caches() {
  static std::vector<uint8_t> junk(48 << 20);
  for (size_t i = 0; i < junk.size(); i += 64) junk[i] = static_cast<uint8_t>(junk[i] + 1);
  benchmark::ClobberMemory();
}

void BM_Match(benchmark::State& state, bool cached) {
  const rdmacm::CmSettings s = settings(cached);
  const uint64_t sid = rdmacm::service_id(rdmacm::kPsTcp, kServicePort);
  for (auto _ : state) benchmark::DoNotOptimize(rdmacm::decide_roce(sid, std::nullopt, kPkey, s));
}

void BM_Connection(benchmark::State& state, bool now, bool cold) {
  const rdmacm::CmSettings s = settings(now);
  Connection c;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      evict_data_caches();
      state.ResumeTiming();
    }
    connect(c, s, now);
  }
}

BENCHMARK_CAPTURE(BM_Match, before, false);
BENCHMARK_CAPTURE(BM_Match, now, true);
BENCHMARK_CAPTURE(BM_Connection, before, false, false);
BENCHMARK_CAPTURE(BM_Connection, now, true, false);
// Every connection costs an eviction too (untimed, but the run waits for it): a fixed count.
constexpr int kColdConnections = 1000;
BENCHMARK_CAPTURE(BM_Connection, before_cold, false, true)->Iterations(kColdConnections);
BENCHMARK_CAPTURE(BM_Connection, now_cold, true, true)->Iterations(kColdConnections);

// Keeps each case's CPU and wall time per iteration for the ratio table. On a shared machine the
// wall clock also counts the time other processes held the core; the CPU time of the cold cases
// also counts some of the eviction's pausing, so both are printed.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.run_type != Run::RT_Iteration) continue;
      // Without the "/iterations:N" a fixed count appends.
      const std::string name = r.benchmark_name().substr(0, r.benchmark_name().find("/iter"));
      times_[name] = {r.GetAdjustedCPUTime(), r.GetAdjustedRealTime()};
    }
  }
  void print_ratios() const {
    fmt::print(
        "\n| case | CPU ns before / now | ratio | wall ns before / now | ratio |\n"
        "| --- | --- | --- | --- | --- |\n");
    for (auto [label, before, now] :
         {std::tuple{"policy match", "BM_Match/before", "BM_Match/now"},
          {"connection, both sides", "BM_Connection/before", "BM_Connection/now"},
          {"connection, cold data", "BM_Connection/before_cold", "BM_Connection/now_cold"}}) {
      auto b = times_.find(before), n = times_.find(now);
      if (b == times_.end() || n == times_.end() || b->second.cpu <= 0 || b->second.wall <= 0)
        continue;
      fmt::print("| {} | {:.0f} / {:.0f} | {:.2f} | {:.0f} / {:.0f} | {:.2f} |\n", label,
                 b->second.cpu, n->second.cpu, n->second.cpu / b->second.cpu, b->second.wall,
                 n->second.wall, n->second.wall / b->second.wall);
    }
  }

 private:
  struct Times {
    double cpu = 0, wall = 0;
  };
  std::map<std::string, Times> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.print_ratios();
  benchmark::Shutdown();
  return 0;
}
