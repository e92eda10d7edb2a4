// The cross-CPU float tolerance must still fail on differences a real bug makes.
#include "testing/float_compare.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace tokenbatch::testing {
namespace {

TEST(FloatsNearTest, ToleranceIsRelativeToTheVectorsLargestMagnitude) {
  const std::vector<float> want = {2.0f, -0.0177f, 0.5f};
  // An element near zero may move by more than 1e-5 of itself (BLAS rounding
  // scales with the largest terms), but not by more than 1e-5 of the largest.
  std::vector<float> got = want;
  got[1] += 1e-5f * 2.0f * 0.5f;
  EXPECT_TRUE(FloatsNear(got, want));
  got[1] = want[1] + 1e-5f * 2.0f * 2.0f;
  EXPECT_FALSE(FloatsNear(got, want));
}

TEST(FloatsNearTest, FailsOnWhatABugLooksLike) {
  const std::vector<double> want = {0.1, 0.2, 0.3, 0.4};
  EXPECT_FALSE(FloatsNear(std::vector<double>{0.2, 0.1, 0.3, 0.4}, want));  // rows or values swapped
  EXPECT_FALSE(FloatsNear(std::vector<double>{0.1, 0.2, 0.3}, want));       // wrong width
  EXPECT_FALSE(FloatsNear(std::vector<double>{0.1, 0.2, 0.3, 0.4 * 1.001}, want));
  EXPECT_FALSE(FloatsNear(std::vector<double>{0.1, 0.2, std::nan(""), 0.4}, want));
  EXPECT_FALSE(FloatsNear(std::vector<double>{0.1, 0.2, 0.3, std::numeric_limits<double>::infinity()}, want));
}

TEST(FloatsNearTest, ComparesFloatAgainstDoubleAndZeros) {
  const std::vector<float> got = {0.1f, 0.2f};
  EXPECT_TRUE(FloatsNear(got, std::vector<double>{0.1, 0.2}));  // float32 rounding is 3e-8 relative
  EXPECT_TRUE(FloatsNear(std::vector<float>{0, 0}, std::vector<float>{0, 0}));
  EXPECT_FALSE(FloatsNear(std::vector<float>{0, 1e-3f}, std::vector<float>{0, 0}));
}

}  // namespace
}  // namespace tokenbatch::testing
