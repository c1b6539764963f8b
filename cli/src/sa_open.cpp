// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Opening an SA client with the per-port sa_lid knob (see sa_open.h).
#include "sa_open.h"

namespace rdmaqos::cli {

rdmaqos::Result<std::unique_ptr<sa::Client>> open_sa_client(sa::ClientOptions options,
                                                            const config::PortValues& lids) {
  if (options.sa_lid || lids.entries.empty()) return sa::Client::open(options);
  // Which port is opened is known only once it is (no --ca or --port: the first active one);
  // opening a umad port sends nothing, so opening it again with its LID costs no query.
  auto client = sa::Client::open(options);
  if (!client) return client;
  const auto& port = (*client)->port();
  auto lid = config::port_lid_of(lids, port.ca, static_cast<uint32_t>(port.port));
  if (!lid) return client;
  options.port.ca = port.ca;
  options.port.port = port.port;
  options.sa_lid = lid;
  client->reset();
  return sa::Client::open(options);
}

}  // namespace rdmaqos::cli
