// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one number parser: what every knob, option and environment variable accepts.
#include "rdma-qos/common/number.h"

#include <gtest/gtest.h>

namespace rdmaqos {
namespace {

TEST(Number, ReadsDecimal) {
  EXPECT_EQ(parse_unsigned("0"), 0u);
  EXPECT_EQ(parse_unsigned("4096"), 4096u);
  EXPECT_EQ(parse_unsigned("18446744073709551615"), UINT64_MAX);
}

TEST(Number, ReadsHexInEitherCase) {
  EXPECT_EQ(parse_unsigned("0x10"), 16u);
  EXPECT_EQ(parse_unsigned("0XfF"), 255u);
}

TEST(Number, ALeadingZeroIsDecimalNotOctal) {
  EXPECT_EQ(parse_unsigned("010"), 10u);
  EXPECT_EQ(parse_unsigned("09"), 9u);
}

TEST(Number, IgnoresBlanksAround) {
  EXPECT_EQ(parse_unsigned(" \t16 "), 16u);
}

TEST(Number, RejectsWhatIsNotAnUnsignedNumber) {
  for (const char* bad : {"", " ", "0x", "-1", "+1", "1 2", "12a", "0x1g", "1.5", "ten"})
    EXPECT_EQ(parse_unsigned(bad), std::nullopt) << "'" << bad << "'";
}

TEST(Number, RejectsValuesAboveTheBound) {
  EXPECT_EQ(parse_unsigned("255", 255), 255u);
  EXPECT_EQ(parse_unsigned("256", 255), std::nullopt);
  EXPECT_EQ(parse_unsigned("0x100", 0xFF), std::nullopt);
  EXPECT_EQ(parse_unsigned("18446744073709551616"), std::nullopt);
}

TEST(Number, RejectsASingleDigitAboveASmallBound) {
  EXPECT_EQ(parse_unsigned("9", 5), std::nullopt);
  EXPECT_EQ(parse_unsigned("0xf", 7), std::nullopt);
  EXPECT_EQ(parse_unsigned("5", 5), 5u);
}

TEST(Number, HexDigitsAloneReadAsHex) {
  EXPECT_EQ(parse_hex_digits("00000004"), 4u);
  EXPECT_EQ(parse_hex_digits("fFfF"), 0xffffu);
  EXPECT_EQ(parse_hex_digits(" 10 "), 16u);
}

TEST(Number, HexDigitsRejectAPrefixSignsAndValuesAboveTheBound) {
  for (const char* bad : {"", "0x10", "-1", "g", "1 2"})
    EXPECT_EQ(parse_hex_digits(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(parse_hex_digits("100000000", UINT32_MAX), std::nullopt);
  EXPECT_EQ(parse_hex_digits("ffffffff", UINT32_MAX), UINT32_MAX);
}

}  // namespace
}  // namespace rdmaqos
