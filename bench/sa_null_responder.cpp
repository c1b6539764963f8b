// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sa-null-responder: the transport limit for the SA throughput benchmark. Runs the same SA
// agent as rdma-qos-sad (umad, issm, class 0x03 responder) but answers every PathRecord Get or
// GetTable with one canned record (the request's LIDs and GIDs copied in, nothing looked up), and
// ClassPortInfo as rdma-qos-sad does so saquery -c can tell it is up. No fabric model, no
// policy: what is left is the cost of receiving and sending a MAD.
#include <signal.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "rdma-qos/common/cli_number.h"
#include "rdma-qos/sa-client/class_port_info.h"
#include "rdma-qos/sa-client/path_record.h"
#include "rdma-qos/sa-responder/agent.h"
#include "rdma-qos/sa-responder/answer.h"
#include "rdma-qos/sa-responder/discovery.h"

namespace {

namespace sa = rdmaqos::sa;

volatile sig_atomic_t g_stop = 0;

void on_signal(int) {
  g_stop = 1;
}

sa::SaMad response(const sa::SaMad& request, uint16_t status) {
  sa::SaMad resp;
  resp.mad = request.mad;
  resp.mad.method = static_cast<uint8_t>(request.mad.method | sa::method::kResponseBit);
  resp.mad.status = status;
  resp.sa = request.sa;
  resp.sa.attr_offset = 0;
  return resp;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"SA responder answering one canned PathRecord (benchmark transport limit)",
               "sa-null-responder"};
  rdmaqos::sad::AgentOptions options;
  app.add_option("--ca", options.ca, "CA to run at (default: the first)");
  rdmaqos::add_number(app, "--port", options.port, "port of the CA (default: the first active)");
  CLI11_PARSE(app, argc, argv);

  struct sigaction act {};
  act.sa_handler = on_signal;
  sigemptyset(&act.sa_mask);
  sigaction(SIGTERM, &act, nullptr);
  sigaction(SIGINT, &act, nullptr);

  // Under umad2sim a process that opens the SA agent without having discovered the fabric
  // crashes in the simulator client's receive thread (observed); rdma-qos-sad discovers first,
  // so this does the same (the model is not used).
  rdmaqos::sad::DiscoveryOptions discovery;
  discovery.ca = options.ca;
  discovery.port = options.port;
  rdmaqos::sad::discover_fabric(discovery).ignore_error();
  auto agent = rdmaqos::sad::SaAgent::open(options);
  if (!agent) {
    std::cerr << "sa-null-responder: " << agent.error().message << "\n";
    return 1;
  }
  sa::PathRecord canned;
  canned.sl = 0;
  canned.mtu_selector = sa::Selector::kExactly;
  canned.mtu = 4;
  canned.rate_selector = sa::Selector::kExactly;
  canned.rate = 7;
  canned.packet_life_selector = sa::Selector::kExactly;
  canned.packet_life = 18;
  canned.pkey = 0xFFFF;
  canned.reversible = true;
  auto encoded_info = sa::encode_class_port_info(rdmaqos::sad::class_port_info());
  if (!encoded_info) return 1;
  const std::vector<uint8_t> class_port_info = *encoded_info;

  auto responder = [&](const rdmaqos::sad::Request& request) -> std::optional<sa::SaMad> {
    const sa::SaMad& mad = request.mad;
    if ((mad.mad.method & sa::method::kResponseBit) != 0) return std::nullopt;
    const bool get = mad.mad.method == sa::method::kGet;
    const bool table = mad.mad.method == sa::method::kGetTable;
    sa::SaMad resp = response(mad, 0);
    if (get && mad.mad.attr_id == sa::attr::kClassPortInfo) {
      resp.data = class_port_info;
      return resp;
    }
    if (!(get || table) || mad.mad.attr_id != sa::attr::kPathRecord ||
        mad.data.size() < sa::kPathRecordSize) {
      return response(mad, rdmaqos::sad::mad_status::kUnsupportedMethodAttr);
    }
    if (table) resp.sa.attr_offset = sa::kPathRecordSize / 8;
    // The request's ends copied into the canned record, straight from the wire layout.
    auto bytes = sa::encode_path_record(canned);
    if (!bytes) return std::nullopt;
    std::copy(mad.data.begin() + 8, mad.data.begin() + 44, bytes->begin() + 8);  // DGID..SLID
    resp.data.assign(bytes->begin(), bytes->end());
    return resp;
  };
  std::cerr << "sa-null-responder: answering at LID " << (*agent)->lid() << std::endl;
  while (!g_stop) {
    auto served = (*agent)->serve_one(responder, std::chrono::milliseconds(200));
    if (!served) {
      std::cerr << "sa-null-responder: " << served.error().message << "\n";
      return 1;
    }
  }
  return 0;
}
