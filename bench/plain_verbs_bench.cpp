// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a plain-verbs QP connection (ibv_modify_qp to RTR, then ibv_destroy_qp's registry erase)
// costs with the module's decision in front of the provider, next to the provider alone: on
// InfiniBand with the per-destination cache hit and missed (a stand-in SA that answers at once,
// so the miss figure is the module's own work without the SA's round trip), on RoCE with the
// host policy, and without a class (the module passes the QP through). No device exists here:
// the provider is a stand-in that makes one system call, the least a real RTR transition costs
// (a real one also runs the driver and, on hardware, a firmware command), so the ratios are
// upper bounds of the module's share. Prints Google Benchmark's table, then each case's time,
// what the module adds and its ratio to stock, side by side.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plain_verbs.h"
#include "rdma-qos/providers/qp_registry.h"
#include "rdma-qos/providers/verbs_interposer.h"

namespace {

using rdmaqos::preload::PlainVerbsDecider;
using rdmaqos::preload::PlainVerbsInputs;
using rdmaqos::preload::PlainVerbsOptions;
namespace providers = rdmaqos::providers;
namespace sa = rdmaqos::sa;
namespace rdmacm = rdmaqos::rdmacm;

// A raw system call: glibc's getpid() could be answered without entering the kernel.
int stock_provider(ibv_qp*, ibv_qp_attr* attr, int) {
  benchmark::DoNotOptimize(attr->ah_attr.sl);
  return syscall(SYS_getppid) > 0 ? 0 : EINVAL;
}

constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

ibv_qp_attr rtr_attr() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = 0x200;
  a.ah_attr.dlid = 3;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  return a;
}

const rdmacm::CmSettings& roce_settings() {
  static const rdmacm::CmSettings s = [] {
    rdmacm::CmSettings out;
    out.policy = rdmacm::load_host_policy(
                     "qos-levels\nqos-level\nname: DEFAULT\nsl: 0\nend-qos-level\n"
                     "qos-level\nname: MPI\nsl: 4\nend-qos-level\nend-qos-levels\n"
                     "qos-match-rules\nqos-match-rule\nqos-class: 12\nqos-level-name: MPI\n"
                     "end-qos-match-rule\nend-qos-match-rules\n",
                     "bench.conf")
                     .policy;
    out.sl2tclass[4] = 72;
    return out;
  }();
  return s;
}

// An SA that answers at once: SL 5, MTU 2048.
class InstantSa final : public rdmaqos::preload::PlainVerbsSa {
 public:
  rdmaqos::Result<bool> qos_supported(const PlainVerbsInputs&, sa::Deadline) override {
    return true;
  }
  rdmaqos::Result<std::vector<sa::PathRecord>> path_query(const PlainVerbsInputs&,
                                                          const sa::PathQuery& q,
                                                          sa::Deadline) override {
    sa::PathRecord p;
    p.slid = q.record.slid;
    p.dlid = q.record.dlid;
    p.sl = 5;
    p.mtu = IBV_MTU_2048;
    return std::vector<sa::PathRecord>{p};
  }
  void log_once(const std::string&, const std::string&) override {}
};

