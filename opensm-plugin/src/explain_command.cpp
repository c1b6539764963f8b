// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's "explain" control command: the shared explain engine (rdma-qos-sad's) over the
// snapshot of OpenSM's subnet in force, so that `rdma-qos opensm-plugin explain` shows what
// this OpenSM answers and why, and whether OpenSM's own handler answers the query instead.
#include <fmt/format.h>

#include "opensm_decides.h"
#include "rdma-qos/opensm-plugin/engine.h"
#include "rdma-qos/sa-responder/explain.h"

namespace rdmaqos::osmp {

nlohmann::json Engine::explain(const nlohmann::json& body) const {
  try {
    auto parsed = sad::parse_explain_request(body);
    if (!parsed) return {{"ok", false}, {"message", parsed.error().message}};
    std::shared_ptr<const Snapshot> now = service_.current();
    if (!now) {
      return {{"ok", false}, {"message", "not answering yet: no fabric model or no usable policy"}};
    }
    auto path = policy_path(options_, osm_);
    nlohmann::json ex = service_.explain(*now, *parsed, path.value_or("(no policy)"));
    const sad::AnswerContext ctx = service_.context(*now, std::nullopt, std::nullopt);
    // What the plugin would answer is shown either way; a query OpenSM's own handler answers
    // (the reasons the stats count) says so first, so the records are not taken for OpenSM's.
    std::optional<Fallback> why;
    if (!osm_.qos)
      why = Fallback::kQosOff;
    else if (paused_)
      why = Fallback::kPaused;
    if (auto mad = sad::explain_query(*parsed); mad && !why)
      why = opensm_decides(*mad, sad::decode_query(*mad), *now, ctx);
    if (why) {
      ex["handed_to_opensm"] = fallback_name(*why);
      ex["summary"] = fmt::format(
          "OpenSM's own handler answers this query, not the plugin ({}); the plugin would "
          "answer: {}",
          fallback_name(*why), ex.value("summary", ""));
    }
    return {{"ok", true}, {"explain", std::move(ex)}};
  } catch (const std::exception& e) {
    // Inside OpenSM's process: a failure is a reply, never an escaping exception.
    return {{"ok", false}, {"message", fmt::format("explain failed: {}", e.what())}};
  }
}

}  // namespace rdmaqos::osmp
