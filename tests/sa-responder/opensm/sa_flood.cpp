// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sa-flood: rdma-qos-sad under a flood of PathRecord queries with malformed MADs mixed in.
// OpenSM configures an ibsim fabric and stops; rdma-qos-sad takes over the SM's port; CLIENTS
// copies of this program (--client mode, at different nodes) each send their share of QUERIES
// PathRecord Gets through libibumad directly (so they can also send what no SA client would
// build), one in a hundred malformed. Passes when rdma-qos-sad is still running, every valid
// query got the right answer, and its resident memory did not grow between the sample after a
// warm-up flood and the one after the flood.
#include <fmt/format.h>
#include <infiniband/umad.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/sample_policy.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr size_t kMad = 256;
constexpr uint8_t kSaClass = 0x03;
constexpr uint16_t kPathRecord = 0x0035;
constexpr uint32_t kSaQkey = 0x80010000;
constexpr uint64_t kServiceId = 0x1060CBC;  // the sample policy's ISER level: SL 3
constexpr uint8_t kIserSl = 3;

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}
void put64(uint8_t* p, uint64_t v) {
  put32(p, static_cast<uint32_t>(v >> 32));
  put32(p + 4, static_cast<uint32_t>(v));
}
uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}

// A PathRecord Get for SLID -> DLID with the ISER Service-ID, as the wire has it.
std::vector<uint8_t> path_get(uint64_t tid, uint16_t slid, uint16_t dlid) {
  std::vector<uint8_t> m(kMad, 0);
  m[0] = 1;  // base version
  m[1] = kSaClass;
  m[2] = 2;     // class version
  m[3] = 0x01;  // Get
  put64(&m[8], tid);
  put16(&m[16], kPathRecord);
  put64(&m[48], 0x3 | 0x10 | 0x20);  // Service-ID (both halves), DLID, SLID
  uint8_t* pr = &m[56];
  put64(pr, kServiceId);
  put16(pr + 40, dlid);
  put16(pr + 42, slid);
  return m;
}

// The malformed MAD number `n` (kinds in turn): what a broken or hostile client sends.
constexpr int kMalformedKinds = 12;
std::vector<uint8_t> malformed(uint64_t tid, uint16_t slid, uint16_t dlid, int kind,
                               std::mt19937_64& rng) {
  std::vector<uint8_t> m = path_get(tid, slid, dlid);
  switch (kind) {
    case 0: m.resize(40); break;                      // shorter than the SA header
    case 1: m.resize(60); break;                      // cut inside the record
    case 2: m[0] = 2; break;                          // base version
    case 3: m[2] = 7; break;                          // class version
    case 4: m[3] = 0x05; break;                       // unknown method
    case 5: put16(&m[16], 0x7777); break;             // unknown attribute
    case 6: put64(&m[48], 0x1 | 0x10 | 0x20); break;  // half a Service-ID (INSUF_COMPS)
    case 7:                                           // rate 0 with a rate selector
      put64(&m[48], 0x3 | 0x10 | 0x20 | (1ULL << 18) | (1ULL << 19));
      m[56 + 55] = 0x80;  // selector exactly, rate 0
      break;
    case 8: m[3] = 0x81; break;  // a response sent to the SA
    case 9:                      // GetTable with a bogus RMPP header
      m[3] = 0x12;
      m[24] = 1;
      m[25] = 1;
      m[26] = 0x07;
      put32(&m[28], 0xFFFFFFFF);
      put32(&m[32], 0xFFFFFFFF);
      break;
    case 10:  // random bytes after a valid-looking common header
      for (size_t i = 24; i < m.size(); ++i) m[i] = static_cast<uint8_t>(rng());
      break;
    default:  // random bytes everywhere but the class (another class goes elsewhere)
      for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(rng());
      m[1] = kSaClass;
      m[3] &= 0x7F;
      put64(&m[8], tid);
      break;
  }
  return m;
}

struct ClientOptions {
  int queries = 1000;
  int malformed_every = 100;  // one in this many MADs is malformed
  int window = 16;
  int timeout_ms = 1000;
  int retries = 3;
  std::vector<uint16_t> dlids;
  std::vector<int> kinds;  // malformed kinds sent in turn; empty: all
  int seed = 1;
};

