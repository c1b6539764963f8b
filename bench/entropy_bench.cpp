// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Entropy benchmark: how well each flow-label mode spreads RoCE v2 connections between two
// hosts over ECMP next hops. Prints one markdown table per scenario (distinct UDP source ports,
// max/mean next-hop load for 8 and 64 next hops under a CRC32 and a modulo switch hash), each
// mode side by side with an ideal random hash, all measured in this one run.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "rdma-qos/providers/entropy.h"

namespace {

constexpr uint16_t kServerPorts[] = {3260, 4420, 7471, 18515};
constexpr int kNextHops[] = {8, 64};
constexpr int kTrials = 20;  // random client ports / ideal hash: averaged over seeds

struct Stats {
  double distinct_pct = 0;
  double crc_max_mean[2] = {0, 0};
  double mod_max_mean[2] = {0, 0};
};

// A switch's CRC hash over the 5-tuple; only the source port varies between two hosts.
uint32_t crc_hash(uint16_t sport) {
  std::array<uint8_t, 13> tuple = {10, 0, 0, 1, 10, 0, 0, 2, 0, 0, 0x12, 0xB7, 17};
  tuple[8] = static_cast<uint8_t>(sport >> 8);
  tuple[9] = static_cast<uint8_t>(sport);
  return static_cast<uint32_t>(crc32(0, tuple.data(), static_cast<uInt>(tuple.size())));
}

double max_over_mean(const std::vector<uint16_t>& sports, int hops,
                     const std::function<uint32_t(uint16_t)>& hash) {
  std::vector<int> load(static_cast<size_t>(hops), 0);
  for (uint16_t s : sports) ++load[hash(s) % static_cast<uint32_t>(hops)];
  int max = 0;
  for (int l : load) max = std::max(max, l);
  return max / (static_cast<double>(sports.size()) / hops);
}

Stats measure(const std::vector<uint16_t>& sports) {
  Stats st;
  st.distinct_pct = 100.0 *
                    static_cast<double>(std::set<uint16_t>(sports.begin(), sports.end()).size()) /
                    static_cast<double>(sports.size());
  for (int i = 0; i < 2; ++i) {
    st.crc_max_mean[i] = max_over_mean(sports, kNextHops[i], crc_hash);
    st.mod_max_mean[i] = max_over_mean(sports, kNextHops[i], [](uint16_t s) { return s; });
  }
  return st;
}

void add(Stats& sum, const Stats& s, double weight) {
  sum.distinct_pct += s.distinct_pct * weight;
  for (int i = 0; i < 2; ++i) {
    sum.crc_max_mean[i] += s.crc_max_mean[i] * weight;
    sum.mod_max_mean[i] += s.mod_max_mean[i] * weight;
  }
}

// Client ports of simultaneous connections to one server port are distinct: a random draw
// from Linux's default ephemeral range 32768-60999 without replacement. (Drawing with
// replacement would count the ~1.8% of repeated client ports at 1,024 connections as flow
// collisions the hash cannot avoid, which no real host produces.)
std::vector<uint16_t> random_client_ports(int conns, std::mt19937& rng) {
  std::vector<uint16_t> range;
  for (uint32_t p = 32768; p <= 60999; ++p) range.push_back(static_cast<uint16_t>(p));
  std::shuffle(range.begin(), range.end(), rng);
  range.resize(static_cast<size_t>(conns));
  return range;
}

std::vector<uint16_t> consecutive_client_ports(int conns) {
  std::vector<uint16_t> ports;
  for (int i = 0; i < conns; ++i) ports.push_back(static_cast<uint16_t>(40000 + i));
  return ports;
}

using LabelFn = std::function<uint32_t(uint16_t server, uint16_t client)>;

void print_header() {
  fmt::print(
      "| mode | distinct UDP sports | CRC max/mean, 8 hops | CRC, 64 hops | modulo, 8 hops | "
      "modulo, 64 hops |\n");
  fmt::print("|---|---|---|---|---|---|\n");
}

void print_row(const char* name, const Stats& s) {
  fmt::print("| {} | {:.1f}% | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", name, s.distinct_pct,
             s.crc_max_mean[0], s.crc_max_mean[1], s.mod_max_mean[0], s.mod_max_mean[1]);
}

// The reference: every connection's 14 port bits drawn uniformly at random, over kTrials seeds.
Stats ideal_random_hash(int conns) {
  Stats ideal;
  for (int t = 0; t < kTrials; ++t) {
    std::mt19937 rng(5000 + static_cast<unsigned>(t));
    std::vector<uint16_t> sports;
    for (int i = 0; i < conns; ++i)
      sports.push_back(static_cast<uint16_t>(0xC000 | (rng() & 0x3FFF)));
    add(ideal, measure(sports), 1.0 / kTrials);
  }
  return ideal;
}

void cm_table(int conns, bool random_clients) {
  struct Mode {
    const char* name;
    LabelFn label;
  };
  const std::vector<Mode> modes = {
      {"rfc (RFC CM ports)",
       [](uint16_t d, uint16_t s) { return rdma_qos_flow_label_from_cm_ports(d, s); }},
      {"spread (rdma-qos)",
       [](uint16_t d, uint16_t s) { return rdma_qos_flow_label_spread(d, s); }},
      {"linux (sport*31+dport)",
       [](uint16_t d, uint16_t s) { return rdma_qos_flow_label_linux_cm(s, d); }},
  };
  fmt::print(
      "\n### {} connections, {} client ports (mean over server ports 3260, 4420, 7471, 18515)\n\n",
      conns, random_clients ? "random" : "consecutive");
  print_header();
  const int trials = random_clients ? kTrials : 1;
  const double weight = 1.0 / (trials * std::size(kServerPorts));
  for (const auto& m : modes) {
    Stats sum;
    for (int t = 0; t < trials; ++t) {
      std::mt19937 rng(1000 + static_cast<unsigned>(t));
      const std::vector<uint16_t> clients =
          random_clients ? random_client_ports(conns, rng) : consecutive_client_ports(conns);
      for (uint16_t server : kServerPorts) {
        std::vector<uint16_t> sports;
        for (uint16_t c : clients)
          sports.push_back(rdma_qos_udp_sport_from_flow_label(m.label(server, c)));
        add(sum, measure(sports), weight);
      }
    }
    print_row(m.name, sum);
  }
  print_row("ideal random hash", ideal_random_hash(conns));
}

// QP pairs not set up by rdma_cm: the QPN hash, the same in every mode. QPNs are 24 bits; a
// device hands them out consecutively (rxe) or scattered (many HCAs), so both are measured.
void qpn_table(int conns, bool random_qpns) {
  fmt::print(
      "\n### {} QP pairs (QPNs {})\n\n", conns,
      random_qpns ? "drawn at random on both hosts" : "allocated consecutively on both hosts");
  print_header();
  const int trials = random_qpns ? kTrials : 1;
  Stats sum;
  for (int t = 0; t < trials; ++t) {
    std::mt19937 rng(9000 + static_cast<unsigned>(t));
    std::uniform_int_distribution<uint32_t> qpn(2, 0xFFFFFF);  // 0 and 1 are special QPs
    std::vector<uint16_t> sports;
    for (int i = 0; i < conns; ++i) {
      uint32_t l = random_qpns ? qpn(rng) : 0x100 + static_cast<uint32_t>(i);
      uint32_t r = random_qpns ? qpn(rng) : 0x2a0 + static_cast<uint32_t>(i);
      sports.push_back(rdma_qos_udp_sport_from_flow_label(rdma_qos_flow_label_from_qpns(l, r)));
    }
    add(sum, measure(sports), 1.0 / trials);
  }
  print_row("rfc / linux / spread (QPN hash)", sum);
  print_row("ideal random hash", ideal_random_hash(conns));
}

}  // namespace

int main() {
  fmt::print("# RoCE v2 entropy by flow-label mode\n");
  for (int conns : {64, 1024}) {
    cm_table(conns, true);
    cm_table(conns, false);
    qpn_table(conns, true);
    qpn_table(conns, false);
  }
  return 0;
}
