// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one result type of the project: a value or a structured error (code, message, and the
// peer's status code where it gave one), so callers handle failures without exceptions and C
// APIs can pass them through. Every component returns these; none keeps its own.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace rdmaqos {

enum class ErrorCode {
  kTruncated,        // input shorter than the layout needs
  kMalformed,        // a field holds a value the layout forbids
  kMadStatus,        // the peer (an SA) answered with a non-zero MAD status
  kTimeout,          // no answer within the timeout after every retry, or the caller's deadline
  kTransport,        // the layer below failed (open, register, send, receive)
  kInvalidArgument,  // the caller's request cannot be encoded or makes no sense
};

// "truncated", "timeout", ... (stable: scripts read them from `rdma-qos path --json`).
const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kMalformed;
  std::string message;
  uint16_t mad_status = 0;  // set with kMadStatus
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const { return value(); }
  T& operator*() { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Success without a value.
struct Ok {};

inline Error make_error(ErrorCode code, std::string message, uint16_t mad_status = 0) {
  return Error{code, std::move(message), mad_status};
}

}  // namespace rdmaqos
