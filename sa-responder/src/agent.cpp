// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// umad plumbing of the SA agent: open the port (and its issm device), register for every SA
// request method, receive, and send each answer back to the requester's QP.
#include "rdma-qos/sa-responder/agent.h"

#include <fcntl.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <vector>

#include "rdma-qos/sa-client/umad_port.h"

namespace rdmaqos::sad {
namespace {

rdmaqos::Error umad_error(const std::string& what, int err) {
  return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                             fmt::format("{}: {}", what, std::strerror(err)));
}

}  // namespace

namespace {

bool under_umad2sim(std::string_view ld_preload, std::string_view maps) {
  constexpr std::string_view kUmad2sim = "umad2sim";
  return ld_preload.find(kUmad2sim) != std::string_view::npos ||
         maps.find(kUmad2sim) != std::string_view::npos;
}

// The same for this process: its LD_PRELOAD and /proc/self/maps.
bool under_umad2sim() {
  const char* preload = std::getenv("LD_PRELOAD");
  std::ifstream in("/proc/self/maps");
  std::string maps(std::istreambuf_iterator<char>(in), {});
  return under_umad2sim(preload != nullptr ? preload : "", maps);
}

}  // namespace

bool use_rmpp(RmppMode mode, std::string_view ld_preload, std::string_view maps) {
  switch (mode) {
    case RmppMode::kOn: return true;
    case RmppMode::kOff: return false;
    case RmppMode::kAuto: break;
  }
  return !under_umad2sim(ld_preload, maps);
}

bool use_rmpp(RmppMode mode) {
  return mode == RmppMode::kAuto ? !under_umad2sim() : mode == RmppMode::kOn;
}

bool hold_issm(IssmMode mode, std::string_view ld_preload, std::string_view maps) {
  switch (mode) {
    case IssmMode::kOn: return true;
    case IssmMode::kOff: return false;
    case IssmMode::kAuto: break;
  }
  return under_umad2sim(ld_preload, maps);
}

bool hold_issm(IssmMode mode) {
  return mode == IssmMode::kAuto ? under_umad2sim() : mode == IssmMode::kOn;
}

std::vector<uint8_t> encode_answer(sa::SaMad answer, bool rmpp, size_t max_data) {
  if (!rmpp && answer.data.size() > max_data) {
    // No RMPP here: keep the whole records that fit in one MAD.
    size_t record = answer.sa.attr_offset != 0 ? size_t{answer.sa.attr_offset} * 8 : max_data;
    answer.data.resize(max_data / record * record);
  }
  const uint8_t method = answer.mad.method;
  // An error response keeps the RMPP header of its request, as OpenSM's (osm_sa_send_error).
  const bool table = method == sa::method::kGetTableResp || method == sa::method::kGetMultiResp;
  if (table && answer.mad.status == 0) {
    // Table answers are RMPP payloads even in one MAD: clients count the records from the
    // PayloadLength, not from the MAD's size.
    answer.rmpp.version = sa::rmpp::kVersion;
    answer.rmpp.type = sa::rmpp::kTypeData;
    answer.rmpp.flags = sa::rmpp::kFlagActive | sa::rmpp::kFlagFirst | sa::rmpp::kFlagLast;
    answer.rmpp.segment = 1;
    answer.rmpp.payload_length = static_cast<uint32_t>(sa::kSaHeaderSize + answer.data.size());
    if (rmpp) {
      // The kernel numbers the segments and sets FIRST, LAST and PayloadLength per segment.
      answer.rmpp.flags = sa::rmpp::kFlagActive;
      answer.rmpp.segment = 0;
      answer.rmpp.payload_length = 0;
    }
  }
  std::vector<uint8_t> bytes = sa::encode_sa_mad(answer);
  if (answer.rmpp.active()) {
    // As long as its payload: the kernel cuts an RMPP send into segments by this length; and as
    // OpenSM does, since without RMPP reassembly (umad2sim) clients count the records in what
    // they receive.
    bytes.resize(sa::kSaDataOffset + answer.data.size());
  }
  return bytes;
}

namespace {

// The port of a real device (or umad2sim's) through libibumad, with the agent registered on it;
// SaAgent::open fills it in.
struct UmadPort final : public MadPort {
  ~UmadPort() override {
    if (agent >= 0) umad_unregister(portid, agent);
    if (portid >= 0) umad_close_port(portid);
    if (issm_fd >= 0) ::close(issm_fd);
  }

  int recv(std::span<uint8_t> buffer, int& length, std::chrono::milliseconds timeout) override {
    length = static_cast<int>(buffer.size() - umad_size());
    errno = 0;
    int rc = umad_recv(portid, buffer.data(), &length, static_cast<int>(timeout.count()));
    if (rc >= 0) return 0;
    // A failed poll comes back as -EIO with the reason in errno (EINTR for a signal).
    return errno != 0 ? -errno : rc;
  }

