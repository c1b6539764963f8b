// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA answer engine in-process, without transport: PathRecord answers per second per core on
// a 1,000-CA two-level fat tree (32 CAs per leaf, 4 spines, min-hop LFTs, SL2VL tables on every
// port pair), with and without a policy, and a GetTable that expands to every destination, with
// LMC 0 and 2 (each CA port 4 LIDs, its LIDs spread over the spines), the policy matched once per
// port pair and direction against once per LID combination (the engine's former way) side by
// side. Target: at least 1 M PathRecord answers/s per core.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <random>

#include "rdma-qos/sa-responder/answer.h"

namespace sad = rdmaqos::sad;
namespace sa = rdmaqos::sa;
namespace pol = rdmaqos::policy;

namespace {

constexpr int kCas = 1000;
constexpr int kPerLeaf = 32;
constexpr int kSpines = 4;
constexpr sad::Sl2Vl kIdentity = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14};

// LIDs: CA c = (1 + c) << lmc (2^lmc of them), then leaves, then spines, one each. Nodes in the
// same order.
sad::FabricModel fat_tree(int lmc) {
  const int leaves = (kCas + kPerLeaf - 1) / kPerLeaf;
  const int leaf0 = kCas, spine0 = kCas + leaves;
  const int per_ca = 1 << lmc;
  auto lid_of = [&](int node) {
    return static_cast<uint16_t>(node < kCas ? (node + 1) * per_ca
                                             : (kCas + 1) * per_ca + (node - kCas));
  };
  const uint16_t top = lid_of(kCas + leaves + kSpines - 1);
  sad::FabricModel f;
  f.nodes.resize(static_cast<size_t>(kCas + leaves + kSpines));
  const uint8_t rates[] = {16, 12, 7, 17};  // EDR, FDR, QDR, HDR at 4x
  for (int c = 0; c < kCas; ++c) {
    sad::NodeModel& n = f.nodes[static_cast<size_t>(c)];
    n.guid = 0x0002c90300a00000ULL + 0x10ULL * static_cast<uint64_t>(c);
    n.description = fmt::format("node{:04d} HCA-1", c + 1);
    n.ports.resize(2);
    sad::PortModel& p = n.ports[1];
    p.present = true;
    p.guid = n.guid + 1;
    p.lid = lid_of(c);
    p.lmc = static_cast<uint8_t>(lmc);
    p.rate = rates[c % 4];
    p.pkeys = {0xFFFF};
    p.sl2vl = {kIdentity};
    p.peer_node = leaf0 + c / kPerLeaf;
    p.peer_port = static_cast<uint8_t>(1 + c % kPerLeaf);
  }
  auto make_switch = [&](int node, int ports, std::string name) {
    sad::NodeModel& n = f.nodes[static_cast<size_t>(node)];
    n.guid = 0x0002c90300f00000ULL + static_cast<uint64_t>(node);
    n.type = pol::NodeType::kSwitch;
    n.description = std::move(name);
    n.ports.resize(static_cast<size_t>(ports) + 1);
    for (int p = 0; p <= ports; ++p) {
      sad::PortModel& pm = n.ports[static_cast<size_t>(p)];
      pm.present = true;
      pm.guid = n.guid;
      pm.rate = 22;
      pm.pkeys = {0xFFFF};
      if (p > 0) pm.sl2vl.assign(static_cast<size_t>(ports) + 1, kIdentity);
    }
    n.ports[0].lid = lid_of(node);
    n.lft.assign(static_cast<size_t>(top) + 1, 0xFF);
    return &n;
  };
  for (int l = 0; l < leaves; ++l) {
    sad::NodeModel* n = make_switch(leaf0 + l, kPerLeaf + kSpines, fmt::format("leaf{:02d}", l));
    for (int s = 0; s < kSpines; ++s) {
      sad::PortModel& up = n->ports[static_cast<size_t>(kPerLeaf + 1 + s)];
      up.peer_node = spine0 + s;
      up.peer_port = static_cast<uint8_t>(1 + l);
    }
    for (int c = l * kPerLeaf; c < std::min(kCas, (l + 1) * kPerLeaf); ++c) {
      n->ports[static_cast<size_t>(1 + c % kPerLeaf)].peer_node = c;
      n->ports[static_cast<size_t>(1 + c % kPerLeaf)].peer_port = 1;
    }
    for (int d = 0; d < kCas + leaves + kSpines; ++d) {
      for (int o = 0; o < (d < kCas ? per_ca : 1); ++o) {
        const auto dlid = static_cast<uint16_t>(lid_of(d) + o);
        if (d == leaf0 + l) {
          n->lft[dlid] = 0;
        } else if (d < kCas && d / kPerLeaf == l) {
          n->lft[dlid] = static_cast<uint8_t>(1 + d % kPerLeaf);
        } else {
          n->lft[dlid] = static_cast<uint8_t>(kPerLeaf + 1 + (d + o) % kSpines);
        }
      }
    }
  }
  for (int s = 0; s < kSpines; ++s) {
    sad::NodeModel* n = make_switch(spine0 + s, leaves, fmt::format("spine{:02d}", s));
    for (int l = 0; l < leaves; ++l) {
      n->ports[static_cast<size_t>(1 + l)].peer_node = leaf0 + l;
      n->ports[static_cast<size_t>(1 + l)].peer_port = static_cast<uint8_t>(kPerLeaf + 1 + s);
    }
    for (int d = 0; d < kCas + leaves + kSpines; ++d) {
      for (int o = 0; o < (d < kCas ? per_ca : 1); ++o) {
        const auto dlid = static_cast<uint16_t>(lid_of(d) + o);
        if (d == spine0 + s) {
          n->lft[dlid] = 0;
        } else if (d < kCas) {
          n->lft[dlid] = static_cast<uint8_t>(1 + d / kPerLeaf);
        } else if (d < spine0) {
          n->lft[dlid] = static_cast<uint8_t>(1 + d - leaf0);
        } else {
          n->lft[dlid] = 1;  // another spine: through leaf 1
        }
      }
    }
  }
  f.index();
  return f;
}

