// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Numeric options read as knobs do: a leading 0 is decimal, 0x is hex, nothing else passes.
#include "rdma-qos/common/cli_number.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace rdmaqos {
namespace {

template <typename T>
std::optional<T> parse(std::vector<std::string> args) {
  CLI::App app;
  T value{};
  add_number(app, "--n", value);
  std::vector<std::string> argv = {"--n"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::reverse(argv.begin(), argv.end());  // CLI11's vector form takes arguments in reverse
  try {
    app.parse(argv);
  } catch (const CLI::ParseError&) {
    return std::nullopt;
  }
  return value;
}

TEST(CliNumber, ALeadingZeroIsDecimalNotOctal) {
  EXPECT_EQ(parse<uint64_t>({"010"}), 10u);
  EXPECT_EQ(parse<int>({"08"}), 8);
}

TEST(CliNumber, HexNeedsItsPrefix) {
  EXPECT_EQ(parse<uint64_t>({"0x10"}), 16u);
  EXPECT_EQ(parse<uint16_t>({"0XfFfF"}), 0xFFFF);
  EXPECT_FALSE(parse<int>({"ff"}));
}

TEST(CliNumber, TheTypesBoundsHold) {
  EXPECT_EQ(parse<uint8_t>({"255"}), 255);
  EXPECT_FALSE(parse<uint8_t>({"256"}));
  EXPECT_EQ(parse<uint64_t>({"0xFFFFFFFFFFFFFFFF"}), UINT64_MAX);
  EXPECT_EQ(parse<int8_t>({"-128"}), -128);
  EXPECT_FALSE(parse<int8_t>({"-129"}));
  EXPECT_EQ(parse<int8_t>({"127"}), 127);
  EXPECT_FALSE(parse<int8_t>({"128"}));
}

TEST(CliNumber, SignsOnlyForSignedTypes) {
  EXPECT_EQ(parse<int>({"-5"}), -5);
  EXPECT_EQ(parse<int>({"-0"}), 0);
  EXPECT_FALSE(parse<unsigned>({"-5"}));
  EXPECT_FALSE(parse<int>({"-"}));
  EXPECT_FALSE(parse<int>({"+5"}));
}

TEST(CliNumber, AnythingElseIsRefused) {
  for (const char* bad : {"", "1e3", "0b11", "0o7", "5x", "1.5", "0x"})
    EXPECT_FALSE(parse<uint32_t>({bad})) << bad;
}

TEST(CliNumber, OptionalNumbersStayUnsetWhenAbsent) {
  CLI::App app;
  std::optional<uint16_t> value;
  add_number(app, "--n", value);
  app.parse(std::vector<std::string>{});
  EXPECT_FALSE(value);
  app.parse(std::vector<std::string>{"012", "--n"});
  EXPECT_EQ(value, 12);
}

TEST(CliNumber, EveryNumberOfAListIsReadLikeOne) {
  CLI::App app;
  std::vector<uint16_t> values;
  add_number(app, "--n", values)->delimiter(',');
  app.parse(std::vector<std::string>{"0x10,010,7", "--n"});
  EXPECT_EQ(values, (std::vector<uint16_t>{16, 10, 7}));
  EXPECT_THROW(app.parse(std::vector<std::string>{"1,65536", "--n"}), CLI::ValidationError);
}

}  // namespace
}  // namespace rdmaqos
