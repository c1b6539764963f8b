// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// libFuzzer target: a request received on a control socket (rdma-qos-sad's, the OpenSM
// plugin's, rdma-qos-lsd's), framed as ControlServer frames it, its JSON body and the command
// read from it, with the reply a refusal sends back. Nothing may crash or throw (an exception
// there ends the daemon), and every reply must serialise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rdma-qos/sa-responder/control.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace sad = rdmaqos::sad;
  const std::string_view received(reinterpret_cast<const char*>(data), size);
  // A request is the text before the first newline; ControlServer waits for one.
  const std::string_view line = received.substr(0, received.find('\n'));
  auto body = sad::parse_control_request(line);
  if (!body) {
    (void)nlohmann::json({{"ok", false}, {"message", body.error().message}}).dump();
    return 0;
  }
  if (!body->is_object() || !(*body)["command"].is_string()) __builtin_trap();
  auto command = sad::read_control_command(*body);
  if (!command) {
    // The refusal may echo the command: JSON text the parser accepted must dump again.
    (void)nlohmann::json({{"ok", false}, {"message", command.error().message}}).dump();
    return 0;
  }
  if (command->action == sad::ControlAction::kRediscover) {
    auto full = body->find("full");
    if (command->full != (full != body->end() && full->get<bool>())) __builtin_trap();
  } else if (command->full) {
    __builtin_trap();
  }
  return 0;
}
