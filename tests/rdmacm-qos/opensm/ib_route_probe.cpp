// Runs at an ibsim node (umad2sim preloaded): the rdma_cm layer's InfiniBand PathRecord query
// (build_path_query) sent through sa-client, the answer printed as one line of JSON.
//   ib_route_probe [--mpr] SGUID DGUID SERVICE_ID [QOS_CLASS]
// --mpr: resolve_ib_route with MultiPathRecord (as RDMA_QOS_MPR=1 does).
#include <arpa/inet.h>
#include <endian.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/sa_client.h"

int main(int argc, char** argv) {
  bool mpr = argc > 1 && std::string(argv[1]) == "--mpr";
  if (mpr) {
    --argc;
    ++argv;
  }
  if (argc < 4) return 2;
  rdmaqos::rdmacm::IbRouteInputs in;
  in.sgid.global.subnet_prefix = htobe64(0xfe80000000000000ULL);
  in.sgid.global.interface_id = htobe64(std::strtoull(argv[1], nullptr, 0));
  in.dgid.global.subnet_prefix = htobe64(0xfe80000000000000ULL);
  in.dgid.global.interface_id = htobe64(std::strtoull(argv[2], nullptr, 0));
  in.service_id = std::strtoull(argv[3], nullptr, 0);
  if (argc > 4) in.qos_class = static_cast<uint16_t>(std::strtoul(argv[4], nullptr, 0));
  rdma_qos_sa_error err{};
  rdma_qos_sa_options options{};
  options.retries = -1;
  rdma_qos_sa_client* client = rdma_qos_sa_open(&options, &err);
  if (client == nullptr) {
    std::fprintf(stderr, "open: %s\n", err.message);
    return 1;
  }
  // The sequence the preload module runs, with rdma_set_option replaced by a capture.
  int qos = -1, count = -1;
  uint64_t comp_mask = 0;
  ibv_path_data installed{};
  rdmaqos::rdmacm::IbRouteOps ops;
  ops.sa_qos_supported = [&] { return qos = rdma_qos_sa_qos_supported(client, &err); };
  ops.path_query = [&](const rdmaqos::rdmacm::PathQuery& q, ibv_path_record* answer) {
    comp_mask = q.comp_mask;
    count = rdma_qos_sa_path_query(client, &q.record, q.comp_mask, answer, 1, &err);
    if (count < 0) std::fprintf(stderr, "query: %s\n", err.message);
    return count;
  };
  ops.sa_mpr_supported = [&] { return rdma_qos_sa_mpr_supported(client, &err); };
  ops.multipath_query = [&](const rdmaqos::rdmacm::PathQuery& q, ibv_path_record* answer) {
    comp_mask = q.comp_mask;
    count = rdma_qos_sa_multipath_query(client, &q.record, q.comp_mask, answer, 1, &err);
    if (count < 0) std::fprintf(stderr, "multipath query: %s\n", err.message);
    return count;
  };
  ops.set_path = [&](ibv_path_data* data, size_t) {
    installed = *data;
    return 0;
  };
  auto r = rdmaqos::rdmacm::resolve_ib_route(in, false, ops, mpr);
  rdma_qos_sa_close(client);
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
