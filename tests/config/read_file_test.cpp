// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Files named by RDMA_QOS_CONFIG / RDMA_QOS_POLICY: a FIFO, a directory or an oversized file is
// refused at once with a message naming it, and no error copies a foreign file's text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/read_file.h"
#include "rdma-qos/testbed/result_matchers.h"

namespace rdmaqos::config {
namespace {

using rdmaqos::testing::FailedWith;
using rdmaqos::testing::Succeeded;

std::map<std::string, std::string>& fake_env() {
  static std::map<std::string, std::string> env;
  return env;
}

std::optional<std::string> lookup(std::string_view name) {
  auto it = fake_env().find(std::string(name));
  if (it == fake_env().end()) return std::nullopt;
  return it->second;
}

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_env().clear();
    char tmpl[] = "/tmp/rdmaqos-read-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);  // NOLINT(concurrency-mt-unsafe,cert-env33-c)
  }
  std::string fifo() {
    std::string p = dir_ + "/fifo";
    EXPECT_EQ(mkfifo(p.c_str(), 0600), 0);
    return p;
  }
  std::string file(const std::string& text) {
    std::string p = dir_ + "/file";
    std::ofstream(p) << text;
    return p;
  }
  std::string dir_;
};

// A FIFO with no writer: a blocking open would never return (the test would hang).
TEST_F(ReadFileTest, AFifoNamedByRdmaQosConfigIsRefusedWithoutBlocking) {
  fake_env()["RDMA_QOS_CONFIG"] = fifo();
  auto r = load_host_config(&lookup, std::nullopt);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(rdmaqos::format_diagnostic(r.errors[0]).find(dir_ + "/fifo"), std::string::npos)
      << rdmaqos::format_diagnostic(r.errors[0]);
  EXPECT_NE(rdmaqos::format_diagnostic(r.errors[0]).find("not a regular file"), std::string::npos)
      << rdmaqos::format_diagnostic(r.errors[0]);
}

// The preload reads RDMA_QOS_POLICY through the same reader, with the policy's limit.
TEST_F(ReadFileTest, AFifoNamedAsThePolicyIsRefusedWithoutBlocking) {
  auto r = read_regular_file(fifo(), kMaxPolicyFileBytes);
  ASSERT_THAT(r, FailedWith(ErrorCode::kInvalidArgument));
  EXPECT_EQ(r.error().message, "it is not a regular file");
}

// A default path may be absent: callers tell that from every other failure by the code.
TEST_F(ReadFileTest, AMissingFileIsNotFound) {
  auto r = read_regular_file(dir_ + "/absent", kMaxPolicyFileBytes);
  ASSERT_THAT(r, FailedWith(ErrorCode::kNotFound));
  EXPECT_EQ(r.error().message, "No such file or directory");
}

TEST_F(ReadFileTest, ADirectoryIsAnInvalidArgumentSayingSo) {
  auto r = read_regular_file(dir_, kMaxPolicyFileBytes);
  ASSERT_THAT(r, FailedWith(ErrorCode::kInvalidArgument));
  EXPECT_EQ(r.error().message, "it is a directory, not a regular file");
}

TEST_F(ReadFileTest, AFileOverTheLimitIsAnInvalidArgumentNamingTheLimit) {
  auto r = read_regular_file(file(std::string(1001, 'x')), 1000);
  ASSERT_THAT(r, FailedWith(ErrorCode::kInvalidArgument));
  EXPECT_EQ(r.error().message, "it is larger than the limit of 1000 bytes");
}

TEST_F(ReadFileTest, ADirectoryIsRefusedWithAMessageNamingIt) {
  fake_env()["RDMA_QOS_CONFIG"] = dir_;
  auto r = load_host_config(&lookup, std::nullopt);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(rdmaqos::format_diagnostic(r.errors[0]).rfind(dir_ + ": error:", 0), 0u)
      << rdmaqos::format_diagnostic(r.errors[0]);
  EXPECT_NE(rdmaqos::format_diagnostic(r.errors[0]).find("directory"), std::string::npos)
      << rdmaqos::format_diagnostic(r.errors[0]);
}

TEST_F(ReadFileTest, AFileOverTheLimitIsRefusedWithTheLimitInTheMessage) {
  std::string big(kMaxConfigFileBytes + 1, '#');
  fake_env()["RDMA_QOS_CONFIG"] = file(big);
  auto r = load_host_config(&lookup, std::nullopt);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(rdmaqos::format_diagnostic(r.errors[0]).rfind(dir_ + "/file: error:", 0), 0u)
      << rdmaqos::format_diagnostic(r.errors[0]);
  EXPECT_NE(rdmaqos::format_diagnostic(r.errors[0]).find(std::to_string(kMaxConfigFileBytes)),
            std::string::npos)
      << rdmaqos::format_diagnostic(r.errors[0]);
}

TEST_F(ReadFileTest, AFileAtTheLimitIsRead) {
  auto r = read_regular_file(file(std::string(1000, 'x')), 1000);
  ASSERT_THAT(r, Succeeded());
  EXPECT_EQ(r->size(), 1000u);
}

TEST_F(ReadFileTest, DevNullReadsAsAnEmptyFile) {
  auto r = read_regular_file("/dev/null", 10);
  ASSERT_THAT(r, Succeeded());
  EXPECT_TRUE(r->empty());
}

// RDMA_QOS_CONFIG may name a file that is not ours (a secret, in a privileged program): an
// error names the file and line and what was expected, never the line's text.
TEST_F(ReadFileTest, AConfigErrorDoesNotEchoTheOffendingLine) {
  fake_env()["RDMA_QOS_CONFIG"] =
      file("root:s3cr3t-hash:19000:0:99999\ntos s3cr3t-value\nkernel_roce_tos 1,s3cr3t-item\n");
  auto r = load_host_config(&lookup, std::nullopt);
  ASSERT_EQ(r.errors.size(), 3u);
  for (const auto& e : r.errors)
    EXPECT_EQ(rdmaqos::format_diagnostic(e).find("s3cr3t"), std::string::npos)
        << rdmaqos::format_diagnostic(e);
  EXPECT_EQ(rdmaqos::format_diagnostic(r.errors[0]).rfind(dir_ + "/file:1: error:", 0), 0u)
      << rdmaqos::format_diagnostic(r.errors[0]);
  EXPECT_EQ(rdmaqos::format_diagnostic(r.errors[1]).rfind(dir_ + "/file:2: error: tos:", 0), 0u)
      << rdmaqos::format_diagnostic(r.errors[1]);
}

}  // namespace
}  // namespace rdmaqos::config