// One RTR transition per iteration through the interposer, with the link and decision given.
void run_module(benchmark::State& state, providers::LinkKind link, std::optional<uint16_t> cls,
                std::chrono::milliseconds ttl) {
  PlainVerbsOptions o;
  o.settings = &roce_settings();
  o.ttl = ttl;
  PlainVerbsDecider decider(o, std::make_unique<InstantSa>());
  // The module's host, but for the link and the port's LID and P_Key, which are given.
  class Host final : public providers::VerbsHost {
   public:
    Host(providers::LinkKind link, std::optional<uint16_t> cls, PlainVerbsDecider& decider)
        : link_(link), cls_(cls), decider_(decider) {}
    const providers::VerbsSettings& settings() const override { return settings_; }
    providers::ProgramValues program_values() const override {
      return providers::ProgramValues::kKeep;
    }
    providers::LinkKind link_kind(ibv_context*, uint8_t, uint8_t) override { return link_; }
    uint8_t qp_port(ibv_qp*) override { return 1; }
    uint16_t qp_pkey_index(ibv_qp*) override { return 0; }
    std::optional<providers::QosDecision> plain_verbs(
        const providers::PlainVerbsTarget& t) override {
      PlainVerbsInputs in;
      in.device = "mlx5_0";
      in.port = t.port;
      in.link = t.link;
      in.slid = 1;
      in.dlid = t.ah->dlid;
      in.pkey = 0xFFFF;
      in.qos_class = cls_;
      return decider_.decide(in);
    }
    int rate_limit(ibv_qp*, uint32_t) override { return EOPNOTSUPP; }
    void log_once(const std::string&, const std::string&) override {}
    bool recording() const override { return false; }
    void record(const std::string&) override {}

   private:
    providers::VerbsSettings settings_;
    providers::LinkKind link_;
    std::optional<uint16_t> cls_;
    PlainVerbsDecider& decider_;
  } hooks(link, cls, decider);
  ibv_context ctx{};
  ibv_qp qp{};
  qp.context = &ctx;
  for (auto _ : state) {
    ibv_qp_attr a = rtr_attr();
    benchmark::DoNotOptimize(
        providers::interpose_modify_qp(&qp, &a, kRtrMask, stock_provider, hooks));
    providers::QpRegistry::instance().erase(&qp);  // ibv_destroy_qp's share
  }
}

void BM_Stock(benchmark::State& state) {
  ibv_qp qp{};
  for (auto _ : state) {
    ibv_qp_attr a = rtr_attr();
    benchmark::DoNotOptimize(stock_provider(&qp, &a, kRtrMask));
  }
}
void BM_ModuleNoClass(benchmark::State& state) {
  run_module(state, providers::LinkKind::kInfiniBand, std::nullopt, std::chrono::seconds(10));
}
void BM_ModuleIbCacheHit(benchmark::State& state) {
  run_module(state, providers::LinkKind::kInfiniBand, 7, std::chrono::seconds(10));
}
void BM_ModuleIbCacheMiss(benchmark::State& state) {
  run_module(state, providers::LinkKind::kInfiniBand, 7, std::chrono::milliseconds(0));
}
void BM_ModuleRocePolicy(benchmark::State& state) {
  run_module(state, providers::LinkKind::kRoceV2, 12, std::chrono::seconds(10));
}
BENCHMARK(BM_Stock);
BENCHMARK(BM_ModuleNoClass);
BENCHMARK(BM_ModuleIbCacheHit);
BENCHMARK(BM_ModuleIbCacheMiss);
BENCHMARK(BM_ModuleRocePolicy);

// Keeps each case's CPU time per iteration for the ratio table: on a shared machine the wall
// clock also counts the time other processes held the core, the CPU time only this one's work.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Iteration) ns_[r.benchmark_name()] = r.GetAdjustedCPUTime();
  }
  void print_ratios() const {
    auto stock = ns_.find("BM_Stock");
    if (stock == ns_.end() || stock->second <= 0) return;
    fmt::print(
        "\n| case | CPU ns per RTR | added by the module | ratio to stock |\n"
        "| --- | --- | --- | --- |\n");
    for (const char* name : {"BM_Stock", "BM_ModuleNoClass", "BM_ModuleIbCacheHit",
                             "BM_ModuleIbCacheMiss", "BM_ModuleRocePolicy"}) {
      auto it = ns_.find(name);
      if (it == ns_.end()) continue;
      fmt::print("| {} | {:.0f} | {:.0f} | {:.2f}x |\n", name, it->second,
                 it->second - stock->second, it->second / stock->second);
    }
  }

 private:
  std::map<std::string, double> ns_;
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
