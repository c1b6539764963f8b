// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-lsd's engine: listens for the kernel's RESOLVE requests on the local-service netlink
// group, asks the SA of the request's port (sa-client, Service-ID and QoS-Class included) on
// that port's worker thread with many queries in flight (new ones join the window while slow ones
// wait), and answers every request, with F_ERR when it cannot, before a deadline well inside the
// kernel's timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rdma-qos/common/log.h"
#include "rdma-qos/common/result.h"
#include "rdma-qos/kmod-shim/lsd_counters.h"
#include "rdma-qos/sa-client/client.h"

namespace rdmaqos::kmod {

// The daemons' one level vocabulary (syslog priorities), rdma-qos/common/log.h.
using common::Priority;
using LogSink = std::function<void(Priority, const std::string&)>;

struct LsdOptions {
  // Per-attempt timeout, retries, window. The umad port here is not used: each request
  // is answered through the device and port it names, one SA client per port.
  sa::ClientOptions sa;
  // The SA's LID for one port (the sa_lid knob, per port); nullopt, or unset: sa.sa_lid, which
  // by default is the port's SM LID.
  std::function<std::optional<uint16_t>(const std::string& device, int port)> sa_lid_of;
  // Netlink family and the peer that plays the kernel: NETLINK_RDMA and port 0 in production;
  // tests use NETLINK_USERSOCK and the port of their simulated kernel.
  int netlink_family = 20;
  uint32_t kernel_port = 0;
  int inherited_fd = -1;  // a socket passed by systemd (ListenNetlink=rdma 4); -1: open one
  std::chrono::milliseconds responder_check{std::chrono::seconds(30)};
  // The network namespace files compared at start (tests point them elsewhere).
  std::string self_netns = "/proc/self/ns/net";
  std::string initial_netns = "/proc/1/ns/net";
  // How often the SA worker looks for new requests while its window waits on slow ones.
  std::chrono::milliseconds intake_poll{5};
  // Opens the SA client of one umad port; default: sa::Client::open(sa) on that port. Tests
  // pass a fake transport.
  std::function<rdmaqos::Result<std::unique_ptr<sa::Client>>(const sa::UmadOptions& port)>
      open_client;
  // Where requests and answers are counted (kept by the caller across reloads); none: not
  // counted.
  std::shared_ptr<LsdCounters> counters;
  // --dump-netlink: each datagram from the kernel is also written to a file in this directory;
  // empty: none.
  std::string netlink_dump_dir;
};

// How long the daemon lets one request take before answering F_ERR: every SA attempt, plus a
// little; and the timeout it asks the kernel to use (SET_TIMEOUT): that budget plus a margin,
// so the F_ERR arrives while the kernel still waits for it.
std::chrono::milliseconds answer_budget(const LsdOptions& options);
std::chrono::milliseconds kernel_timeout(const LsdOptions& options);

// The kernel's timeout until a responder sets one (sa_query.c IB_SA_LOCAL_SVC_TIMEOUT_DEFAULT).
constexpr std::chrono::milliseconds kKernelDefaultTimeout{2000};
// The budget once the kernel refused SET_TIMEOUT (and so kept its default): answer_budget,
// capped so that the F_ERR still arrives 500 ms before the kernel's default timeout.
std::chrono::milliseconds refused_answer_budget(const LsdOptions& options);

class LocalServiceDaemon {
 public:
  // Opens (or adopts) the netlink socket and joins the group. The SA port is opened by the
  // worker, again after failures, so the daemon starts (and answers F_ERR) without one.
  static rdmaqos::Result<std::unique_ptr<LocalServiceDaemon>> create(LsdOptions options,
                                                                     LogSink log);
  ~LocalServiceDaemon();
  LocalServiceDaemon(const LocalServiceDaemon&) = delete;
  LocalServiceDaemon& operator=(const LocalServiceDaemon&) = delete;

  // Serves until stop(); returns 0, or 1 after a fatal socket error.
  int run();
  // Async-signal-safe.
  void stop();

  uint32_t local_port() const;

 private:
  struct Impl;
  explicit LocalServiceDaemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmaqos::kmod
