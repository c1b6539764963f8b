// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The control channel: a client call gets the reply the daemon's loop gives its request.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "rdma-qos/sa-responder/control.h"

namespace rdmaqos::sad {
namespace {

using namespace std::chrono_literals;

class ControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdma-qos-control-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    path = dir + "/sad-test-1.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  // Polls `server` until `done`, answering each request with `reply(request)`.
  static void serve(ControlServer& server, const std::atomic<bool>& done,
                    const std::function<nlohmann::json(const nlohmann::json&)>& reply) {
    while (!done) {
      std::vector<pollfd> fds;
      server.add_poll_fds(fds);
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      for (auto& r : server.process(fds)) server.reply(r.connection, reply(r.body));
    }
  }

  std::string dir, path;
};

TEST_F(ControlTest, CallGetsTheReplyToItsCommand) {
  auto server = ControlServer::open(path);
  ASSERT_TRUE(server) << server.error().message;
  std::atomic<bool> done{false};
  std::thread t([&] {
    serve(**server, done, [](const nlohmann::json& req) {
      return nlohmann::json{{"ok", true}, {"echo", req["command"]}};
    });
  });
  auto reply = control_call(path, {{"command", "stats"}}, 5s);
  done = true;
  t.join();
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ((*reply)["echo"], "stats");
  EXPECT_EQ((*reply)["ok"], true);
}

TEST_F(ControlTest, RequestWithoutCommandGetsAnErrorReply) {
  auto server = ControlServer::open(path);
  ASSERT_TRUE(server);
  std::atomic<bool> done{false};
  bool handler_called = false;
  std::thread t([&] {
    serve(**server, done, [&](const nlohmann::json&) {
      handler_called = true;
      return nlohmann::json{{"ok", true}};
    });
  });
  auto reply = control_call(path, {{"verb", "reload"}}, 5s);
  done = true;
  t.join();
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ((*reply)["ok"], false);
  EXPECT_FALSE(handler_called);
}

TEST_F(ControlTest, NoDaemonIsATransportError) {
  auto reply = control_call(path, {{"command", "stats"}}, 1s);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code, rdmaqos::ErrorCode::kTransport);
}

TEST_F(ControlTest, SilentDaemonIsATimeout) {
  auto server = ControlServer::open(path);
  ASSERT_TRUE(server);
  auto reply = control_call(path, {{"command", "stats"}}, 200ms);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code, rdmaqos::ErrorCode::kTimeout);
}

TEST_F(ControlTest, SocketIsForItsOwnerOnly) {
  auto server = ControlServer::open(path);
  ASSERT_TRUE(server);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ControlTest, SecondDaemonOnALiveSocketIsRefused) {
  auto first = ControlServer::open(path);
  ASSERT_TRUE(first);
  auto second = ControlServer::open(path);
  EXPECT_FALSE(second);
}

TEST_F(ControlTest, StaleSocketIsReplacedAndRemovedOnClose) {
  { std::ofstream(path) << "left by a crash"; }
  {
    auto server = ControlServer::open(path);
    ASSERT_TRUE(server) << server.error().message;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(ControlTest, FindsDaemonSocketsByName) {
  auto a = ControlServer::open(dir + "/sad-mlx5_0-1.sock");
  auto b = ControlServer::open(dir + "/sad-mlx5_0-2.sock");
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  { std::ofstream(dir + "/other.sock") << ""; }
  EXPECT_EQ(find_control_sockets(dir),
            (std::vector<std::string>{dir + "/sad-mlx5_0-1.sock", dir + "/sad-mlx5_0-2.sock"}));
  EXPECT_EQ(control_socket_path("mlx5_0", 1), "/run/rdma-qos/sad-mlx5_0-1.sock");
}

TEST(ControlRequest, ALineThatIsNotAnObjectWithACommandStringIsMalformed) {
  for (const char* line :
       {"", "stats", "[]", "{}", "{\"command\": 1}", "{\"command\": \"stats\""}) {
    auto body = parse_control_request(line);
    ASSERT_FALSE(body) << line;
    EXPECT_EQ(body.error().message, "malformed request: expected {\"command\": NAME}") << line;
  }
  auto body = parse_control_request("{\"command\": \"stats\", \"extra\": [1]}");
  ASSERT_TRUE(body);
  EXPECT_EQ((*body)["command"], "stats");
}

TEST(ControlRequest, EachKnownCommandIsRead) {
  auto read = [](const char* line) {
    auto body = parse_control_request(line);
    EXPECT_TRUE(body) << line;
    return read_control_command(*body);
  };
  EXPECT_EQ(read(R"({"command": "reload"})")->action, ControlAction::kReload);
  EXPECT_EQ(read(R"({"command": "stats"})")->action, ControlAction::kStats);
  EXPECT_EQ(read(R"({"command": "explain", "lid": 3})")->action, ControlAction::kExplain);
  EXPECT_EQ(read(R"({"command": "pause"})")->action, ControlAction::kPause);
  EXPECT_EQ(read(R"({"command": "resume"})")->action, ControlAction::kResume);
  auto incremental = read(R"({"command": "rediscover"})");
  EXPECT_EQ(incremental->action, ControlAction::kRediscover);
  EXPECT_FALSE(incremental->full);
  EXPECT_TRUE(read(R"({"command": "rediscover", "full": true})")->full);
  auto unknown = read(R"({"command": "shutdown"})");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message,
            "unknown command 'shutdown' (reload, rediscover, stats, explain, pause, resume)");
}

// rdma-qos-sad read `full` as a bool and a number there threw out of its control thread: the
// daemon ended. It is refused instead.
TEST(ControlRequest, RediscoverWithAFullThatIsNotABoolIsRefused) {
  for (const char* line :
       {R"({"command": "rediscover", "full": 1})", R"({"command": "rediscover", "full": "yes"})",
        R"({"command": "rediscover", "full": null})"}) {
    auto command = read_control_command(*parse_control_request(line));
    ASSERT_FALSE(command) << line;
    EXPECT_EQ(command.error().message, "rediscover: 'full' must be true or false");
  }
}

}  // namespace
}  // namespace rdmaqos::sad
