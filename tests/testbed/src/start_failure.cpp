// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Telling umad2sim's start-up crash from a crash of ours (see start_failure.h).
#include "rdma-qos/testbed/start_failure.h"

#include <fmt/format.h>
#include <signal.h>

#include <array>

#include "crash_report.h"

namespace rdmaqos::testbed {
namespace {

constexpr std::string_view kSimulator = "libumad2sim";
constexpr std::string_view kCrashReportBegin = RDMA_QOS_CRASH_REPORT_BEGIN;
constexpr std::string_view kCrashReportEnd = RDMA_QOS_CRASH_REPORT_END;
constexpr std::string_view kAsanError = "ERROR: AddressSanitizer";
constexpr std::string_view kAsanSegv = "ERROR: AddressSanitizer: SEGV";
// What any sanitizer prints when it finds something.
constexpr std::array<std::string_view, 5> kSanitizerReports = {
    kAsanError, "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer", "WARNING: MemorySanitizer",
    "runtime error:"};

size_t count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// The text from the last `begin` up to the following `end` (or the end of the output).
std::string_view last_block(std::string_view output, std::string_view begin, std::string_view end) {
  const size_t at = output.rfind(begin);
  if (at == std::string_view::npos) return {};
  std::string_view block = output.substr(at);
  return block.substr(0, block.find(end));
}

}  // namespace

StartFailure classify_start_failure(int exit_code, std::string_view output) {
  // Sanitizer reports first: a sanitized daemon exits with the sanitizer's status, not by the
  // signal. Only a report of nothing but a SEGV on a stack through umad2sim is the simulator's.
  size_t reports = 0;
  for (std::string_view s : kSanitizerReports) reports += count(output, s);
  if (reports > 0) {
    const bool only_a_segv = reports == 1 && count(output, kAsanSegv) == 1;
    if (only_a_segv &&
        last_block(output, kAsanSegv, "SUMMARY:").find(kSimulator) != std::string_view::npos) {
      return {true, "AddressSanitizer: SEGV in umad2sim, its known start-up crash"};
    }
    return {false, "a sanitizer report: ours"};
  }
  if (exit_code < 128) return {false, fmt::format("exit status {}: ours", exit_code)};
  const int sig = exit_code - 128;
  if (sig != SIGSEGV) return {false, fmt::format("killed by signal {}: ours", sig)};
  std::string_view report = last_block(output, kCrashReportBegin, kCrashReportEnd);
  if (report.empty()) return {false, "SIGSEGV without the test bed's crash report: ours"};
  if (report.find(kSimulator) == std::string_view::npos) {
    return {false, "SIGSEGV on a stack outside umad2sim: ours"};
  }
  return {true, "SIGSEGV on a stack through umad2sim, its known start-up crash"};
}

}  // namespace rdmaqos::testbed
