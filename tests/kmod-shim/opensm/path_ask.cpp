// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A test program that asks the node path service one PathRecord question through
// sa::PathServiceClient, as the preload module does, and prints the answer as one JSON line:
//   path_ask SOCKET DEVICE PORT SGID DGID SERVICE_ID
//   {"ok": true, "records": [{"sl": 3, "slid": 1, "dlid": 2, "service_id": "0x..."}]}
//   {"ok": false, "code": "timeout", "message": "..."}
// It opens no umad device, so it runs without umad2sim.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

#include "rdma-qos/common/number.h"
#include "rdma-qos/sa-client/gid.h"
#include "rdma-qos/sa-client/path_service_client.h"

int main(int argc, char** argv) {
  using namespace rdmaqos;
  if (argc != 7) {
    std::cerr << "usage: path_ask SOCKET DEVICE PORT SGID DGID SERVICE_ID\n";
    return 2;
  }
  auto port = parse_unsigned(argv[3], 254);
  auto sgid = sa::parse_gid(argv[4]);
  auto dgid = sa::parse_gid(argv[5]);
  auto service_id = parse_unsigned(argv[6]);
  if (!port || !sgid || !dgid || !service_id) {
    std::cerr << "path_ask: bad argument\n";
    return 2;
  }
  sa::PathServiceOptions o;
  o.socket_path = argv[1];
  o.device = argv[2];
  o.port = static_cast<int>(*port);
  nlohmann::json out;
  auto client = sa::PathServiceClient::connect(o);
  if (!client) {
    out = {{"ok", false},
           {"code", error_code_name(client.error().code)},
           {"message", client.error().message}};
    std::cout << out.dump() << "\n";
    return 1;
  }
  sa::PathQuery q;
  q.record.sgid = *sgid;
  q.record.dgid = *dgid;
  q.record.service_id = *service_id;
  q.record.numb_path = 1;
  q.comp_mask =
      sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kServiceId | sa::pr_mask::kNumbPath;
  q.get_table = false;
  auto paths = (*client)->path_records(q, sa::deadline_after(std::chrono::seconds(10)));
  if (!paths) {
    out = {{"ok", false},
           {"code", error_code_name(paths.error().code)},
           {"message", paths.error().message}};
  } else {
    out = {{"ok", true}, {"records", nlohmann::json::array()}};
    for (const auto& r : *paths)
      out["records"].push_back({{"sl", r.sl},
                                {"slid", r.slid},
                                {"dlid", r.dlid},
                                {"service_id", fmt::format("{:#x}", r.service_id)}});
  }
  std::cout << out.dump() << "\n";
  return paths ? 0 : 1;
}
