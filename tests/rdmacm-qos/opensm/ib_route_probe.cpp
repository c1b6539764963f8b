// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Runs at an ibsim node (umad2sim preloaded): the rdma_cm layer's InfiniBand PathRecord query
// (build_path_query) sent through sa-client by the preload module's route sequence, the answer
// printed as one line of JSON.
//   ib_route_probe [--mpr] SGUID DGUID SERVICE_ID [QOS_CLASS]
// --mpr: resolve_ib_route with MultiPathRecord (as RDMA_QOS_MPR=1 does).
#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ib_route_sequence.h"
#include "rdma-qos/rdmacm-qos/ib_route.h"
#include "rdma-qos/sa-client/shared_client.h"

namespace {

namespace sa = rdmaqos::sa;
using rdmaqos::rdmacm::PathAnswer;

// The sequence the preload module runs, with rdma_set_option replaced by a capture.
class ProbeHost final : public rdmaqos::preload::IbRouteHost {
 public:
  explicit ProbeHost(sa::SharedClient& client) : client_(client) {}
  rdmaqos::Result<bool> sa_qos_supported() override {
    auto r = client_.qos_supported(std::nullopt);
    qos = r ? (*r ? 1 : 0) : -1;
    return r;
  }
  PathAnswer path_records(const sa::PathQuery& q) override {
    comp_mask = q.comp_mask;
    return counted(client_.path_records(q, std::nullopt), "query");
  }
  rdmaqos::Result<bool> sa_mpr_supported() override {
    return client_.multipath_supported(std::nullopt);
  }
  PathAnswer multipath_records(const sa::PathQuery& q) override {
    comp_mask = q.comp_mask;
    return counted(client_.multipath_records(q, std::nullopt), "multipath query");
  }
  int set_path(ibv_path_data& data, const sa::PathRecord&) override {
    installed = data;
    return 0;
  }
  int consume_route_resolved() override { return 0; }

  int qos = -1, count = -1;
  uint64_t comp_mask = 0;
  ibv_path_data installed{};

 private:
  PathAnswer counted(PathAnswer a, const char* what) {
    count = a ? static_cast<int>(a->size()) : -1;
    if (!a) std::fprintf(stderr, "%s: %s\n", what, a.error().message.c_str());
    return a;
  }
  sa::SharedClient& client_;
};

}  // namespace

int main(int argc, char** argv) {
  bool mpr = argc > 1 && std::string(argv[1]) == "--mpr";
  if (mpr) {
    --argc;
    ++argv;
  }
  if (argc < 4) return 2;
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
  ProbeHost host(**opened);
  auto r = rdmaqos::preload::resolve_ib_route(in, false, host, mpr);
  if (!r.installed) {
    std::fprintf(stderr, "not installed: %s\n", r.installed.error().message.c_str());
    return 1;
  }
  const ibv_path_record& p = host.installed.path;
  std::printf(
      "{\"qos_supported\":%d,\"comp_mask\":%llu,\"count\":%d,\"sl\":%d,\"qos_class\":%d,"
      "\"mtu\":%d,\"flags\":%u,\"multipath\":%s,\"note\":\"%s\"}\n",
      host.qos, static_cast<unsigned long long>(host.comp_mask), host.count,
      ntohs(p.qosclass_sl) & 0xF, ntohs(p.qosclass_sl) >> 4, p.mtu & 0x3F, host.installed.flags,
      r.multipath ? "true" : "false",
      r.multipath_unused ? r.multipath_unused->message.c_str() : "");
  return 0;
}
