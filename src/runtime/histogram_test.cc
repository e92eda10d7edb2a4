#include "tokenbatch/runtime/histogram.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch {
namespace {

using ::testing::ElementsAre;

TEST(HistogramTest, BucketsAreInclusiveUpperBoundsWithAnOverflowBucket) {
  Histogram h({1, 2, 4});
  for (double v : {0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 9.0}) h.Observe(v);
  EXPECT_THAT(h.counts(), ElementsAre(2, 2, 2, 1));
  EXPECT_EQ(h.count(), 7u);
  EXPECT_DOUBLE_EQ(h.sum(), 21.0);
  EXPECT_DOUBLE_EQ(h.mean(), 3.0);
  EXPECT_DOUBLE_EQ(h.QuantileUpperBound(0.5), 2.0);
  EXPECT_DOUBLE_EQ(h.QuantileUpperBound(1.0), 4.0);
}

TEST(HistogramTest, Factories) {
  EXPECT_THAT(Histogram::PowersOfTwo(8).bounds(), ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(Histogram::Exponential(10, 10, 3).bounds(), ElementsAre(10, 100, 1000));
  EXPECT_EQ(Histogram::Ratio().bounds().size(), 10u);
  EXPECT_DOUBLE_EQ(Histogram::Ratio().bounds().back(), 1.0);
}

}  // namespace
}  // namespace tokenbatch
