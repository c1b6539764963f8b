// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Process spawning and reaping for the test beds (see process.h for the guarantees).
#include "rdma-qos/testbed/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <thread>

extern char** environ;

namespace rdmaqos::testbed {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
struct ExecImage {
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecImage build_image(const ProcessOptions& options, std::vector<std::string>& argv_storage) {
  ExecImage image;
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : options.env) merged[k] = v;
  image.env_storage.reserve(merged.size());
  for (const auto& [k, v] : merged) image.env_storage.push_back(k + "=" + v);
  for (auto& s : image.env_storage) image.envp.push_back(s.data());
  image.envp.push_back(nullptr);

  argv_storage = options.argv;
  if (!argv_storage.empty() && argv_storage[0].find('/') == std::string::npos) {
    std::string resolved = find_program(argv_storage[0]);
    if (!resolved.empty()) argv_storage[0] = resolved;
  }
  for (auto& s : argv_storage) image.argv.push_back(s.data());
  image.argv.push_back(nullptr);
  return image;
}

// Runs in a vfork child: it shares the parent's memory until execve, so it only makes system
// calls on what the parent prepared, and starts with every signal blocked (a handler of the
// parent's must not run on the shared stack) until its dispositions are its own again.
[[noreturn]] void exec_child(const ExecImage& image, const ProcessOptions& options, int out_fd,
                             pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  // The child's dispositions are a copy (vfork shares memory, not signal handlers): handlers
  // go back to the default; ignored signals stay ignored, as across fork and exec.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_IGN &&
        current.sa_handler != SIG_DFL) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigaction(sig, &dfl, nullptr);
    }
  }
  // Unblock everything (the parent may block signals itself: gtest death tests, etc.).
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int in = open(options.input_path.empty() ? "/dev/null" : options.input_path.c_str(), O_RDONLY);
  if (in >= 0) dup2(in, 0);
  if (out_fd >= 0) {
    dup2(out_fd, 1);
    dup2(out_fd, 2);
  }
  if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(127);
  execve(image.argv[0], image.argv.data(), image.envp.data());
  _exit(127);
}

pid_t spawn_raw(const ProcessOptions& options, int out_fd) {
  if (options.argv.empty()) throw std::invalid_argument("spawn: empty argv");
  std::vector<std::string> argv_storage;
  ExecImage image = build_image(options, argv_storage);
  pid_t parent = getpid();
  // vfork, not fork: a test process starts thousands of short clients, and on a virtual
  // machine copying its page tables and then taking copy-on-write faults cost more CPU than
  // the client itself.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  pid_t pid = vfork();
  if (pid == 0) exec_child(image, options, out_fd, parent);
  const int vfork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0) {
    errno = vfork_errno;
    throw_errno("vfork");
  }
  setpgid(pid, pid);  // also from the parent, so a kill of the group cannot race the child
  return pid;
}

}  // namespace

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  // Daemons such as opensm live in sbin, which a non-login PATH may lack.
  for (const char* dir : {"/usr/sbin", "/sbin"}) {
    std::string candidate = std::string(dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Process Process::spawn(const ProcessOptions& options) {
  int out_fd = -1;
  if (!options.output_path.empty()) {
    out_fd = open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) throw_errno(("open " + options.output_path).c_str());
  }
  pid_t pid;
  try {
    pid = spawn_raw(options, out_fd);
  } catch (...) {
    if (out_fd >= 0) close(out_fd);
    throw;
  }
  if (out_fd >= 0) close(out_fd);
  return Process(pid);
}

Process::Process(Process&& other) noexcept : pid_(other.pid_), status_(other.status_) {
  other.pid_ = -1;
}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = other.pid_;
    status_ = other.status_;
    other.pid_ = -1;
  }
  return *this;
}

Process::~Process() {
  stop();
}

bool Process::running() {
  if (pid_ < 0 || status_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = decode_status(status);
    return false;
  }
  return r == 0;
}

std::optional<int> Process::wait_for(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

void Process::stop(std::chrono::milliseconds grace) {
  if (pid_ < 0) return;
  if (running()) {
    kill(-pid_, SIGTERM);
    if (!wait_for(grace)) {
      kill(-pid_, SIGKILL);
      int status = 0;
      if (waitpid(pid_, &status, 0) == pid_) status_ = decode_status(status);
    }
  }
  // The leader is gone; anything it left in its group goes too.
  kill(-pid_, SIGKILL);
  pid_ = -1;
}

RunResult run(const ProcessOptions& options, std::chrono::milliseconds timeout) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
  pid_t pid;
  try {
    pid = spawn_raw(options, fds[1]);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);

  RunResult result;
  auto deadline = Clock::now() + timeout;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: every writer (the child and its descendants) is gone
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (result.timed_out) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // descendants that closed their output but linger
  result.exit_code = result.timed_out ? -1 : decode_status(status);
  return result;
}

std::vector<pid_t> processes_with_env(const std::string& name, const std::string& value) {
  std::vector<pid_t> found;
  std::string needle = name + "=" + value;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    std::ifstream env("/proc/" + std::string(entry->d_name) + "/environ", std::ios::binary);
    if (!env) continue;
    std::string data((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    while (pos < data.size()) {
      size_t nul = data.find('\0', pos);
      if (nul == std::string::npos) nul = data.size();
      if (data.compare(pos, nul - pos, needle) == 0) {
        // Zombies keep no environment, so a hit is a live process.
        found.push_back(static_cast<pid_t>(pid));
        break;
      }
      pos = nul + 1;
    }
  }
  closedir(proc);
  return found;
}

pid_t process_named(const std::vector<pid_t>& pids, const std::string& comm) {
  for (pid_t pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    if (name == comm) return pid;
  }
  return -1;
}

bool wait_stopped(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  do {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    // The state follows the command name in parentheses, which may itself hold ") ".
    auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

std::chrono::milliseconds cpu_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  // After the command name in parentheses (which may hold spaces): state is field 3, utime and
  // stime fields 14 and 15, in clock ticks.
  auto close = stat.rfind(')');
  if (close == std::string::npos) return std::chrono::milliseconds(0);
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  long long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)
    if (i >= 14) ticks += std::stoll(field);
  return std::chrono::milliseconds(ticks * 1000 / sysconf(_SC_CLK_TCK));
}

}  // namespace rdmaqos::testbed
