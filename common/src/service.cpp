// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sd_notify(3) through libsystemd when the build found it; nothing otherwise.
#include "rdma-qos/common/service.h"

#include <string>

#ifdef RDMA_QOS_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace rdmaqos::common {
namespace {

void send([[maybe_unused]] const std::string& state) {
#ifdef RDMA_QOS_HAVE_LIBSYSTEMD
  sd_notify(0, state.c_str());
#endif
}

}  // namespace

void notify_ready(std::string_view status) {
  send("READY=1\nSTATUS=" + std::string(status));
}
void notify_reloading() {
  send("RELOADING=1");
}
void notify_status(std::string_view status) {
  send("STATUS=" + std::string(status));
}
void notify_stopping() {
  send("STOPPING=1");
}
bool notify_supported() {
#ifdef RDMA_QOS_HAVE_LIBSYSTEMD
  return true;
#else
  return false;
#endif
}

const char* version() {
  return RDMA_QOS_VERSION;
}

}  // namespace rdmaqos::common
