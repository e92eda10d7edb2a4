// OnlineLatencyFit: the line it learns from (cost, µs) pairs, its fallbacks when
// the line cannot be told apart, and how it forgets an old speed.
#include "tokenbatch/core/batch_latency_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tokenbatch {
namespace {

TEST(OnlineLatencyFitTest, RecoversALineFromVariedCosts) {
  OnlineLatencyFit fit;
  EXPECT_FALSE(fit.ready());
  for (int i = 0; i < 40; ++i) {
    const std::int64_t cost = 64 + 97 * (i % 13);
    fit.Add(cost, 2000.0 + 3.5 * static_cast<double>(cost));
  }
  EXPECT_TRUE(fit.ready());
  EXPECT_EQ(fit.batches(), 40);
  const BatchLatencyModel m = fit.model();
  EXPECT_NEAR(m.fixed_us, 2000.0, 1e-6 * 2000);
  EXPECT_NEAR(m.us_per_cost, 3.5, 1e-6 * 3.5);
  EXPECT_NEAR(m.PredictUs(1000), 5500.0, 1e-3);
}

TEST(OnlineLatencyFitTest, ReadyOnlyAfterMinBatches) {
  OnlineLatencyFit fit(/*memory_batches=*/64, /*min_batches=*/3);
  fit.Add(10, 100);
  fit.Add(20, 200);
  EXPECT_FALSE(fit.ready());
  fit.Add(30, 300);
  EXPECT_TRUE(fit.ready());
}

// One cost only: fixed and per-cost time cannot be told apart, and the model
// puts everything on the per-cost term, under which waiting never pays.
TEST(OnlineLatencyFitTest, OneCostOnlyIsReadAsAllPerCost) {
  OnlineLatencyFit fit;
  for (int i = 0; i < 10; ++i) fit.Add(500, 1000);
  const BatchLatencyModel m = fit.model();
  EXPECT_EQ(m.fixed_us, 0);
  EXPECT_NEAR(m.us_per_cost, 2.0, 1e-9);
}

// A line with a negative intercept would predict negative time for small
// batches: the fit falls back to time proportional to cost.
TEST(OnlineLatencyFitTest, NegativeInterceptFallsBackToProportional) {
  OnlineLatencyFit fit;
  for (std::int64_t cost : {100, 200, 300, 400}) fit.Add(cost, 10.0 * static_cast<double>(cost) - 500);
  const BatchLatencyModel m = fit.model();
  EXPECT_EQ(m.fixed_us, 0);
  EXPECT_GT(m.us_per_cost, 0);
  EXPECT_LT(m.us_per_cost, 10.0);
}

// Run time that does not grow with cost (a GPU far from saturation): all fixed.
TEST(OnlineLatencyFitTest, TimeFlatInCostIsAllFixed) {
  OnlineLatencyFit fit;
  for (std::int64_t cost : {16, 64, 256, 1024, 32, 128}) fit.Add(cost, 2000);
  const BatchLatencyModel m = fit.model();
  EXPECT_NEAR(m.fixed_us, 2000, 1e-6);
  EXPECT_NEAR(m.us_per_cost, 0, 1e-9);
}

TEST(OnlineLatencyFitTest, InvalidSamplesAreIgnored) {
  OnlineLatencyFit fit;
  fit.Add(0, 100);
  fit.Add(-5, 100);
  fit.Add(10, -1);
  fit.Add(10, std::numeric_limits<double>::quiet_NaN());
  fit.Add(10, std::numeric_limits<double>::infinity());
  EXPECT_EQ(fit.batches(), 0);
  EXPECT_EQ(fit.model().fixed_us, 0);
  EXPECT_EQ(fit.model().us_per_cost, 0);
}

// The memory is exponential: after many batches at a new speed the old one
// hardly counts.
TEST(OnlineLatencyFitTest, FollowsABackendThatChangesSpeed) {
  OnlineLatencyFit fit(/*memory_batches=*/16);
  for (int i = 0; i < 200; ++i) {
    const std::int64_t cost = 100 + 50 * (i % 7);
    fit.Add(cost, 5000.0 + 1.0 * static_cast<double>(cost));
  }
  EXPECT_NEAR(fit.model().fixed_us, 5000, 1);
  for (int i = 0; i < 200; ++i) {
    const std::int64_t cost = 100 + 50 * (i % 7);
    fit.Add(cost, 1000.0 + 2.0 * static_cast<double>(cost));
  }
  // Weight left on the old samples: e^(-200/16), about 4e-6.
  EXPECT_NEAR(fit.model().fixed_us, 1000, 1000 * 1e-3);
  EXPECT_NEAR(fit.model().us_per_cost, 2.0, 2.0 * 1e-3);
}

}  // namespace
}  // namespace tokenbatch
