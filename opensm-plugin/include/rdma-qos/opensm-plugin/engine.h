// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's engine: the fabric model from OpenSM's subnet and the compiled policy, swapped
// as one snapshot; answers PathRecord / MultiPathRecord requests with rdma-qos-sad's answer
// code; reloads the policy and serves the control socket on its own thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdma-qos/common/metrics.h"
#include "rdma-qos/opensm-plugin/fabric_builder.h"
#include "rdma-qos/opensm-plugin/options.h"
#include "rdma-qos/opensm-plugin/policy_cache.h"
#include "rdma-qos/opensm-plugin/policy_source.h"
#include "rdma-qos/policy/compiled_policy.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/answer_service.h"
#include "rdma-qos/sa-responder/counters.h"
#include "rdma-qos/sa-responder/fabric_model.h"
#include "rdma-qos/sa-responder/multicast.h"

namespace rdmaqos::sad {
class ControlServer;
}

struct rdma_qos_osmp;  // plugin.h

namespace rdmaqos::osmp {

// Everything one answer reads (sad::AnswerService's state in force); replaced as a whole.
using Snapshot = sad::AnswerSnapshot;
// The policy and partitions compiled against a model (sad::load_answer_state).
using LoadResult = sad::StateLoad;

// The qos-setup hooks' counters (qos_apply.cpp runs on OpenSM's sweep thread).
struct QosSetupCounters {
  std::atomic<uint64_t> heavy_sweeps{0};  // heavy sweeps that looked at the policy
  std::atomic<uint64_t> builds{0};        // scopes built (a new policy text or new partitions)
  std::atomic<uint64_t> scopes{0};        // SL2VL and VLArb scopes in force
};

class Engine {
 public:
  using Log = std::function<void(bool error, const std::string& line)>;
  // Fills the builder from OpenSM's subnet; false when it could not.
  using Snapshotter = std::function<bool(FabricBuilder&)>;
  using Send = std::function<void(std::span<const uint8_t>)>;
  // The routing engine's SL for (hint, SLID, DLID), asked as OpenSM asks it; -1 when the engine
  // routing the subnet now assigns none.
  using PathSl = std::function<int(uint8_t hint, uint16_t slid, uint16_t dlid)>;

  Engine(Options options, OsmConfig osm, Log log, Snapshotter snapshotter, PathSl path_sl = {});
  ~Engine();  // stops the thread
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts the thread (and the control socket). Call once.
  void start();
  // A new model is wanted (never blocks).
  void refresh();
  bool ready() const { return service_.current() != nullptr; }

  // kDeferred: a worker of the plugin's computes the answer and calls `send` later.
  enum class Outcome { kAnswered, kDropped, kFallback, kDeferred };
  // Why a request went to OpenSM's own handler (stats' fallback_reasons).
  enum class Fallback {
    kNoModel,             // no model of the current subnet (none yet, or it cannot be built)
    kQosOff,              // OpenSM runs with qos FALSE
    kPaused,              // paused through the control socket
    kUndecodable,         // a MAD the plugin cannot decode
    kUnknownRequester,    // the model does not know the requester's LID
    kMultiPathRoutingSl,  // a MultiPathRecord where the routing engine assigns SLs
    kMulticast,           // a PathRecord to a multicast group the requester may see
    kUnknownPort,         // a GID of this subnet the model lacks (an alias GUID, a new port)
    kNoPkeyTable,         // an endpoint's P_Key table is empty (not read or set yet)
    kAliasedPort,         // a path query that may touch a port with alias GUIDs
    kInactivePort,        // a path query that may touch a port or link not yet Active
    kFailed,              // the answer failed (an exception)
  };
  // One request MAD; `send` gets the response bytes. Thread-safe. With `may_defer`, a request
  // that expands to many pairs (sad::estimate_work) is computed on one of the plugin's answer
  // threads (kDeferred: `send` is called there later, so it must own what it refers to), or
  // answered BUSY when they are all taken and their queue is full; a retry of a request still
  // queued or computed (the same requester and TID) is dropped.
  Outcome answer(std::span<const uint8_t> mad, uint16_t slid, Send send, bool may_defer = false);

  // Compiles `inputs` against `model` (pure: no state changes); the policy as parsed there.
  LoadResult load(std::shared_ptr<const sad::FabricModel> model, const PolicyInputs& inputs) const;
  // Builds a model from OpenSM and installs it with the policy; logs why not.
  bool rebuild();
  // Re-reads the policy against the current model; the reply of the control socket.
  nlohmann::json reload();
  // The control command "stats": the counters by name, and their metrics ("metrics", the JSON
  // form of metrics()).
  nlohmann::json stats() const;
  // The counters against plugin_metric_table() (src/plugin_metrics.cpp).
  common::metrics::Snapshot metrics() const;
  // The control command "explain": what the snapshot in force answers to one query and why
  // (sad::explain); never throws (src/explain_command.cpp).
  nlohmann::json explain(const nlohmann::json& body) const;
  const Options& options() const { return options_; }
  // The files, shared with the qos-setup hooks so that each is read and parsed once.
  PolicySource& policy_source() { return *source_; }
  QosSetupCounters& qos_setup_counters() { return qos_setup_; }

