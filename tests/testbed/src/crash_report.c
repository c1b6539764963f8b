/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* Preloaded into the daemons IbFabric::start_until_answering starts: on SIGSEGV, writes the
 * crashing thread's stack to stderr, then dies of the signal as before. The stack is how the test
 * bed tells umad2sim's known start-up crash (in its receive thread) from a crash of ours; a plain
 * SIGSEGV exit cannot say whose it was. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "crash_report.h"

enum { kMaxFrames = 64 };

static void write_text(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored; /* nothing better to do in a dying process */
}

static void on_segv(int sig) {
  void* frames[kMaxFrames];
  int n = backtrace(frames, kMaxFrames);
  write_text(RDMA_QOS_CRASH_REPORT_BEGIN);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  write_text(RDMA_QOS_CRASH_REPORT_END);
  /* SA_RESETHAND restored the default action: a fault re-raises when the handler returns, a
   * sent signal does not, so raise it again for both. */
  raise(sig);
}

__attribute__((constructor)) static void install_crash_report(void) {
  struct sigaction old;
  /* A sanitizer (or the program) that handles SIGSEGV already reports it better. */
  if (sigaction(SIGSEGV, NULL, &old) != 0 || old.sa_handler != SIG_DFL) return;
  /* The first backtrace() loads the unwinder; do that here, not inside the handler. */
  void* warm_up[1];
  (void)backtrace(warm_up, 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
}
