// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Whose fault a daemon's death before answering on ibsim is: the simulator's known start-up
// crash (started once more) or ours (the test fails). Pure: reads an exit status and the
// daemon's output.
#pragma once

#include <string>
#include <string_view>

namespace rdmaqos::testbed {

struct StartFailure {
  bool simulator = false;  // the known umad2sim start-up crash: worth one more start
  std::string why;         // one line for the test's log
};

// The known crash: SIGSEGV on a stack that runs through libumad2sim (its receive thread), shown
// either by the test bed's crash report (an exit by SIGSEGV) or by a sanitizer's SEGV report
// (which exits with a status of its own). Anything else is ours: another signal, an exit status
// of ours, a SIGSEGV outside umad2sim or with no report, any other sanitizer report.
// `exit_code`: 128+signal when killed, as Process::wait_for gives it.
StartFailure classify_start_failure(int exit_code, std::string_view output);

}  // namespace rdmaqos::testbed
