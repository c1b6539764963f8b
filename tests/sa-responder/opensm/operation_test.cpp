// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Operating rdma-qos-sad on ibsim: the control socket (`rdma-qos sad reload|rediscover|stats`),
// reloads under load, signals, and the SM_Key rule compared with OpenSM's. Each test starts its
// own fabric: OpenSM configures it and answers the SM_Key queries, then our SA takes over.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"
#include "rdma-qos/testbed/sample_policy.h"
#include "rdma-qos/testbed/saquery.h"
#include "sad_at_another_port.h"

namespace rdmaqos::sad {
namespace {

using namespace std::chrono_literals;
using testbed::IbFabric;
using testbed::RunResult;

// iSER (Service-ID 0x1060CBC) gets SL 3; everything else the default level's SL 0.
const std::string kGoodPolicy = testbed::sample_policy({.gold = false, .sdp_ulp = false});

// saquery PathRecord from node001 to node002 for iSER's Service-ID: unmodified clients ask the
// SM LID, whoever answers there.
RunResult iser_query(const IbFabric& fabric) {
  return fabric.run_at("node001", {"saquery", "-p", "--slid", fabric.lid_arg("node001"), "--dlid",
                                   fabric.lid_arg("node002"), "--service_id", "0x1060CBC"});
}

// The query got one PathRecord, with SL `sl`.
void expect_one_record_with_sl(const RunResult& q, uint64_t sl) {
  auto recs = testbed::parse_saquery_output(q.output);
  ASSERT_EQ(recs.size(), 1u) << q.output;
  EXPECT_EQ(recs[0].number("sl"), sl);
}

// Runs `argv` at node001 every 200 ms until it succeeds, `sad` exits or 100 runs failed: how a
// test waits for rdma-qos-sad to answer. The last run.
// Policies a reload must reject. Each would change answers if any of it were applied: the
// third maps iSER to SL 6 and the default to SL 1 before its error.
const std::vector<std::string> kBadPolicies = {
    "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\n",  // unterminated
    "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 1\n  end-qos-level\nend-qos-levels\n"
    "qos-match-rules\n  qos-match-rule\n    service-id: 0x1060CBC\n    qos-level-name: NOPE\n"
    "  end-qos-match-rule\nend-qos-match-rules\n",  // undefined level
    "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 1\n  end-qos-level\n  qos-level\n"
    "    name: ISER\n    sl: 6\n  end-qos-level\nend-qos-levels\nqos-match-rules\n"
    "  qos-match-rule\n    service-id: 0x1060CBC\n    qos-level-name: ISER\n"
    "  end-qos-match-rule\n  qos-match-rule\n    sl: 99\n  end-qos-match-rule\n"
    "end-qos-match-rules\n",  // valid rules, then an error
};

class SadOperation : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_ = testbed::start_fat_tree(kGoodPolicy);
    policy_path_ = fabric_->dir() + "/sad-policy.conf";
    socket_ = fabric_->dir() + "/sad.sock";
    write_policy(kGoodPolicy);
  }

  void TearDown() override {
    if (sad_) sad_->stop();
    if (HasFailure()) std::cerr << "rdma-qos-sad log:\n" << sad_log() << "\n";
  }

  void write_policy(const std::string& text) { std::ofstream(policy_path_) << text; }

  std::map<std::string, std::string> extra_env_;  // for start_sad

