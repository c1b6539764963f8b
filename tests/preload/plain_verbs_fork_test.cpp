// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plain-verbs cache across fork(): the child of a program whose other thread was asking the
// SA for a destination asks again for it, instead of waiting for an answer no thread of the
// child will ever give. The test calls the module's fork hooks around fork() as its fork
// handlers do (fork_guard.cpp registers them in the module).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "fake_plain_verbs_sa.h"
#include "plain_verbs.h"

namespace rdmaqos::preload {
namespace {

PlainVerbsInputs ib_destination() {
  PlainVerbsInputs in;
  in.device = "mlx5_0";
  in.port = 1;
  in.link = providers::LinkKind::kInfiniBand;
  in.slid = 1;
  in.dlid = 3;
  in.qos_class = 7;
  return in;
}

TEST(PlainVerbsFork, TheChildAsksAgainForADestinationAnotherThreadWasAsking) {
  std::atomic<bool> parent_query_started{false};
  std::atomic<bool> release_parent_query{false};
  const pid_t parent = getpid();
  PlainVerbsOptions options;
  options.wait = std::chrono::milliseconds(200);
  options.ttl = std::chrono::hours(1);
  auto ops = std::make_unique<FakePlainVerbsSa>();
  ops->on_qos_supported = [](const PlainVerbsInputs&, sa::Deadline) -> rdmaqos::Result<bool> {
    return true;
  };
  ops->on_path_query = [&](const PlainVerbsInputs&, const sa::PathQuery&,
                           sa::Deadline) -> rdmaqos::Result<std::vector<sa::PathRecord>> {
    if (getpid() == parent) {  // the parent's query stays under way until the fork is done
      parent_query_started = true;
      while (!release_parent_query) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    sa::PathRecord answer;
    answer.sl = 5;
    return std::vector<sa::PathRecord>{answer};
  };
  PlainVerbsDecider decider(options, std::move(ops));
  std::thread asking([&] { decider.decide(ib_destination()); });
  while (!parent_query_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  lock_plain_verbs_for_fork();
  const pid_t child = fork();
  if (child == 0) {
    reset_plain_verbs_in_child();
    auto d = decider.decide(ib_destination());
    _exit(d && d->sl == 5 ? 0 : 1);
  }
  unlock_plain_verbs_after_fork();
  release_parent_query = true;
  asking.join();
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child kept the stock path: it waited for the parent's "
                                       "query instead of asking";
}

}  // namespace
}  // namespace rdmaqos::preload