 private:
  void run();
  void handle(int connection, const nlohmann::json& body);
  // Gives the control socket to options_.control_socket_group (mode 0660); logs why not.
  void share_control_socket();
  // No model of the current subnet can be built: OpenSM's handlers answer (said once at ERROR).
  void hand_over(const std::string& why);
  // Why OpenSM's own handlers answer (stats' handed_to_opensm); null while the plugin answers.
  nlohmann::json handover_reason(bool answering) const;
  // load(), or the kept compilation when the files and the fabric's nodes are unchanged (then
  // without diagnostics: they were those of the compilation kept).
  LoadResult load_cached(std::shared_ptr<const sad::FabricModel> model, const PolicyInputs& inputs);
  // Counts a compilation of `inputs` against `model` and keeps it when it succeeded.
  void remember(const sad::FabricModel& model, const PolicyInputs& inputs, const LoadResult& r);
  // Logs `line` unless it was logged for these versions of the files already: every diagnostic
  // once per policy (and partitions) version, not at every sweep.
  void log_once(const PolicyInputs& inputs, bool error, const std::string& line);

  const Options options_;
  const OsmConfig osm_;
  const Log log_;
  const Snapshotter snapshotter_;
  // The routing engine's path SLs through path_sl (used where the model says it assigns them).
  class RoutingSl : public sad::RoutingSl {
   public:
    explicit RoutingSl(PathSl path_sl) : path_sl_(std::move(path_sl)) {}
    uint8_t path_sl(uint8_t hint, uint16_t slid, uint16_t dlid) const override;

   private:
    const PathSl path_sl_;
  };
  const RoutingSl routing_sl_;
  const bool rmpp_;
  // The state in force, its counters, the answering context and the answer threads (their
  // tasks use the members above; the destructor stops them first).
  sad::AnswerService service_;
  std::shared_ptr<const sad::FabricModel> last_model_;  // the thread's; may lack a policy
  const std::unique_ptr<PolicySource> source_;
  std::shared_ptr<const PolicyInputs>
      last_good_;      // the files of the policy in force (the thread's)
  PolicyCache cache_;  // the thread's
  QosSetupCounters qos_setup_;
  // What log_once said, for the versions of the files it said it for (the thread's).
  std::pair<uint64_t, uint64_t> logged_versions_{0, 0};
  std::set<std::string> logged_;
  Outcome hand_to_opensm(Fallback why);
  // Computes the answer to `mad` from `now` and sends it (counted); false: no response is due.
  bool compute(const sa::SaMad& mad, const sad::DecodedQuery& decoded, uint16_t slid,
               const Snapshot& now, std::chrono::steady_clock::time_point received,
               const Send& send);
  common::metrics::Snapshot metrics(const sad::CounterSnapshot& counts) const;
  std::array<std::atomic<uint64_t>, 12> fallback_reasons_{};
  // How long the last and the longest copy of OpenSM's subnet took (under OpenSM's lock).
  std::atomic<uint64_t> snapshot_ns_last_{0}, snapshot_ns_max_{0};
  std::atomic<bool> handed_over_{false};
  std::atomic<bool> paused_{false};  // the control socket's pause: OpenSM's handlers answer
  std::atomic<std::shared_ptr<const std::string>> handover_why_;
  std::atomic<std::shared_ptr<const sad::RoutingFacts>> routing_;  // of the last model built
  std::unique_ptr<sad::ControlServer> control_;
  std::thread thread_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false}, refresh_{false};
  std::atomic<uint64_t> fallbacks_{0}, models_{0}, model_failures_{0}, reloads_{0},
      reload_failures_{0}, compiles_{0}, compiles_skipped_{0};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// Whether the routing engine keeps OpenSM's own SL2VL / VLArb tables, so the policy's qos-setup
// is not applied under it: it programs them itself (torus-2QoS), or it gives paths SLs whose
// virtual layers OpenSM's SL-to-VL map keeps apart (LASH, DFSSSP, Nue).
inline bool engine_keeps_own_tables(const sad::RoutingFacts& routing) {
  return routing.assigns_sl || routing.programs_sl2vl;
}

// The name stats and metrics give a fallback reason ("no_model", "qos_off", ...).
const char* fallback_name(Engine::Fallback why);

// The plugin's metric families: the one list of what `rdma-qos opensm-plugin stats --format
// prometheus` shows (src/plugin_metrics.cpp).
const common::metrics::Table& plugin_metric_table();

// The engine behind the C handle of plugin.h (for the plugin's other C++ parts).
Engine& engine_of(rdma_qos_osmp* plugin);

}  // namespace rdmaqos::osmp