  // Stops OpenSM and starts our SA at its port; returns once ClassPortInfo is answered.
  void start_sad(std::vector<std::string> extra = {}) {
    fabric_->stop_sm();
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_SAD, "--policy", policy_path_, "--control-socket", socket_, "--foreground"};
    // No periodic re-discovery unless the test asks for one.
    if (std::find(extra.begin(), extra.end(), "--rediscover-interval") == extra.end())
      extra.insert(extra.end(), {"--rediscover-interval", "0"});
    p.argv.insert(p.argv.end(), extra.begin(), extra.end());
    p.env = fabric_->client_env(fabric_->topology().sm_node().id);
    for (const auto& [k, v] : extra_env_) p.env[k] = v;
    p.cwd = fabric_->dir();
    p.output_path = fabric_->dir() + "/sad.log";
    auto started = fabric_->start_until_answering(p, {"saquery", "-c"});
    sad_ = std::move(started.daemon);
    if (started.probe.exit_code != 0)
      FAIL() << "rdma-qos-sad did not answer: " << started.probe.output;
  }

  std::string sad_log() const {
    if (!fabric_) return {};
    std::ifstream in(fabric_->dir() + "/sad.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // `rdma-qos sad COMMAND --socket S ARGS...`
  RunResult cli(const std::string& command, std::vector<std::string> args = {}) const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, "sad", command, "--socket", socket_};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    return testbed::run(p, 60s);
  }

  nlohmann::json cli_json(const std::string& command) const {
    RunResult r = cli(command, {"--json"});
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.output;
    return j;
  }

  // The stats once `done` holds for them, or the last ones after `attempts` tries 100 ms apart.
  // (`done` takes them mutable: operator[] of a const json must not meet a missing key.)
  nlohmann::json stats_once(const std::function<bool(nlohmann::json&)>& done, int attempts) const {
    nlohmann::json s;
    for (int i = 0; i < attempts; ++i) {
      s = cli_json("stats");
      if (done(s)) break;
      std::this_thread::sleep_for(100ms);
    }
    return s;
  }

  // saquery PathRecord from node001 to node002 with an SM_Key.
  RunResult keyed_query(const std::string& key) const {
    return fabric_->run_at("node001", {"saquery", "-p", "--slid", fabric_->lid_arg("node001"),
                                       "--dlid", fabric_->lid_arg("node002"), "--smkey", key});
  }

  std::unique_ptr<IbFabric> fabric_;
  std::unique_ptr<testbed::Process> sad_;
  std::string policy_path_, socket_;
};

TEST_F(SadOperation, SmKeyRulesEqualOpenSms) {
  // OpenSM: 0 (untrusted) and its sa_key 1 (trusted) get the same record; another key nothing.
  std::vector<std::string> keys = {"0", "1", "2", "0x8000000000000000"};
  std::vector<RunResult> theirs;
  for (const auto& k : keys) theirs.push_back(keyed_query(k));
  ASSERT_EQ(theirs[0].exit_code, 0) << theirs[0].output;
  ASSERT_NE(theirs[2].exit_code, 0) << "OpenSM answered a wrong SM_Key: " << theirs[2].output;
  start_sad();
  for (size_t i = 0; i < keys.size(); ++i) {
    SCOPED_TRACE("SM_Key " + keys[i]);
    RunResult ours = keyed_query(keys[i]);
    EXPECT_EQ(ours.exit_code, theirs[i].exit_code) << "OpenSM:\n"
                                                   << theirs[i].output << "\nours:\n"
                                                   << ours.output;
    auto a = testbed::parse_saquery_output(ours.output);
    auto b = testbed::parse_saquery_output(theirs[i].output);
    ASSERT_EQ(a.size(), b.size());
    for (size_t r = 0; r < a.size(); ++r) EXPECT_EQ(a[r].fields, b[r].fields);
  }
  nlohmann::json stats = cli_json("stats");
  EXPECT_EQ(stats["dropped"]["sm_key"], 2) << stats.dump(2);
}

TEST_F(SadOperation, ConfiguredSaKeyIsTheTrustedOne) {
  std::string conf = fabric_->dir() + "/opensm.conf";
  std::ofstream(conf) << "sa_key 0x2\nsubnet_timeout 18\n";
  start_sad({"--opensm-conf", conf});
  EXPECT_EQ(keyed_query("2").exit_code, 0);
  EXPECT_EQ(keyed_query("0").exit_code, 0);
  EXPECT_NE(keyed_query("1").exit_code, 0);
}

