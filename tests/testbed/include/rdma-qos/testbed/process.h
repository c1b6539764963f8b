// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Child processes for the test beds: spawned in their own process group, killed with the
// whole group on teardown, and killed by the kernel if the test process itself dies
// (PR_SET_PDEATHSIG), so no simulator or SM outlives a crashed or timed-out test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmaqos::testbed {

struct ProcessOptions {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // added to (or replacing) the environment
  std::string cwd;                         // empty: inherit
  std::string output_path;                 // stdout+stderr appended here; empty: inherit
  std::string input_path = {};  // stdin from this file (a FIFO: a console); empty: /dev/null
};

class Process {
 public:
  // Throws std::system_error when fork/exec setup fails; an exec failure shows up as exit 127.
  static Process spawn(const ProcessOptions& options);

  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  // True while the child has not exited (reaps it when it has).
  bool running();
  // Waits up to `timeout` for exit; returns the exit code (128+signal when killed).
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  // SIGTERM to the process group, SIGKILL after `grace`, then reaps. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

 private:
  explicit Process(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> status_;
};

struct RunResult {
  int exit_code = -1;  // 128+signal when killed; -1 when timed out
  bool timed_out = false;
  std::string output;  // stdout and stderr interleaved
};

// Runs a command to completion (or kills it at `timeout`) and captures its output.
RunResult run(const ProcessOptions& options, std::chrono::milliseconds timeout);

// Pids of live processes whose environment holds NAME=VALUE: how tests prove that a fixture
// left nothing behind.
std::vector<pid_t> processes_with_env(const std::string& name, const std::string& value);

// Resolves a program name through PATH; empty when not found.
std::string find_program(const std::string& name);

// The first of `pids` whose /proc comm is `comm` (e.g. OpenSM among a fabric's processes); -1
// when none is.
pid_t process_named(const std::vector<pid_t>& pids, const std::string& comm);

// Waits until /proc shows `pid` stopped (state T): kill(SIGSTOP) returns before a process
// running on another CPU has stopped, and a test that freezes a peer must not let it answer
// once more. False when it did not stop within `limit`.
bool wait_stopped(pid_t pid, std::chrono::milliseconds limit);

// The CPU time (user and system) `pid` has used so far, from /proc: how a test tells a process
// that idles from one that spins.
std::chrono::milliseconds cpu_time(pid_t pid);

}  // namespace rdmaqos::testbed