// --client: the flood from one node; prints one JSON line.
int run_client(const ClientOptions& o) {
  if (umad_init() < 0) {
    std::cerr << "umad_init failed\n";
    return 1;
  }
  umad_port_t port{};
  if (umad_get_port(nullptr, 0, &port) < 0) {
    std::cerr << "umad_get_port failed\n";
    return 1;
  }
  const uint16_t slid = static_cast<uint16_t>(port.base_lid);
  const uint16_t sm_lid = static_cast<uint16_t>(port.sm_lid);
  int portid = umad_open_port(port.ca_name, port.portnum);
  umad_release_port(&port);
  if (portid < 0) {
    std::cerr << "umad_open_port failed\n";
    return 1;
  }
  int agent = umad_register(portid, kSaClass, 2, 0, nullptr);
  if (agent < 0) {
    std::cerr << "umad_register failed\n";
    return 1;
  }
  std::vector<uint8_t> send_buf(umad_size() + kMad);
  std::vector<uint8_t> recv_buf(umad_size() + 4 * kMad);
  auto send = [&](const std::vector<uint8_t>& mad) {
    std::fill(send_buf.begin(), send_buf.end(), 0);
    std::memcpy(umad_get_mad(send_buf.data()), mad.data(), mad.size());
    umad_set_addr(send_buf.data(), sm_lid, 1, 0, static_cast<int>(kSaQkey));
    return umad_send(portid, agent, send_buf.data(), static_cast<int>(mad.size()), 0, 0);
  };

  struct Pending {
    uint16_t dlid = 0;
    int attempts = 0;
    Clock::time_point sent;
  };
  // Valid queries by the low 32 bits of the TID: the umad layer owns the high 32 (the kernel
  // and umad2sim put the agent's number there).
  std::map<uint32_t, Pending> pending;
  std::mt19937_64 rng(static_cast<uint64_t>(o.seed));
  const uint32_t tid_base = static_cast<uint32_t>(o.seed) << 24;
  uint64_t next_tid = 1;
  // lost: every attempt of a query unanswered; abandoned: still pending when the stall guard
  // ended the client (no answer at all for 15 s). Counted apart: the soak run that once "lost
  // 16 of 1M" was counted by the stall guard of the time, which measured 15 s from the client's
  // start instead of from its last answer (Documentation/testing.md, "The flood's lost
  // queries").
  int sent_valid = 0, answered = 0, wrong = 0, lost = 0, abandoned = 0, retried = 0;
  uint64_t sent_malformed = 0, error_answers = 0, stray = 0, send_errors = 0;
  uint64_t mads = 0;
  bool stalled = false;
  std::vector<std::string> lost_examples;
  auto start = Clock::now();
  auto last_answer = start;
  while (sent_valid < o.queries || !pending.empty()) {
    if (Clock::now() - last_answer > std::chrono::seconds(15)) {
      stalled = true;  // the SA stopped answering: report instead of retrying forever
      abandoned = static_cast<int>(pending.size());
      break;
    }
    // Fill the window, a malformed MAD in place of every malformed_every-th one.
    while (sent_valid < o.queries && static_cast<int>(pending.size()) < o.window) {
      uint32_t tid = tid_base | (next_tid++ & 0xFFFFFF);
      uint16_t dlid = o.dlids[static_cast<size_t>(sent_valid) % o.dlids.size()];
      if (o.malformed_every > 0 && ++mads % static_cast<uint64_t>(o.malformed_every) == 0) {
        int kind = o.kinds.empty() ? static_cast<int>(sent_malformed % kMalformedKinds)
                                   : o.kinds[sent_malformed % o.kinds.size()];
        if (send(malformed(tid, slid, dlid, kind, rng)) < 0) ++send_errors;
        ++sent_malformed;
        continue;
      }
      if (send(path_get(tid, slid, dlid)) < 0) ++send_errors;
      pending[tid] = {dlid, 1, Clock::now()};
      ++sent_valid;
    }
    int length = static_cast<int>(recv_buf.size() - umad_size());
    int rc = umad_recv(portid, recv_buf.data(), &length, 50);
    if (rc >= 0 && umad_status(recv_buf.data()) == 0 && length >= 56) {
      const auto* m = static_cast<const uint8_t*>(umad_get_mad(recv_buf.data()));
      auto it = pending.find(static_cast<uint32_t>(get64(m + 8)));
      if (it == pending.end()) {
        // An answer to a malformed MAD (an error status) or to a retried query.
        if (get16(m + 4) != 0)
          ++error_answers;
        else
          ++stray;
      } else {
        const uint8_t* pr = m + 56;
        bool ok = length >= 56 + 64 && m[3] == 0x81 && get16(m + 4) == 0 &&
                  get16(pr + 40) == it->second.dlid && get16(pr + 42) == slid &&
                  (pr[53] & 0x0F) == kIserSl;
        if (ok)
          ++answered;
        else
          ++wrong;
        last_answer = Clock::now();
        pending.erase(it);
      }
    }
    // Re-send what timed out; give up after `retries` attempts.
    auto now = Clock::now();
    for (auto it = pending.begin(); it != pending.end();) {
      if (now - it->second.sent < std::chrono::milliseconds(o.timeout_ms)) {
        ++it;
        continue;
      }
      if (it->second.attempts > o.retries) {
        ++lost;
        if (lost_examples.size() < 8)
          lost_examples.push_back(fmt::format("tid {:#x} dlid {}", it->first, it->second.dlid));
        it = pending.erase(it);
        continue;
      }
      ++retried;
      ++it->second.attempts;
      it->second.sent = now;
      if (send(path_get(it->first, slid, it->second.dlid)) < 0) ++send_errors;
      ++it;
    }
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << json{{"slid", slid},
                    {"valid", sent_valid},
                    {"answered", answered},
                    {"wrong", wrong},
                    {"lost", lost},
                    {"abandoned", abandoned},
                    {"retried", retried},
                    {"malformed", sent_malformed},
                    {"error_answers", error_answers},
                    {"stray", stray},
                    {"send_errors", send_errors},
                    {"stalled", stalled},
                    {"lost_examples", lost_examples},
                    {"seconds", seconds}}
                   .dump()
            << std::endl;
  umad_unregister(portid, agent);
  umad_close_port(portid);
  return 0;
}

long rss_kib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

struct FloodResult {
  long valid = 0, answered = 0, wrong = 0, lost = 0, abandoned = 0, retried = 0, malformed = 0;
  bool stalled = false;
  double seconds = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdma-qos-sad under a flood of PathRecord queries with malformed MADs", "sa-flood"};
  ClientOptions co;
  bool client = false;
  int queries = 20000, clients = 4, warmup = 2000;
  long rss_slack_kib = 1024;
  std::string sad;
  app.add_flag("--client", client, "flood from this node (run under umad2sim)");
  rdmaqos::add_number(app, "--queries", queries, "valid queries in all (split over the clients)")
      ->capture_default_str();
  rdmaqos::add_number(app, "--clients", clients, "client processes, at node001.. (up to 8)")
      ->check(CLI::Range(1, 8));
  rdmaqos::add_number(app, "--warmup", warmup, "valid queries before the first memory sample")
      ->capture_default_str();
  rdmaqos::add_number(app, "--malformed-every", co.malformed_every,
                      "one MAD in N is malformed (0: none)")
      ->capture_default_str();
  rdmaqos::add_number(app, "--window", co.window, "outstanding queries per client")
      ->capture_default_str();
  rdmaqos::add_number(app, "--rss-slack", rss_slack_kib, "allowed RSS growth (KiB)")
      ->capture_default_str();
  rdmaqos::add_number(app, "--dlids", co.dlids, "client mode: destination LIDs")->delimiter(',');
  rdmaqos::add_number(app, "--kinds", co.kinds,
                      "malformed kinds to send (0-11; default: all in turn)")
      ->delimiter(',');
  rdmaqos::add_number(app, "--seed", co.seed, "client mode: TID prefix and random seed");
  app.add_option("--sad", sad, "rdma-qos-sad");
  CLI11_PARSE(app, argc, argv);

  if (client) {
    co.queries = queries;
    return run_client(co);
  }
  if (sad.empty()) {
    std::cerr << "sa-flood: --sad is required\n";
    return 2;
  }
  using namespace rdmaqos::testbed;
  sad = std::filesystem::absolute(sad).string();  // run from the fabric's directory
  try {
    IbFabricOptions fo = fabric_options(make_fat_tree({}));
    fo.policy = sample_policy({});
    IbFabric fabric(fo);
    fabric.stop_sm();
    std::string policy_path = fabric.dir() + "/flood-policy.conf";
    std::ofstream(policy_path) << fo.policy;
    ProcessOptions p;
    p.argv = {sad, "--foreground", "--policy", policy_path};
    p.env = fabric.client_env(fabric.topology().sm_node().id);
    p.cwd = fabric.dir();
    p.output_path = fabric.dir() + "/sad.log";
    auto started = fabric.start_until_answering(p, {"saquery", "-c"});
    Process& sa = *started.daemon;
    auto sad_log = [&] {
      std::ifstream in(p.output_path);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    if (started.probe.exit_code != 0)
      throw std::runtime_error("rdma-qos-sad did not come up:\n" + sad_log());

    auto cas = fabric.topology().cas();
    std::string dlids;
    for (const TopoNode* n : cas) dlids += (dlids.empty() ? "" : ",") + std::to_string(n->lid);
    // One flood of `total` valid queries over the clients, all at once.
    auto flood = [&](int total) {
      std::vector<std::unique_ptr<Process>> procs;
      for (int c = 0; c < clients; ++c) {
        ProcessOptions cp;
        cp.argv = {"/proc/self/exe",
                   "--client",
                   "--queries",
                   std::to_string(total / clients + (c < total % clients ? 1 : 0)),
                   "--malformed-every",
                   std::to_string(co.malformed_every),
                   "--window",
                   std::to_string(co.window),
                   "--dlids",
                   dlids,
                   "--seed",
                   std::to_string(c + 1)};
        for (int k : co.kinds) cp.argv.insert(cp.argv.end(), {"--kinds", std::to_string(k)});
        cp.env = fabric.client_env(cas[static_cast<size_t>(c) % cas.size()]->id);
        cp.cwd = fabric.dir();
        cp.output_path = fabric.dir() + fmt::format("/client{}.log", c);
        std::remove(cp.output_path.c_str());
        procs.push_back(std::make_unique<Process>(Process::spawn(cp)));
      }
      FloodResult sum;
      for (int c = 0; c < clients; ++c) {
        auto rc = procs[static_cast<size_t>(c)]->wait_for(std::chrono::hours(4));
        std::ifstream in(fabric.dir() + fmt::format("/client{}.log", c));
        std::string out(std::istreambuf_iterator<char>(in), {});
        json j;
        std::istringstream lines(out);
        for (std::string line; std::getline(lines, line);)
          if (!line.empty() && line[0] == '{') j = json::parse(line, nullptr, false);
        if (rc.value_or(-1) != 0 || !j.is_object())
          throw std::runtime_error(
              fmt::format("client {} failed (exit {}):\n{}", c, rc.value_or(-1), out));
        std::cout << "  client " << c << ": " << j.dump() << "\n";
        sum.valid += j["valid"].get<long>();
        sum.answered += j["answered"].get<long>();
        sum.wrong += j["wrong"].get<long>();
        sum.lost += j["lost"].get<long>();
        sum.abandoned += j["abandoned"].get<long>();
        sum.stalled = sum.stalled || j["stalled"].get<bool>();
        sum.retried += j["retried"].get<long>();
        sum.malformed += j["malformed"].get<long>();
        sum.seconds = std::max(sum.seconds, j["seconds"].get<double>());
      }
      return sum;
    };

    std::cout << fmt::format("warm-up: {} queries\n", warmup);
    FloodResult w = flood(warmup);
    long rss_start = rss_kib(sa.pid());
    std::cout << fmt::format("flood: {} queries from {} clients, 1 MAD in {} malformed\n", queries,
                             clients, co.malformed_every);
    FloodResult f = flood(queries);
    long rss_end = rss_kib(sa.pid());
    bool alive = sa.running();
    std::cout << fmt::format(
        "valid {} answered {} wrong {} lost {} abandoned {}{} retried {} malformed {} in {:.1f} "
        "s ({:.0f} q/s); rdma-qos-sad RSS {} KiB -> {} KiB; running: {}\n",
        f.valid, f.answered, f.wrong, f.lost, f.abandoned,
        f.stalled ? " (a client got no answer for 15 s)" : "", f.retried, f.malformed, f.seconds,
        static_cast<double>(f.valid) / f.seconds, rss_start, rss_end, alive ? "yes" : "no");
    bool ok = alive && w.answered == w.valid && f.answered == f.valid && f.valid == queries &&
              f.wrong == 0 && f.lost == 0 && f.abandoned == 0 && !w.stalled && !f.stalled &&
              f.malformed > 0 && rss_start > 0 && rss_end > 0 &&
              rss_end - rss_start <= rss_slack_kib;
    if (!ok) std::cout << "rdma-qos-sad log:\n" << sad_log();
    std::cout << (ok ? "PASS\n" : "FAIL\n");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "sa-flood: " << e.what() << "\n";
    return 2;
  }
}