TEST_F(SadOperation, StatsCountQueriesByLevelMethodAndStatus) {
  start_sad();
  RunResult r = iser_query(*fabric_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json s = cli_json("stats");
  EXPECT_GE(s["levels"]["ISER"]["records"].get<int>(), 1) << s.dump(2);
  EXPECT_GE(s["methods"]["GetTable PathRecord"].get<int>(), 1) << s.dump(2);
  EXPECT_GE(s["methods"]["Get ClassPortInfo"].get<int>(), 1) << s.dump(2);
  EXPECT_GE(s["statuses"]["SUCCESS"].get<int>(), 2) << s.dump(2);
  EXPECT_EQ(s["policy"]["file"], policy_path_);
  EXPECT_EQ(s["fabric"]["endpoints"], fabric_->topology().nodes.size());
  // The human form names the same things.
  RunResult human = cli("stats");
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_NE(human.output.find("ISER"), std::string::npos) << human.output;
  EXPECT_NE(human.output.find("GetTable PathRecord"), std::string::npos) << human.output;
  // Every request answered was timed.
  EXPECT_GE(s["latency"]["count"].get<int>(), 2) << s.dump(2);
  // The Prometheus form of the live daemon's counters, checked by promtool where installed.
  RunResult prom = cli("stats", {"--format", "prometheus"});
  EXPECT_EQ(prom.exit_code, 0);
  EXPECT_NE(prom.output.find("rdma_qos_sad_pairs_total{ca="), std::string::npos) << prom.output;
  EXPECT_NE(prom.output.find("level=\"ISER\",result=\"record\"}"), std::string::npos)
      << prom.output;
  if (std::system("command -v promtool >/dev/null") == 0) {
    std::string file = fabric_->dir() + "/metrics.prom";
    std::ofstream(file) << prom.output;
    EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << prom.output;
  }
}

// --control-socket-group: the group reads the stats without root (the socket is 0660 and
// theirs), but may not reload or re-discover.
TEST_F(SadOperation, SocketGroupMayReadStatsButNotOperate) {
  char tmpl[] = "/tmp/rdma-qos-group-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  chmod(dir.c_str(), 0755);  // the monitoring user must reach the socket
  socket_ = dir + "/sad.sock";
  start_sad({"--control-socket-group", "nogroup"});
  struct stat st {};
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  const group* nogroup = getgrnam("nogroup");
  ASSERT_NE(nogroup, nullptr);
  EXPECT_EQ(st.st_gid, nogroup->gr_gid);
  // As user nobody in group nogroup.
  auto as_monitor = [&](const std::string& command) {
    testbed::ProcessOptions p;
    p.argv = {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", RDMA_QOS_CLI,
              "sad",     command,          "--socket",        socket_};
    return testbed::run(p, 60s);
  };
  RunResult stats = as_monitor("stats");
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("requests"), std::string::npos) << stats.output;
  RunResult reload = as_monitor("reload");
  EXPECT_EQ(reload.exit_code, 1) << reload.output;
  EXPECT_NE(reload.output.find("reload needs root"), std::string::npos) << reload.output;
  sad_->stop();
  sad_.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(SadOperation, RediscoverReportsTheFabricAndKeepsAnswering) {
  start_sad();
  RunResult r = cli("rediscover");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(fmt::format("{} endpoints", fabric_->topology().nodes.size())),
            std::string::npos)
      << r.output;
  // SIGUSR1 does the same.
  kill(sad_->pid(), SIGUSR1);
  nlohmann::json s =
      stats_once([](nlohmann::json& j) { return j["fabric"]["discoveries"] == 3; }, 100);
  EXPECT_EQ(s["fabric"]["discoveries"], 3) << s.dump(2);
  RunResult q = iser_query(*fabric_);
  ASSERT_EQ(q.exit_code, 0) << q.output;
  expect_one_record_with_sl(q, 3);
}

