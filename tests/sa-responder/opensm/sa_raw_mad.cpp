// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sa-raw-mad: sends SA MADs, given as hex bytes (arguments, or lines of a --from file), from this
// port to the SM LID through libibumad, one after the other, and prints each answer as one JSON
// line, in the order given. The differential tests send the same bytes to OpenSM and to
// rdma-qos-sad: requests no SA client builds (half a Service-ID, an invalid rate, a
// MultiPathRecord without RMPP, unknown attributes ...) and compare what comes back.
//
// Output: {"answered": false} after the timeout, or {"answered": true, "method", "status",
// "attr_id", "attr_offset", "comp_mask", "rmpp_active", "data" (the SA data in hex up to MAD
// byte 232, trailing zero bytes cut)}. The TID is left out: the umad layer owns its high half. Of
// the RMPP header only the Active flag is shown: under umad2sim OpenSM sets that flag and leaves
// the rest of the header to a kernel RMPP layer that is not there, where rdma-qos-sad writes a
// whole one-segment header (version 1, DATA, first and last, its payload length).
#include <infiniband/umad.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "rdma-qos/common/cli_number.h"

namespace {

constexpr size_t kMad = 256;
constexpr size_t kComparedBytes = 232;
constexpr uint8_t kSaClass = 0x03;
constexpr uint32_t kSaQkey = 0x80010000;

std::optional<std::vector<uint8_t>> from_hex(const std::string& text) {
  std::vector<uint8_t> out;
  std::string digits;
  for (char c : text) {
    if (std::isxdigit(static_cast<unsigned char>(c))) digits.push_back(c);
  }
  if (digits.size() % 2 != 0 || digits.size() / 2 > kMad) return std::nullopt;
  for (size_t i = 0; i < digits.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  out.resize(kMad, 0);
  return out;
}

std::string to_hex(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
  return s;
}

uint64_t get_be(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

// Sends `mad` and waits for the answer with its TID: the answer as JSON, {"answered": false}
// after the timeout; nullopt when the send failed.
std::optional<nlohmann::json> exchange(int portid, int agent, int sm_lid,
                                       const std::vector<uint8_t>& mad, int timeout_ms) {
  std::vector<uint8_t> send_buf(umad_size() + kMad, 0);
  std::memcpy(umad_get_mad(send_buf.data()), mad.data(), kMad);
  umad_set_addr(send_buf.data(), sm_lid, 1, 0, static_cast<int>(kSaQkey));
  if (umad_send(portid, agent, send_buf.data(), static_cast<int>(kMad), 0, 0) < 0) {
    std::cerr << "sa-raw-mad: umad_send failed\n";
    return std::nullopt;
  }
  const uint32_t tid_low = static_cast<uint32_t>(get_be(mad.data() + 12, 4));
  std::vector<uint8_t> recv_buf(umad_size() + 16 * kMad, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  nlohmann::json out = {{"answered", false}};
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) break;
    int length = static_cast<int>(recv_buf.size() - umad_size());
    if (umad_recv(portid, recv_buf.data(), &length, static_cast<int>(left)) < 0) break;
    const uint8_t* m = static_cast<const uint8_t*>(umad_get_mad(recv_buf.data()));
    if (length < 56 || static_cast<uint32_t>(get_be(m + 12, 4)) != tid_low) continue;
    // One MAD, less its last 24 bytes: on ibsim those arrive as undefined bytes in answers
    // from rdma-qos-sad, which sends them as zeros (seen with strace on its socket to ibsim),
    // and as zeros from OpenSM. That leaves two whole 64-byte records of a table answer and
    // the first 48 bytes of a third.
    size_t end = std::min(static_cast<size_t>(length), kComparedBytes);
    while (end > 56 && m[end - 1] == 0) --end;
    out = {{"answered", true},
           {"method", fmt::format("{:#04x}", m[3])},
           {"status", fmt::format("{:#06x}", get_be(m + 4, 2))},
           {"attr_id", fmt::format("{:#06x}", get_be(m + 16, 2))},
           {"attr_offset", get_be(m + 44, 2)},  // SA header: SM_Key at 36, AttributeOffset at 44
           {"comp_mask", fmt::format("{:#x}", get_be(m + 48, 8))},
           {"rmpp_active", (m[26] & 0x1) != 0},
           {"data", to_hex(m + 56, end - 56)}};
    break;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Send SA MADs (hex) to the SM LID and print each answer as JSON"};
  std::vector<std::string> hexes;
  std::string from;
  int timeout_ms = 1500;
  app.add_option("mad", hexes, "each MAD's bytes in hex (up to 256; zero-filled)");
  app.add_option("--from", from, "a file of MADs in hex, one a line, sent after those given");
  rdmaqos::add_number(app, "--timeout", timeout_ms, "milliseconds to wait for each answer")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!from.empty()) {
    std::ifstream in(from);
    if (!in) {
      std::cerr << "sa-raw-mad: cannot read " << from << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) hexes.push_back(line);
  }
  if (hexes.empty()) {
    std::cerr << "sa-raw-mad: no MAD given\n";
    return 2;
  }
  std::vector<std::vector<uint8_t>> mads;
  for (const std::string& hex : hexes) {
    auto mad = from_hex(hex);
    if (!mad) {
      std::cerr << "sa-raw-mad: not a MAD in hex: " << hex << "\n";
      return 2;
    }
    mads.push_back(std::move(*mad));
  }
  if (umad_init() < 0) {
    std::cerr << "sa-raw-mad: umad_init failed\n";
    return 1;
  }
  umad_port_t port{};
  if (umad_get_port(nullptr, 0, &port) < 0) {
    std::cerr << "sa-raw-mad: umad_get_port failed\n";
    return 1;
  }
  const int sm_lid = static_cast<int>(port.sm_lid);
  int portid = umad_open_port(port.ca_name, port.portnum);
  umad_release_port(&port);
  if (portid < 0) {
    std::cerr << "sa-raw-mad: umad_open_port failed\n";
    return 1;
  }
  int agent = umad_register(portid, kSaClass, 2, 0, nullptr);
  if (agent < 0) {
    std::cerr << "sa-raw-mad: umad_register failed\n";
    return 1;
  }
  for (const std::vector<uint8_t>& mad : mads) {
    auto out = exchange(portid, agent, sm_lid, mad, timeout_ms);
    if (!out) return 1;
    std::cout << out->dump() << std::endl;
  }
  return 0;
}
