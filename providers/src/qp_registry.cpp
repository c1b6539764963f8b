// QP registry storage (see qp_registry.h). A QP's address identifies it until ibv_destroy_qp,
// which erases the entry, so a reused address never inherits another QP's settings.
#include "rdma-qos/providers/qp_registry.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace rdmaqos::providers {
namespace {

struct Store {
  mutable std::shared_mutex mutex;
  std::unordered_map<const ibv_qp*, QpEntry> entries;
};

Store& store() {
  static Store* s = new Store;  // never destroyed: QPs may be modified from atexit handlers
  return *s;
}

}  // namespace

QpRegistry& QpRegistry::instance() {
  static QpRegistry registry;
  return registry;
}

void QpRegistry::set_cm(const ibv_qp* qp, CmConnection cm) {
  std::unique_lock lock(store().mutex);
  store().entries[qp].cm = cm;
}

void QpRegistry::set_decision(const ibv_qp* qp, QosDecision decision) {
  std::unique_lock lock(store().mutex);
  store().entries[qp].decision = decision;
}

void QpRegistry::set_port(const ibv_qp* qp, uint8_t port_num) {
  std::unique_lock lock(store().mutex);
  store().entries[qp].port_num = port_num;
}

std::optional<QpEntry> QpRegistry::find(const ibv_qp* qp) const {
  std::shared_lock lock(store().mutex);
  auto it = store().entries.find(qp);
  if (it == store().entries.end()) return std::nullopt;
  return it->second;
}

void QpRegistry::erase(const ibv_qp* qp) {
  std::unique_lock lock(store().mutex);
  store().entries.erase(qp);
}

}  // namespace rdmaqos::providers
