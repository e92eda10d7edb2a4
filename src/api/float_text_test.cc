#include "api/float_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace tokenbatch::server {
namespace {

std::string Shortest(float v) {
  char buf[kMaxShortestFloatChars + 8];
  std::memset(buf, '#', sizeof buf);
  char* end = WriteShortestFloat(buf, v);
  return std::string(buf, end);
}

// Our text equals fmt's "{}" (the layout the server has always written), fits
// the declared bound, and parses back to the same float bits.
void ExpectLikeFmt(float v) {
  const std::string ours = Shortest(v);
  ASSERT_EQ(ours, fmt::format("{}", v)) << "bits 0x" << std::hex << std::bit_cast<std::uint32_t>(v);
  ASSERT_LE(ours.size(), kMaxShortestFloatChars);
  const float back = std::strtof(ours.c_str(), nullptr);
  ASSERT_EQ(std::bit_cast<std::uint32_t>(back), std::bit_cast<std::uint32_t>(v)) << ours;
}

TEST(FloatText, Layouts) {
  EXPECT_EQ(Shortest(0.0f), "0");
  EXPECT_EQ(Shortest(-0.0f), "-0");
  EXPECT_EQ(Shortest(1.0f), "1");
  EXPECT_EQ(Shortest(0.5f), "0.5");
  EXPECT_EQ(Shortest(-12.25f), "-12.25");
  EXPECT_EQ(Shortest(0.1f), "0.1");
  EXPECT_EQ(Shortest(0.0001f), "0.0001");        // exponent -4: still fixed
  EXPECT_EQ(Shortest(0.00001f), "1e-05");        // exponent -5: scientific
  EXPECT_EQ(Shortest(1234567.0f), "1234567");    // no trailing ".0"
  EXPECT_EQ(Shortest(1e15f), "1000000000000000");  // exponent 15: fixed
  EXPECT_EQ(Shortest(1e16f), "1e+16");           // exponent 16: scientific
  EXPECT_EQ(Shortest(3.4028235e38f), "3.4028235e+38");
  EXPECT_EQ(Shortest(std::numeric_limits<float>::denorm_min()), "1e-45");
  EXPECT_EQ(Shortest(-1.1754944e-38f), "-1.1754944e-38");
  EXPECT_EQ(Shortest(-1.234568e15f), "-1234568000000000");  // the longest: 17 bytes
  EXPECT_EQ(Shortest(-1.234568e15f).size(), kMaxShortestFloatChars);
}

TEST(FloatText, EdgesMatchFmt) {
  const float edges[] = {std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::epsilon(),
                         9.999999e-5f, 1e-4f, 9.9999994e15f, 1e16f, 0.3f, 2.0f / 3.0f, 16777216.0f,
                         16777217.0f, 123456789.0f};
  for (float e : edges) {
    ExpectLikeFmt(e);
    ExpectLikeFmt(-e);
  }
  for (int p = -45; p <= 38; ++p) {  // around every power of ten: the layout switches
    const float v = std::pow(10.0f, static_cast<float>(p));
    if (!std::isfinite(v) || v == 0.0f) continue;
    ExpectLikeFmt(v);
    ExpectLikeFmt(std::nextafter(v, 0.0f));
    ExpectLikeFmt(std::nextafter(v, std::numeric_limits<float>::infinity()));
  }
}

TEST(FloatText, EveryStrideOfTheBitSpaceMatchesFmt) {
  // ~1.05M bit patterns spread over all of them (every exponent, both signs,
  // subnormals), skipping NaN and infinity, which the writer does not take.
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093) {
    const float v = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    if (!std::isfinite(v)) continue;
    ExpectLikeFmt(v);
  }
}

TEST(FloatText, EmbeddingLikeValuesMatchFmt) {
  // What backends return: unit-norm components, mostly within (-0.3, 0.3).
  std::mt19937 rng(20261129);
  std::normal_distribution<float> component(0.0f, 0.05f);
  for (int i = 0; i < 1'000'000; ++i) ExpectLikeFmt(component(rng));
}

}  // namespace
}  // namespace tokenbatch::server
