// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The "explain" control request under libFuzzer: any bytes a client writes to the control
// socket are parsed as the daemon parses them, and an accepted request is explained on the
// hand-built subnet of the unit tests. Neither may crash, throw or hang.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "../unit/test_fabric.h"
#include "rdma-qos/sa-responder/explain.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmaqos::sad;
  static const FabricModel model = [] {
    FabricModel f = testing::small_model();
    f.nodes[1].ports[1].lmc = 1;  // a second LID for a, so LID combinations are walked
    f.nodes[1].ports[1].lid = 6;
    f.nodes[0].lft = {0xFF, 0, 0xFF, 2, 3, 0xFF, 1, 1};
    f.index();
    return f;
  }();
  auto body = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size),
                                    nullptr, false);
  if (body.is_discarded()) return 0;
  auto request = parse_explain_request(body);
  if (!request) return 0;
  (void)explain_request_json(*request);
  AnswerContext ctx;
  ctx.fabric = &model;
  (void)explain(ctx, *request, "fuzz.conf");
  return 0;
}