TEST_F(SadOperation, PeriodicRediscoveryRunsWithoutRequests) {
  start_sad({"--rediscover-interval", "1"});
  nlohmann::json s =
      stats_once([](nlohmann::json& j) { return j["fabric"]["discoveries"].get<int>() >= 3; }, 100);
  EXPECT_GE(s["fabric"]["discoveries"].get<int>(), 3) << s.dump(2);
  EXPECT_EQ(s["fabric"]["discovery_failures"], 0) << s.dump(2);
  EXPECT_EQ(s["fabric"]["rediscover_interval_seconds"], 1);
  EXPECT_EQ(keyed_query("0").exit_code, 0);
}

// --daemon returns once the SA answers, and the detached daemon keeps answering.
TEST_F(SadOperation, DaemonModeReturnsOnceAnswering) {
  fabric_->stop_sm();
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_SAD,
            "--policy",
            policy_path_,
            "--control-socket",
            socket_,
            "--daemon",
            "--rediscover-interval",
            "0"};
  p.env = fabric_->client_env(fabric_->topology().sm_node().id);
  p.cwd = fabric_->dir();
  RunResult started = testbed::run(p, 60s);
  // The detached daemon left the test's process group: stop it by pid whatever happens.
  auto stop_daemon = [&] {
    for (pid_t pid : testbed::processes_with_env("IBSIM_SOCKNAME", fabric_->sockname())) {
      std::error_code ec;
      auto exe = std::filesystem::read_symlink(fmt::format("/proc/{}/exe", pid), ec);
      if (!ec && exe.filename() == "rdma-qos-sad") {
        kill(pid, SIGTERM);
        for (int i = 0; i < 50 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(100ms);
      }
    }
  };
  EXPECT_EQ(started.exit_code, 0) << started.output;
  EXPECT_EQ(keyed_query("0").exit_code, 0);
  nlohmann::json s = cli_json("stats");
  EXPECT_NE(s["sa"]["pid"], nullptr);
  stop_daemon();
}

TEST_F(SadOperation, BadReloadReportsEveryDiagnosticAndKeepsThePolicy) {
  start_sad();
  write_policy(kBadPolicies[2]);
  RunResult r = cli("reload");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(policy_path_ + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("previous policy stays"), std::string::npos) << r.output;
  // SIGHUP: the same diagnostics go to the log.
  kill(sad_->pid(), SIGHUP);
  nlohmann::json s =
      stats_once([](nlohmann::json& j) { return j["policy"]["reload_failures"] == 2; }, 50);
  EXPECT_EQ(s["policy"]["reload_failures"], 2) << s.dump(2);
  expect_one_record_with_sl(iser_query(*fabric_), 3);
}

// Without a usable policy the daemon does not start: no policy and no --no-policy is refused
// before anything else, a policy with errors once the fabric is discovered, both with exit
// status 78 (EX_CONFIG, which the unit does not restart on) and every diagnostic logged as
// FILE:LINE:COL. OpenSM answers meanwhile.
TEST_F(SadOperation, RefusesToStartWithoutAUsablePolicy) {
  fabric_->stop_sm();
  auto run_sad = [&](std::vector<std::string> args) {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_SAD, "--foreground", "--control-socket", socket_};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.env = fabric_->client_env(fabric_->topology().sm_node().id);
    p.cwd = fabric_->dir();
    return testbed::run(p, 60s);
  };
  RunResult none = run_sad({});
  EXPECT_EQ(none.exit_code, 78) << none.output;
  EXPECT_NE(none.output.find("no policy: give --policy FILE, or --no-policy"), std::string::npos)
      << none.output;

  // A level without an SL (line 2), and two rules naming levels that do not exist (lines 9 and
  // 13).
  write_policy(R"(qos-levels
  qos-level
    name: DEFAULT
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    qos-class: 1
    qos-level-name: NOPE
  end-qos-match-rule
  qos-match-rule
    qos-class: 2
    qos-level-name: MISSING
  end-qos-match-rule
end-qos-match-rules
)");
  RunResult bad = run_sad({"--policy", policy_path_});
  EXPECT_EQ(bad.exit_code, 78) << bad.output;
  for (const char* line : {":2:3: error: qos-level 'DEFAULT' has no 'sl'",
                           ":9:5: error: qos-level 'NOPE' is not defined",
                           ":13:5: error: qos-level 'MISSING' is not defined"}) {
    EXPECT_NE(bad.output.find(policy_path_ + line), std::string::npos) << line << " in:\n"
                                                                       << bad.output;
  }
  EXPECT_NE(bad.output.find("the policy or partitions have errors: not starting"),
            std::string::npos)
      << bad.output;
}

