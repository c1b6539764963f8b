// Runs at an ibsim node (umad2sim preloaded): the rdma_cm layer's InfiniBand PathRecord query
// (build_path_query) sent through sa-client, the answer printed as one line of JSON.
//   ib_route_probe SGUID DGUID SERVICE_ID [QOS_CLASS]
#include <arpa/inet.h>
#include <endian.h>

#include <cstdio>
#include <cstdlib>

#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/sa_client.h"

int main(int argc, char** argv) {
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
  int qos = rdma_qos_sa_qos_supported(client, &err);
  auto q = rdmaqos::rdmacm::build_path_query(in, qos == 1);
  ibv_path_record answer{};
  int n = rdma_qos_sa_path_query(client, &q.record, q.comp_mask, &answer, 1, &err);
  if (n < 0) {
    std::fprintf(stderr, "query: %s\n", err.message);
    return 1;
  }
  ibv_path_data installed = rdmaqos::rdmacm::path_data(answer);
  std::printf(
      "{\"qos_supported\":%d,\"comp_mask\":%llu,\"count\":%d,\"sl\":%d,\"qos_class\":%d,"
      "\"mtu\":%d,\"flags\":%u}\n",
      qos, static_cast<unsigned long long>(q.comp_mask), n, ntohs(answer.qosclass_sl) & 0xF,
      ntohs(answer.qosclass_sl) >> 4, answer.mtu & 0x3F, installed.flags);
  rdma_qos_sa_close(client);
  return 0;
}
