// The registry through which the rdma_cm layer tells the verbs layer which QPs are rdma_cm
// connections (their CM ports, whether the program chose its own label) and which QoS decision
// applies to them. Keyed by the QP's address; thread-safe.
#pragma once

#include <infiniband/verbs.h>

#include <optional>

#include "rdma-qos/providers/av_policy.h"

namespace rdmaqos::providers {

struct QpEntry {
  std::optional<CmConnection> cm;
  std::optional<QosDecision> decision;
  std::optional<uint8_t> port_num;  // remembered from the INIT transition
};

class QpRegistry {
 public:
  static QpRegistry& instance();

  void set_cm(const ibv_qp* qp, CmConnection cm);
  void set_decision(const ibv_qp* qp, QosDecision decision);
  void set_port(const ibv_qp* qp, uint8_t port_num);
  std::optional<QpEntry> find(const ibv_qp* qp) const;
  void erase(const ibv_qp* qp);  // when the QP is destroyed
};

}  // namespace rdmaqos::providers