// A datagram socket in place of systemd's NOTIFY_SOCKET: what the daemon tells systemd.
class NotifySocket {
 public:
  NotifySocket() : path_("/tmp/rdma-qos-notify-" + std::to_string(getpid())) {
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // The next message holding `what`, or "" when none came within the timeout.
  std::string wait_for(const std::string& what, std::chrono::seconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    timeval tv{0, 200000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (std::chrono::steady_clock::now() < end) {
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::string m(buf, static_cast<size_t>(n));
      if (m.find(what) != std::string::npos) return m;
    }
    return {};
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// Under systemd (Type=notify): READY=1 once answering, with a STATUS= naming the port, LID and
// policy; a reload says RELOADING=1, then READY=1 again; a refused one says so in STATUS=.
TEST_F(SadOperation, TellsSystemdWhenReadyAndWhileReloading) {
  NotifySocket notify;
  extra_env_["NOTIFY_SOCKET"] = notify.path();
  start_sad();
  std::string ready = notify.wait_for("READY=1", 10s);
  EXPECT_NE(ready.find("STATUS=answering at "), std::string::npos) << ready;
  EXPECT_NE(ready.find("policy " + policy_path_), std::string::npos) << ready;
  kill(sad_->pid(), SIGHUP);
  EXPECT_NE(notify.wait_for("RELOADING=1", 10s), "");
  EXPECT_NE(notify.wait_for("READY=1", 10s), "");
  write_policy(kBadPolicies[1]);
  kill(sad_->pid(), SIGHUP);
  std::string refused = notify.wait_for("READY=1", 10s);
  EXPECT_NE(refused.find("the last reload failed"), std::string::npos) << refused;
}

// `systemctl reload` is SIGHUP: a burst of them (and SIGUSR1s) must never stop the daemon,
// whichever thread the kernel picks to deliver them to.
TEST_F(SadOperation, SignalBurstsNeverStopTheDaemon) {
  start_sad();
  for (int i = 0; i < 40; ++i) {
    kill(sad_->pid(), i % 8 == 7 ? SIGUSR1 : SIGHUP);
    std::this_thread::sleep_for(20ms);
  }
  stats_once([](nlohmann::json& j) { return j.contains("policy"); }, 50);
  ASSERT_EQ(kill(sad_->pid(), 0), 0) << "rdma-qos-sad exited after SIGHUP/SIGUSR1";
  expect_one_record_with_sl(iser_query(*fabric_), 3);
}

// The issue's "reload under load": a client keeps 16 queries outstanding while 100 reloads
// alternate between the good policy and bad ones. Every query is answered (no retries, so a
// lost answer is a failure) with the good policy's SL; every bad reload is refused with its
// diagnostics, every good one accepted.
TEST_F(SadOperation, HundredAlternatingReloadsUnderLoadLoseAndChangeNothing) {
  start_sad();
  std::string stop_file = fabric_->dir() + "/stop-load";
  testbed::ProcessOptions load;
  const std::string dlid = fabric_->lid_arg("node002");
  load.argv = {RDMA_QOS_SAD_LOAD, "--dlid",  dlid,        "--sl-sid", "3", "--sl-plain", "0",
               "--stop-file",     stop_file, "--seconds", "50"};
  load.env = fabric_->client_env("node001");
  load.cwd = fabric_->dir();
  load.output_path = fabric_->dir() + "/load.log";
  testbed::Process loader = testbed::Process::spawn(load);
  std::this_thread::sleep_for(300ms);  // the load is under way before the first reload

  int good_ok = 0, bad_refused = 0;
  for (int i = 0; i < 100; ++i) {
    const bool good = i % 2 == 0;
    write_policy(good ? kGoodPolicy
                      : kBadPolicies[static_cast<size_t>(i / 2) % kBadPolicies.size()]);
    RunResult r = cli("reload", {"--json"});
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.output;
    if (good) {
      EXPECT_EQ(r.exit_code, 0) << r.output;
      good_ok += j["ok"] == true ? 1 : 0;
    } else {
      EXPECT_EQ(r.exit_code, 1) << r.output;
      ASSERT_FALSE(j["diagnostics"].empty()) << r.output;
      // Every diagnostic names the file and a line.
      for (const auto& d : j["diagnostics"])
        EXPECT_EQ(d.get<std::string>().rfind(policy_path_ + ":", 0), 0u) << d;
      bad_refused += j["ok"] == false ? 1 : 0;
    }
  }
  std::ofstream(stop_file) << "";
  auto exit = loader.wait_for(20s);
  ASSERT_EQ(exit, 0);
  std::ifstream in(fabric_->dir() + "/load.log");
  nlohmann::json counts;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') counts = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(counts.is_object()) << "no counts from the load";
  std::printf("load: %s\n", counts.dump().c_str());
  EXPECT_EQ(good_ok, 50);
  EXPECT_EQ(bad_refused, 50);
  EXPECT_GT(counts["queries"].get<int>(), 1000) << counts.dump();
  EXPECT_EQ(counts["answered"], counts["queries"]) << counts.dump();
  EXPECT_EQ(counts["failed"], 0) << counts.dump();
  EXPECT_EQ(counts["wrong"], 0) << counts.dump();
  nlohmann::json s = cli_json("stats");
  EXPECT_EQ(s["policy"]["reloads"], 50);
  EXPECT_EQ(s["policy"]["reload_failures"], 50);
}

// The second deployment: OpenSM stays the SM and SA at LID 1 (its policy gives iSER SL 5), our
// SA runs at another node's port (node008, its first port as with no --ca/--port), and clients
// pointed at our LID with `--sa-lid` or RDMA_QOS_SA_LID get our policy's SL 3; the same query
// without it goes to the SM LID and gets OpenSM's answer.
class SadAtAnotherPort : public ::testing::Test {
 protected:
  // Not the sample policy on purpose: iSER's SL 5 here against 3 in ours tells which SA answered.
  static constexpr const char* kOpenSmPolicy = R"(qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: ISER
    sl: 5
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    service-id: 0x1060CBC
    qos-level-name: ISER
  end-qos-match-rule
end-qos-match-rules
)";

  void TearDown() override {
    if (sad_) sad_->stop();
    if (HasFailure() && fabric_) {
      std::ifstream in(fabric_->dir() + "/sad.log");
      std::cerr << "rdma-qos-sad log:\n" << std::string(std::istreambuf_iterator<char>(in), {});
    }
  }

  // `rdma-qos path --json` from node001 to node002 for iSER with `extra` options and
  // environment; the SL of the one record, or -1 (and the output in `why`).
  int path_sl(std::vector<std::string> extra, std::map<std::string, std::string> env,
              std::string& why) const {
    testbed::ProcessOptions p;
    p.argv = {RDMA_QOS_CLI, "path",         "--json",   "--dlid", fabric_->lid_arg("node002"),
              "--get",      "--service-id", "0x1060CBC"};
    p.argv.insert(p.argv.end(), extra.begin(), extra.end());
    p.env = fabric_->client_env("node001");
    for (auto& [k, v] : env) p.env[k] = v;
    p.cwd = fabric_->dir();
    RunResult r = testbed::run(p, 20s);
    why = r.output;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] != '{') continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("paths") || j["paths"].size() != 1) return -1;
      return j["paths"][0]["sl"].get<int>();
    }
    return -1;
  }

  std::unique_ptr<IbFabric> fabric_;
  std::unique_ptr<testbed::Process> sad_;
};

