// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one result type of the project: a value or a structured error (code, message, and the
// peer's status code where it gave one), so callers handle failures without exceptions and C
// APIs can pass them through. Every component returns these; none keeps its own.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
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
  kNotFound,         // what was named does not exist (a file; a default path may be absent)
  kBusy,             // a local service had no room for the question in time; nothing is known
                     // of the SA behind it (not a timeout: the SA is not taken to be down)
};

// "truncated", "timeout", ... (stable: scripts read them from `rdma-qos path --json`).
const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kMalformed;
  std::string message;
  uint16_t mad_status = 0;  // set with kMadStatus
};

namespace detail {
// Debug and Sanitize builds (the one CI runs the unit tests in) check that every error is
// looked at: a Result destroyed holding an error nobody asked about (ok(), bool, error(),
// value()) prints it and aborts, so a dropped failure fails the test that caused it. Never in
// the builds that ship (Release, None, RelWithDebInfo): the module must not abort its host
// program, nor a daemon over an error it could live with. RdmaQosBuild.cmake sets the macro.
#ifdef RDMA_QOS_CHECK_RESULTS
inline constexpr bool kCheckResults = true;
#else
inline constexpr bool kCheckResults = false;
#endif
[[noreturn]] void unexamined_error(const Error& error);
}  // namespace detail

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  Result(const Result& other) : v_(other.v_) {
    other.examined_ = true;  // the copy carries the obligation
  }
  Result(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : v_(std::move(other.v_)) {
    other.examined_ = true;  // the error, if any, is the new object's to be looked at
  }
  Result& operator=(const Result& other) {
    check();
    v_ = other.v_;
    examined_ = false;
    other.examined_ = true;
    return *this;
  }
  Result& operator=(Result&& other) noexcept(std::is_nothrow_move_assignable_v<T>) {
    check();
    v_ = std::move(other.v_);
    examined_ = false;
    other.examined_ = true;
    return *this;
  }
  ~Result() { check(); }

  bool ok() const {
    examined_ = true;
    return v_.index() == 0;
  }
  explicit operator bool() const { return ok(); }
  T& value() & {
    examined_ = true;
    return std::get<0>(v_);
  }
  const T& value() const& {
    examined_ = true;
    return std::get<0>(v_);
  }
  T&& value() && {
    examined_ = true;
    return std::get<0>(std::move(v_));
  }
  const T& operator*() const { return value(); }
  T& operator*() { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const {
    examined_ = true;
    return std::get<1>(v_);
  }
  // Says the caller looked and does not care (a fuzz target, a best-effort call): the debug
  // check then lets an error go.
  void ignore_error() const { examined_ = true; }

 private:
  void check() const {
    if constexpr (detail::kCheckResults)
      if (!examined_ && v_.index() == 1) detail::unexamined_error(std::get<1>(v_));
  }

  std::variant<T, Error> v_;
  // Kept in every build so the layout does not depend on NDEBUG.
  mutable bool examined_ = false;
};

// Success without a value.
struct Ok {};

// Success or an error, nothing else: Result<void>{} is success.
template <>
class [[nodiscard]] Result<void> : public Result<Ok> {
 public:
  Result() : Result<Ok>(Ok{}) {}
  Result(Ok ok) : Result<Ok>(ok) {}                      // NOLINT(google-explicit-constructor)
  Result(Error error) : Result<Ok>(std::move(error)) {}  // NOLINT(google-explicit-constructor)
};

inline Error make_error(ErrorCode code, std::string message, uint16_t mad_status = 0) {
  return Error{code, std::move(message), mad_status};
}

}  // namespace rdmaqos