  int send(std::span<uint8_t> buffer, int length, int response_timeout_ms) override {
    errno = 0;
    // A request of ours is sent once more when its response is late.
    int rc = umad_send(portid, agent, buffer.data(), length, response_timeout_ms,
                       response_timeout_ms > 0 ? 1 : 0);
    if (rc >= 0) return 0;
    // umad_send returns -EIO whatever the kernel refused; errno says what it was (EINVAL for a
    // TID still queued, EIO once the device is gone).
    return errno != 0 ? -errno : rc;
  }

  bool alive() override {
    // The kernel flags the file POLLERR once the device went away (its agents are dead).
    // umad2sim's poll never flags its ports.
    pollfd p{portid, POLLIN, 0};
    if (::poll(&p, 1, 0) < 0) return true;  // EINTR, ENOMEM: nothing said about the device
    return (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
  }

  int portid = -1;
  int agent = -1;
  int issm_fd = -1;
};

// Errors that say the port's file or device is gone, not that one MAD failed.
bool port_gone(int err) {
  return err == ENODEV || err == ENXIO || err == EBADF || err == EPIPE;
}

}  // namespace

rdmaqos::Result<std::unique_ptr<SaAgent>> SaAgent::open(const AgentOptions& options) {
  static std::once_flag init_once;
  static int init_rc = 0;
  std::call_once(init_once, [] { init_rc = umad_init(); });
  if (init_rc < 0) return umad_error("umad_init", -init_rc);

  umad_port_t port{};
  const char* ca = options.ca.empty() ? nullptr : options.ca.c_str();
  int rc = umad_get_port(ca, options.port, &port);
  if (rc < 0) return umad_error("umad_get_port", -rc);
  const auto lid = static_cast<uint16_t>(port.base_lid);
  const auto sm_lid = static_cast<uint16_t>(port.sm_lid);
  const auto sm_sl = static_cast<uint8_t>(port.sm_sl);
  std::string ca_name = port.ca_name;
  int portnum = port.portnum;
  umad_release_port(&port);

  auto umad = std::make_unique<UmadPort>();
  // Close-on-exec, as the issm device below: the re-discovery children must not inherit the
  // agent, nor hold IsSM after the daemon is gone.
  auto opened = sa::open_umad_port(ca_name, portnum);
  if (!opened) return opened.error();
  umad->portid = *opened;
  // After the umad port: umad2sim ties the issm device to the port's open client.
  if (options.issm) {
    char path[256];
    rc = umad_get_issm_path(ca_name.c_str(), portnum, path, sizeof(path));
    if (rc < 0) return umad_error("umad_get_issm_path", -rc);
    umad->issm_fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (umad->issm_fd < 0) return umad_error(fmt::format("open {}", path), errno);
  }
  // Every request method (the R bit clear): the SA answers unsupported ones with a status.
  long method_mask[16 / sizeof(long)] = {};
  for (int m = 1; m < 0x80; ++m) {
    method_mask[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long)));
  }
  umad->agent = umad_register(umad->portid, sa::kSaClass, sa::kSaClassVersion,
                              options.rmpp ? sa::rmpp::kVersion : 0, method_mask);
  if (umad->agent < 0) return umad_error("umad_register(SA class 0x03)", -umad->agent);

  auto agent = std::make_unique<SaAgent>(std::move(umad), options);
  agent->lid_ = lid;
  agent->sm_lid_ = sm_lid;
  agent->sm_sl_ = sm_sl;
  agent->ca_ = ca_name;
  agent->port_ = portnum;
  return agent;
}

SaAgent::SaAgent(std::unique_ptr<MadPort> port, const AgentOptions& options)
    : mad_port_(std::move(port)), max_data_(options.max_data), rmpp_(options.rmpp) {}

SaAgent::~SaAgent() = default;