TEST_F(SadAtAnotherPort, ClientsPointedAtItGetOurPolicyOthersOpenSms) {
  testbed::IbFabricOptions o = testbed::fabric_options(testbed::make_fat_tree({}));
  o.policy = kOpenSmPolicy;
  // OpenSM would ask our issm-holding port for its SMInfo at every heavy sweep, and wait for
  // the answer forever under umad2sim (see sm_traps_test.cpp).
  o.opensm_conf = "ignore_other_sm TRUE\nforce_log_flush TRUE\n";
  fabric_ = std::make_unique<IbFabric>(std::move(o));
  const std::string policy = fabric_->dir() + "/sad-policy.conf";
  std::ofstream(policy) << kGoodPolicy;
  const std::string node = "node008";
  const std::string our_lid = fabric_->lid_arg(node);
  ASSERT_NE(our_lid, fabric_->lid_arg(fabric_->topology().sm_node().id));

  auto started = start_sad_at(*fabric_, node, policy, fabric_->dir() + "/sad.sock");
  sad_ = std::move(started.daemon);
  const RunResult& probe = started.probe;
  ASSERT_EQ(probe.exit_code, 0) << "rdma-qos-sad did not answer at LID " << our_lid << ": "
                                << probe.output;
  // sa-client reads both bits from our own ClassPortInfo masks (0x0400 / 0xA082).
  EXPECT_NE(probe.output.find("CapabilityMask  0x0400  MultiPath supported"), std::string::npos)
      << probe.output;
  EXPECT_NE(probe.output.find("CapabilityMask2 0x000a082  QoS supported"), std::string::npos)
      << probe.output;
  {
    std::ifstream in(fabric_->dir() + "/sad.log");
    std::string log(std::istreambuf_iterator<char>(in), {});
    EXPECT_NE(
        log.find("not the SM's port (SM LID 1): clients reach this SA with sa_lid " + our_lid),
        std::string::npos)
        << log;
  }

  std::string why;
  EXPECT_EQ(path_sl({"--sa-lid", our_lid}, {}, why), 3) << why;
  EXPECT_EQ(path_sl({}, {{"RDMA_QOS_SA_LID", our_lid}}, why), 3) << why;
  // The option wins over the knob.
  EXPECT_EQ(path_sl({"--sa-lid", fabric_->lid_arg(fabric_->topology().sm_node().id)},
                    {{"RDMA_QOS_SA_LID", our_lid}}, why),
            5)
      << why;
  // Without either: the SM LID, OpenSM's policy.
  EXPECT_EQ(path_sl({}, {}, why), 5) << why;
  // Unmodified saquery always asks the SM LID.
  ASSERT_NO_FATAL_FAILURE(expect_one_record_with_sl(iser_query(*fabric_), 5));
  // A heavy sweep (SIGHUP to OpenSM) with our port advertising IsSM (held issm, as ibsim
  // needs) changes nothing: OpenSM stays the SM and both SAs keep their answers.
  ASSERT_EQ(fabric_->pids().size(), 2u);
  auto sweeps = [&] {
    const std::string log = fabric_->opensm_log();
    size_t n = 0;
    for (size_t at = log.find("SUBNET UP"); at != std::string::npos;
         at = log.find("SUBNET UP", at + 1))
      ++n;
    return n;
  };
  const size_t before = sweeps();
  kill(fabric_->pids()[1], SIGHUP);
  for (int i = 0; i < 100 && sweeps() == before; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_GT(sweeps(), before) << "OpenSM's heavy sweep did not finish";
  EXPECT_EQ(path_sl({"--sa-lid", our_lid}, {}, why), 3) << why;
  EXPECT_EQ(path_sl({}, {}, why), 5) << why;
  EXPECT_EQ(fabric_->pids().size(), 2u);
}

}  // namespace
}  // namespace rdmaqos::sad