const std::string kPolicy = R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: STORAGE
    sl: 3
    rate-limit: 12
    packet-life: 16
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    service-id: 0x1060CBC
    qos-level-name: STORAGE
  end-qos-match-rule
end-qos-match-rules
)";

struct Setup {
  explicit Setup(int lmc) : fabric(fat_tree(lmc)) {}
  sad::FabricModel fabric;
  pol::Fabric policy_fabric = fabric.policy_fabric();
  std::shared_ptr<const pol::CompiledPolicy> policy =
      pol::load_policy(kPolicy, &policy_fabric).policy;
  std::vector<pol::Partition> partitions;

  sad::AnswerContext context(bool with_policy) const {
    sad::AnswerContext c;
    c.fabric = &fabric;
    c.policy = with_policy ? policy.get() : nullptr;
    c.partitions = &partitions;
    return c;
  }
};

const Setup& setup(int lmc = 0) {
  static const Setup lmc0(0), lmc2(2);
  return lmc == 0 ? lmc0 : lmc2;
}

sa::SaMad path_request(uint8_t method, uint16_t slid, uint16_t dlid, uint64_t sid) {
  namespace pr = sa::pr_mask;
  sa::PathRecord q;
  q.slid = slid;
  q.dlid = dlid;
  uint64_t mask = (slid != 0 ? pr::kSlid : 0) | (dlid != 0 ? pr::kDlid : 0);
  if (sid != 0) {
    q.service_id = sid;
    mask |= pr::kServiceIdMsb | pr::kServiceIdLsb;
  }
  auto bytes = sa::encode_path_record(q);
  sa::SaMad m;
  m.mad.method = method;
  m.mad.attr_id = sa::attr::kPathRecord;
  m.sa.comp_mask = mask;
  m.data.assign(bytes->begin(), bytes->end());
  return m;
}