rdmaqos::Result<Served> SaAgent::serve_one(const Responder& responder,
                                           std::chrono::milliseconds timeout) {
  // Kept between calls: a fresh buffer per MAD showed up in the profile under load.
  std::vector<uint8_t>& buffer = recv_buffer_;
  if (buffer.size() < umad_size() + sa::kMadSize * 4) buffer.resize(umad_size() + sa::kMadSize * 4);
  int length = 0;
  int rc = 0;
  for (;;) {
    rc = mad_port_->recv(buffer, length, timeout);
    // An RMPP-reassembled request longer than the buffer waits in the kernel: grow and read it
    // again (never a reason to stop answering).
    if (rc != -ENOSPC || length <= 0) break;
    buffer.resize(umad_size() + static_cast<size_t>(length));
    timeout = std::chrono::milliseconds(0);
  }
  // A zero timeout reads without polling: nothing there is EAGAIN.
  if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EWOULDBLOCK || rc == -EINTR) {
    receive_errors_in_a_row_ = 0;
    return Served{};
  }
  if (rc < 0) {
    std::string what = fmt::format("umad_recv: {}", std::strerror(-rc));
    if (port_gone(-rc) || !mad_port_->alive()) {
      return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, what + ": the port is gone");
    }
    if (++receive_errors_in_a_row_ >= kMaxReceiveErrorsInARow) {
      return rdmaqos::make_error(
          rdmaqos::ErrorCode::kTransport,
          fmt::format("{} ({} receives in a row failed)", what, receive_errors_in_a_row_));
    }
    return Served{Served::Kind::kReceiveError,
                  rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, std::move(what))};
  }
  receive_errors_in_a_row_ = 0;
  if (int status = umad_status(buffer.data()); status != 0) {
    // A send of ours the MAD layer gave up on, returned to us: a request of ours that got no
    // response (the only sends with a timeout), or an answer it could not deliver.
    const auto* sent = static_cast<const uint8_t*>(umad_get_mad(buffer.data()));
    if (length > 3 && (sent[3] & sa::method::kResponseBit) == 0) {
      return Served{Served::Kind::kUnanswered,
                    rdmaqos::make_error(rdmaqos::ErrorCode::kTimeout,
                                        fmt::format("a request of ours got no response: {}",
                                                    std::strerror(status)))};
    }
    return Served{Served::Kind::kSendError,
                  rdmaqos::make_error(rdmaqos::ErrorCode::kTransport,
                                      fmt::format("umad send status: {}", std::strerror(status)))};
  }
  ib_mad_addr_t* addr = umad_get_mad_addr(buffer.data());
  const auto* mad = static_cast<const uint8_t*>(umad_get_mad(buffer.data()));
  auto decoded =
      sa::decode_sa_mad(std::span<const uint8_t>(mad, static_cast<size_t>(std::max(length, 0))));
  if (!decoded) {
    undecodable_.fetch_add(1, std::memory_order_relaxed);
    return Served{Served::Kind::kHandled, std::nullopt};
  }
  const ReplyAddress reply{ntohs(addr->lid), ntohl(addr->qpn), addr->sl, addr->pkey_index};
  Request request{std::move(*decoded), reply.lid, reply};
  std::optional<sa::SaMad> answer = responder(request);
  if (!answer) return Served{Served::Kind::kHandled, std::nullopt};
  const size_t bytes = build(reply, std::move(*answer), send_buffer_);
  return send_built(reply.lid, send_buffer_, bytes);
}

rdmaqos::Result<Served> SaAgent::send(const Request& request, sa::SaMad answer) {
  std::vector<uint8_t> out;
  const size_t length = build(request.reply, std::move(answer), out);
  return send_built(request.reply.lid, out, length);
}

rdmaqos::Result<Served> SaAgent::send_request(const ReplyAddress& to, sa::SaMad request,
                                              std::chrono::milliseconds response_timeout) {
  std::vector<uint8_t> out;
  const size_t length = build(to, std::move(request), out);
  return send_built(to.lid, out, length, static_cast<int>(response_timeout.count()));
}

size_t SaAgent::build(const ReplyAddress& to, sa::SaMad answer, std::vector<uint8_t>& out) const {
  std::vector<uint8_t> bytes = encode_answer(std::move(answer), rmpp_, max_data_);
  // Zeros past the MAD too: umad2sim reads beyond the length given to umad_send (the last 24
  // bytes of a 256-byte MAD arrived as heap bytes from past a buffer of exactly that size).
  out.assign(umad_size() + bytes.size() + sa::kMadSize, 0);
  std::memcpy(umad_get_mad(out.data()), bytes.data(), bytes.size());
  umad_set_addr(out.data(), to.lid, static_cast<int>(to.qpn), to.sl, static_cast<int>(sa::kSaQkey));
  umad_set_pkey(out.data(), to.pkey_index);
  return bytes.size();
}

rdmaqos::Result<Served> SaAgent::send_built(uint16_t lid, std::vector<uint8_t>& out, size_t length,
                                            int response_timeout_ms) {
  int rc = 0;
  {
    std::lock_guard lock(send_mutex_);
    rc = mad_port_->send(out, static_cast<int>(length), response_timeout_ms);
  }
  if (rc < 0) {
    std::string what = fmt::format("umad_send to LID {}: {}", lid, std::strerror(-rc));
    if (port_gone(-rc) || !mad_port_->alive()) {
      return rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, what + ": the port is gone");
    }
    return Served{Served::Kind::kSendError,
                  rdmaqos::make_error(rdmaqos::ErrorCode::kTransport, std::move(what))};
  }
  return Served{Served::Kind::kHandled, std::nullopt};
}

std::optional<PortLids> read_port_lids(const std::string& ca, int port) {
  constexpr unsigned kPortStateActive = 4;
  umad_port_t p{};
  if (umad_get_port(ca.c_str(), port, &p) < 0) return std::nullopt;
  std::optional<PortLids> out;
  if (p.state == kPortStateActive && p.base_lid != 0) {
    out = PortLids{static_cast<uint16_t>(p.base_lid), static_cast<uint16_t>(p.sm_lid)};
  }
  umad_release_port(&p);
  return out;
}

}  // namespace rdmaqos::sad
