// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A VerbsHost for tests: each question answered by a function the test sets (or swaps within a
// test), with the defaults of a host that knows nothing: unknown link, port 0, P_Key index 0, no
// plain-verbs level, no pacing, no log and no record.
#pragma once

#include <cerrno>
#include <functional>
#include <optional>
#include <string>

#include "rdma-qos/providers/verbs_interposer.h"

namespace rdmaqos::providers {

struct FakeVerbsHost final : VerbsHost {
  VerbsSettings fixed;
  ProgramValues values = ProgramValues::kKeep;
  std::function<LinkKind(ibv_context*, uint8_t port, uint8_t sgid_index)> on_link_kind;
  std::function<uint8_t(ibv_qp*)> on_qp_port;
  std::function<uint16_t(ibv_qp*)> on_qp_pkey_index;
  std::function<std::optional<QosDecision>(const PlainVerbsTarget&)> on_plain_verbs;
  std::function<int(ibv_qp*, uint32_t kbps)> on_rate_limit;  // empty: EOPNOTSUPP
  std::function<void(const std::string& key, const std::string& message)> on_log_once;
  std::function<void(const std::string& json_line)> on_record;  // empty: not recording

  const VerbsSettings& settings() const override { return fixed; }
  ProgramValues program_values() const override { return values; }
  LinkKind link_kind(ibv_context* context, uint8_t port, uint8_t sgid_index) override {
    return on_link_kind ? on_link_kind(context, port, sgid_index) : LinkKind::kUnknown;
  }
  uint8_t qp_port(ibv_qp* qp) override { return on_qp_port ? on_qp_port(qp) : 0; }
  uint16_t qp_pkey_index(ibv_qp* qp) override {
    return on_qp_pkey_index ? on_qp_pkey_index(qp) : 0;
  }
  std::optional<QosDecision> plain_verbs(const PlainVerbsTarget& target) override {
    return on_plain_verbs ? on_plain_verbs(target) : std::nullopt;
  }
  int rate_limit(ibv_qp* qp, uint32_t kbps) override {
    return on_rate_limit ? on_rate_limit(qp, kbps) : EOPNOTSUPP;
  }
  void log_once(const std::string& key, const std::string& message) override {
    if (on_log_once) on_log_once(key, message);
  }
  bool recording() const override { return static_cast<bool>(on_record); }
  void record(const std::string& json_line) override {
    if (on_record) on_record(json_line);
  }
};

}  // namespace rdmaqos::providers