// Get between random CA pairs (half of them cross-leaf through a spine).
void BM_PathRecordGet(benchmark::State& state) {
  const bool with_policy = state.range(0) != 0;
  const Setup& s = setup();
  sad::AnswerContext ctx = s.context(with_policy);
  std::mt19937 rng(1);
  std::vector<sa::SaMad> requests;
  for (int i = 0; i < 4096; ++i) {
    auto a = static_cast<uint16_t>(1 + rng() % kCas);
    auto b = static_cast<uint16_t>(1 + rng() % kCas);
    requests.push_back(path_request(sa::method::kGet, a, b, with_policy && i % 2 ? 0x1060CBC : 0));
  }
  size_t i = 0, answered = 0;
  for (auto _ : state) {
    auto resp = sad::answer(ctx, requests[i++ & 4095]);
    answered += resp && resp->mad.status == 0;
    benchmark::DoNotOptimize(resp);
  }
  if (answered == 0) state.SkipWithError("no request was answered");
  state.counters["answered"] =
      static_cast<double>(answered) / static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
  state.counters["answers_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// A GetTable from one CA to every port: 1,000+ records in one answer with LMC 0, 16,000+ with
// LMC 2 (what a table query costs the thread that answers it). Arguments: the LMC, and 1 to
// match the policy per LID combination (the engine's former way) instead of once per pair.
void BM_PathRecordGetTableAllDestinations(benchmark::State& state) {
  const int lmc = static_cast<int>(state.range(0));
  const Setup& s = setup(lmc);
  sad::AnswerContext ctx = s.context(true);
  ctx.match_per_lid_combination = state.range(1) != 0;
  sa::SaMad req = path_request(sa::method::kGetTable, static_cast<uint16_t>(2 << lmc), 0, 0);
  size_t records = 0;
  for (auto _ : state) {
    auto resp = sad::answer(ctx, req);
    records = resp ? resp->data.size() / sa::kPathRecordSize : 0;
    benchmark::DoNotOptimize(resp);
  }
  state.counters["records"] = static_cast<double>(records);
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * records), benchmark::Counter::kIsRate);
}

// The same Gets with the bounds rdma-qos-sad sets by default (a record bound, a deadline: one
// clock read per answer).
void BM_PathRecordGetBounded(benchmark::State& state) {
  const Setup& s = setup();
  sad::AnswerContext ctx = s.context(true);
  ctx.limits.max_records = 262144;
  ctx.limits.deadline = std::chrono::steady_clock::now() + std::chrono::hours(24);
  std::mt19937 rng(1);
  std::vector<sa::SaMad> requests;
  for (int i = 0; i < 4096; ++i) {
    auto a = static_cast<uint16_t>(1 + rng() % kCas);
    auto b = static_cast<uint16_t>(1 + rng() % kCas);
    requests.push_back(path_request(sa::method::kGet, a, b, i % 2 ? 0x1060CBC : 0));
  }
  size_t i = 0, answered = 0;
  for (auto _ : state) {
    auto resp = sad::answer(ctx, requests[i++ & 4095]);
    answered += resp && resp->mad.status == 0;
    benchmark::DoNotOptimize(resp);
  }
  if (answered == 0) state.SkipWithError("no request was answered");
  state.SetItemsProcessed(state.iterations());
  state.counters["answers_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// estimate_work of a Get naming both ends (rdma-qos-sad does not ask it for such a request when
// the subnet's LMC keeps it small: it answers it inline at once).
void BM_EstimateGet(benchmark::State& state) {
  const Setup& s = setup();
  sad::AnswerContext ctx = s.context(true);
  sa::SaMad req = path_request(sa::method::kGet, 2, 3, 0x1060CBC);
  size_t work = 0;
  for (auto _ : state) {
    work = sad::estimate_work(ctx, req);
    benchmark::DoNotOptimize(work);
  }
  state.counters["combinations"] = static_cast<double>(work);
}

// The estimate of an open-ended GetTable: the sum of every endpoint's LID range (what the
// receiving thread spends on a request before handing it to a worker).
void BM_EstimateOpenGetTable(benchmark::State& state) {
  const Setup& s = setup();
  sad::AnswerContext ctx = s.context(true);
  sa::SaMad req = path_request(sa::method::kGetTable, 0, 0, 0);
  size_t work = 0;
  for (auto _ : state) {
    work = sad::estimate_work(ctx, req);
    benchmark::DoNotOptimize(work);
  }
  state.counters["combinations"] = static_cast<double>(work);
}

}  // namespace

BENCHMARK(BM_PathRecordGet)->Arg(0)->Arg(1)->ArgName("policy");
BENCHMARK(BM_PathRecordGetBounded);
BENCHMARK(BM_EstimateGet);
BENCHMARK(BM_EstimateOpenGetTable);
BENCHMARK(BM_PathRecordGetTableAllDestinations)
    ->ArgNames({"lmc", "per_combination"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({2, 0})
    ->Args({2, 1})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
