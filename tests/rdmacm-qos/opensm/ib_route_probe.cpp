// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Runs at an ibsim node (umad2sim preloaded): the rdma_cm layer's InfiniBand PathRecord query
// (build_path_query) sent through sa-client, the answer printed as one line of JSON.
//   ib_route_probe [--mpr] SGUID DGUID SERVICE_ID [QOS_CLASS]
// --mpr: resolve_ib_route with MultiPathRecord (as RDMA_QOS_MPR=1 does).
#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/shared_client.h"

int main(int argc, char** argv) {
  bool mpr = argc > 1 && std::string(argv[1]) == "--mpr";
  if (mpr) {
    --argc;
    ++argv;
  }
  if (argc < 4) return 2;
  namespace sa = rdmaqos::sa;
  rdmaqos::rdmacm::IbRouteInputs in;
  in.sgid = sa::make_gid(0xfe80000000000000ULL, std::strtoull(argv[1], nullptr, 0));
  in.dgid = sa::make_gid(0xfe80000000000000ULL, std::strtoull(argv[2], nullptr, 0));
  in.service_id = std::strtoull(argv[3], nullptr, 0);
  if (argc > 4) in.qos_class = static_cast<uint16_t>(std::strtoul(argv[4], nullptr, 0));
  auto opened = sa::SharedClient::open(sa::ClientOptions{});
  if (!opened) {
    std::fprintf(stderr, "open: %s\n", opened.error().message.c_str());
    return 1;
  }
  sa::SharedClient& client = **opened;
  // The sequence the preload module runs, with rdma_set_option replaced by a capture.
  int qos = -1, count = -1;
  uint64_t comp_mask = 0;
  ibv_path_data installed{};
  auto counted = [&](rdmaqos::rdmacm::PathAnswer a, const char* what) {
    count = a ? static_cast<int>(a->size()) : -1;
    if (!a) std::fprintf(stderr, "%s: %s\n", what, a.error().message.c_str());
    return a;
  };
  rdmaqos::rdmacm::IbRouteOps ops;
  ops.sa_qos_supported = [&] {
    auto r = client.qos_supported(std::nullopt);
    qos = r ? (*r ? 1 : 0) : -1;
    return r;
  };
  ops.path_query = [&](const sa::PathQuery& q) {
    comp_mask = q.comp_mask;
    return counted(client.path_records(q, std::nullopt), "query");
  };
  ops.sa_mpr_supported = [&] { return client.multipath_supported(std::nullopt); };
  ops.multipath_query = [&](const sa::PathQuery& q) {
    comp_mask = q.comp_mask;
    return counted(client.multipath_records(q, std::nullopt), "multipath query");
  };
  ops.set_path = [&](ibv_path_data* data, size_t) {
    installed = *data;
    return 0;
  };
  auto r = rdmaqos::rdmacm::resolve_ib_route(in, false, ops, mpr);
  if (!r.installed) {
    std::fprintf(stderr, "not installed: %s\n", r.why.c_str());
    return 1;
  }
  const ibv_path_record& p = installed.path;
  std::printf(
      "{\"qos_supported\":%d,\"comp_mask\":%llu,\"count\":%d,\"sl\":%d,\"qos_class\":%d,"
      "\"mtu\":%d,\"flags\":%u,\"multipath\":%s,\"note\":\"%s\"}\n",
      qos, static_cast<unsigned long long>(comp_mask), count, ntohs(p.qosclass_sl) & 0xF,
      ntohs(p.qosclass_sl) >> 4, p.mtu & 0x3F, installed.flags, r.multipath ? "true" : "false",
      r.note.c_str());
  return 0;
}
