// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Transport over libibumad. Responses can be longer than one MAD (kernel RMPP reassembly), so
// the receive buffer grows when umad_recv reports ENOSPC.
#include <fmt/format.h>
#include <infiniband/umad.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "rdma-qos/sa-client/mad.h"
#include "rdma-qos/sa-client/transport.h"
#include "rdma-qos/sa-client/umad_port.h"

namespace rdmaqos::sa {
namespace {

constexpr unsigned kPortStateActive = 4;
constexpr size_t kInitialReceiveBytes = 64 * 1024;
// Receives that may fail in a row before the port counts as unusable.
constexpr int kMaxFailedReceivesInARow = 100;

// Errors that say the port's file or device is gone, not that one MAD was lost.
bool port_gone(int err) {
  return err == ENODEV || err == ENXIO || err == EBADF || err == EPIPE;
}

Error umad_error(const std::string& what, int err) {
  return make_error(ErrorCode::kTransport, fmt::format("{}: {}", what, std::strerror(err)));
}

Result<PortAttributes> read_port(const std::string& ca, int portnum) {
  umad_port_t port{};
  int rc = umad_get_port(ca.empty() ? nullptr : ca.c_str(), portnum, &port);
  if (rc < 0)
    return umad_error(fmt::format("umad_get_port({}, {})", ca.empty() ? "<first>" : ca, portnum),
                      -rc);
  PortAttributes a;
  a.ca = port.ca_name;
  a.port = port.portnum;
  a.lid = static_cast<uint16_t>(port.base_lid);
  a.sm_lid = static_cast<uint16_t>(port.sm_lid);
  a.sm_sl = static_cast<uint8_t>(port.sm_sl);
  a.gid = make_gid(be64toh(port.gid_prefix), be64toh(port.port_guid));
  // sysfs says "InfiniBand"; umad2sim says "IB".
  bool usable = port.state == kPortStateActive &&
                (port.link_layer[0] == 0 || std::strcmp(port.link_layer, "InfiniBand") == 0 ||
                 std::strcmp(port.link_layer, "IB") == 0);
  umad_release_port(&port);
  if (!usable)
    return make_error(ErrorCode::kTransport,
                      fmt::format("{} port {} is not an active InfiniBand port", a.ca, a.port));
  return a;
}

// The first CA/port that is an active IB port when the caller did not name one.
Result<PortAttributes> pick_port(const UmadOptions& o) {
  if (!o.ca.empty() && o.port != 0) return read_port(o.ca, o.port);
  std::vector<std::string> cas;
  if (!o.ca.empty()) {
    cas.push_back(o.ca);
  } else {
    char names[32][UMAD_CA_NAME_LEN];
    int n = umad_get_cas_names(names, 32);
    if (n < 0) return umad_error("umad_get_cas_names", -n);
    for (int i = 0; i < n; ++i) cas.emplace_back(names[i]);
  }
  std::string tried;
  for (const auto& ca : cas) {
    umad_ca_t info{};
    if (umad_get_ca(ca.c_str(), &info) < 0) continue;
    int ports = info.numports;
    umad_release_ca(&info);
    for (int p = 1; p <= ports; ++p) {
      auto a = read_port(ca, p);
      if (a) return a;
      tried += fmt::format(" {}/{}", ca, p);
    }
  }
  return make_error(ErrorCode::kTransport, fmt::format("no active InfiniBand port (tried:{})",
                                                       tried.empty() ? " none" : tried));
}

class UmadTransport final : public Transport {
 public:
  UmadTransport(PortAttributes port, int portid, int agent)
      : port_(std::move(port)), portid_(portid), agent_(agent) {
    buffer_.resize(umad_size() + kInitialReceiveBytes);
  }
  ~UmadTransport() override {
    umad_unregister(portid_, agent_);
    umad_close_port(portid_);
  }

  Result<Ok> send(std::span<const uint8_t> mad, uint16_t dlid, uint8_t sl,
                  std::chrono::milliseconds response_timeout) override {
    send_buffer_.assign(umad_size() + mad.size(), 0);
    void* umad = send_buffer_.data();
    std::memcpy(umad_get_mad(umad), mad.data(), mad.size());
    umad_set_addr(umad, dlid, static_cast<int>(kSaQp), sl, static_cast<int>(kSaQkey));
    int rc = umad_send(portid_, agent_, umad, static_cast<int>(mad.size()),
                       static_cast<int>(response_timeout.count()), 0);
    if (rc < 0) return umad_error(fmt::format("umad_send to LID {}", dlid), -rc);
    return Ok{};
  }

  Result<std::optional<ReceivedMad>> receive(std::chrono::milliseconds timeout) override {
    for (;;) {
      int length = static_cast<int>(buffer_.size() - umad_size());
      errno = 0;
      int rc = umad_recv(portid_, buffer_.data(), &length, static_cast<int>(timeout.count()));
      if (rc == -ETIMEDOUT || rc == -EAGAIN) return std::optional<ReceivedMad>{};
      if (rc == -ENOSPC && length > 0) {
        // The MAD waits in the kernel: grow and read it again.
        buffer_.resize(umad_size() + static_cast<size_t>(length));
        timeout = std::chrono::milliseconds(0);
        continue;
      }
      if (rc == -EINTR) return std::optional<ReceivedMad>{};
      if (rc < 0) {
        // libibumad returns -EIO for a failed poll or read, with the reason in errno.
        const int err = rc == -EIO && errno != 0 ? errno : -rc;
        if (port_gone(err) || ++failed_receives_in_a_row_ >= kMaxFailedReceivesInARow)
          return umad_error("umad_recv", err);
        // One read failed: the MAD it held is lost, so the request it answered times out (and
        // is sent again if it has retries left); every other request goes on. A short pause so
        // that a run of failures does not spin.
        std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(1)));
        return std::optional<ReceivedMad>{};
      }
      failed_receives_in_a_row_ = 0;
      ReceivedMad r;
      r.status = umad_status(buffer_.data());
      const auto* mad = static_cast<const uint8_t*>(umad_get_mad(buffer_.data()));
      r.bytes.assign(mad, mad + length);
      return std::optional<ReceivedMad>(std::move(r));
    }
  }

  const PortAttributes& port() const override { return port_; }
  Result<PortAttributes> refresh_port() override {
    auto a = read_port(port_.ca, port_.port);
    if (a) port_ = *a;
    return a;
  }

 private:
  PortAttributes port_;
  int portid_;
  int agent_;
  std::vector<uint8_t> buffer_;
  std::vector<uint8_t> send_buffer_;
  int failed_receives_in_a_row_ = 0;
};

}  // namespace

Result<std::unique_ptr<Transport>> open_umad_transport(const UmadOptions& options) {
  static std::once_flag init_once;
  static int init_rc = 0;
  std::call_once(init_once, [] { init_rc = umad_init(); });
  if (init_rc < 0) return umad_error("umad_init", -init_rc);
  auto port = pick_port(options);
  if (!port) return port.error();
  // Close-on-exec: a host program's children must not inherit the port and its agent.
  auto opened = open_umad_port(port->ca, port->port);
  if (!opened) return opened.error();
  int portid = *opened;
  // rmpp_version 1: the kernel segments RMPP-active sends and reassembles RMPP responses.
  int agent = umad_register(portid, kSaClass, kSaClassVersion, rmpp::kVersion, nullptr);
  if (agent < 0) {
    umad_close_port(portid);
    return umad_error("umad_register(SA class 0x03)", -agent);
  }
  return std::unique_ptr<Transport>(new UmadTransport(*port, portid, agent));
}

}  // namespace rdmaqos::sa
