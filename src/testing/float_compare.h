// Comparing float32 vectors that the same model computed in different batches,
// batch rows, thread counts or CPUs.
//
// Such values are not bitwise equal, even for equal inputs: BLAS kernels block
// and vectorise their sums by the row count and by the CPU's features (an AMD
// EPYC and an Intel Xeon differ), so the same input in two rows of one batch can
// differ in its last bits. The error of a float32 sum of n terms grows with the
// terms' magnitude, not the result's, so an element near zero can differ by more
// than 1e-5 of itself while the vector as a whole agrees to a few ulps of its
// largest element. The tolerance is therefore relative to the vector's scale.
// A real bug (a wrong row, mask, pooling or output) moves values by orders of
// magnitude more than this.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <gtest/gtest.h>

namespace tokenbatch::testing {

// Relative tolerance for float32 results compared across batch shapes, threads
// or CPUs: float32 carries 24 bits (an ulp is 6e-8 of the value) and a few
// hundred accumulated terms cost about 1e-6; 1e-5 leaves a margin that holds on
// any x86 CPU.
inline constexpr double kFloat32RelativeTolerance = 1e-5;

// Passes when got and want (contiguous ranges of float or double: std::vector,
// std::span) have the same length and every element satisfies
//   |got[k] - want[k]| <= relative_tolerance * scale,
// where scale is the largest finite magnitude in either vector (1 for an all-zero
// pair). A NaN never passes; an infinity passes only against the same infinity.
// On failure it names the first element out of tolerance, both values, the
// difference and the bound. Use as EXPECT_TRUE(FloatsNear(got, want)).
template <typename RangeA, typename RangeB>
::testing::AssertionResult FloatsNear(const RangeA& got, const RangeB& want,
                                      double relative_tolerance = kFloat32RelativeTolerance) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  }
  double scale = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    for (const double v : {double(got[k]), double(want[k])}) {
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    }
  }
  if (scale == 0) scale = 1;
  const double bound = relative_tolerance * scale;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double diff = std::abs(double(got[k]) - double(want[k]));
    const bool infinite_and_equal = std::isinf(double(want[k])) && double(got[k]) == double(want[k]);
    if (!(diff <= bound) && !infinite_and_equal) {  // NaN never passes
      return ::testing::AssertionFailure()
             << "element " << k << ": " << got[k] << " vs " << want[k] << ", difference " << diff
             << " > " << bound << " (" << relative_tolerance << " of the vectors' largest magnitude "
             << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tokenbatch::testing
