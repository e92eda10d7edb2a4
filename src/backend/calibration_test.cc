#include "tokenbatch/backend/calibration.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

std::vector<GridPoint> Shapes() {
  std::vector<GridPoint> shapes;
  for (int64_t b : {1, 2, 4, 8}) {
    for (int64_t l : {16, 64, 256}) shapes.push_back(GridPoint{b, l, 0, 0});
  }
  return shapes;
}

TEST(FitQuadraticCostTest, RecoversExactCoefficients) {
  std::vector<GridPoint> shapes = Shapes();
  std::vector<double> y;
  for (const GridPoint& p : shapes) {
    const double bl = static_cast<double>(p.batch_size * p.seq_len);
    y.push_back(1e6 + 3000.0 * bl + 48.0 * bl * p.seq_len);
  }
  absl::StatusOr<QuadraticFit> fit = FitQuadraticCost(shapes, y);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->c0, 1e6, 1e-3);
  EXPECT_NEAR(fit->c1, 3000.0, 1e-6);
  EXPECT_NEAR(fit->c2, 48.0, 1e-8);
  EXPECT_LT(fit->max_relative_error, 1e-9);
  EXPECT_NEAR(fit->At(2, 10), 1e6 + 3000.0 * 20 + 48.0 * 200, 1e-3);
}

TEST(FitQuadraticCostTest, ReportsRelativeErrorOfAnImperfectFit) {
  std::vector<GridPoint> shapes = Shapes();
  std::vector<double> y;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const double bl = static_cast<double>(shapes[i].batch_size * shapes[i].seq_len);
    // ±10% alternating noise on a linear cost.
    y.push_back(100.0 * bl * (i % 2 == 0 ? 1.1 : 0.9));
  }
  absl::StatusOr<QuadraticFit> fit = FitQuadraticCost(shapes, y);
  ASSERT_TRUE(fit.ok());
  EXPECT_GT(fit->max_relative_error, 0.05);
  EXPECT_TRUE(std::isfinite(fit->max_relative_error));
  EXPECT_GT(fit->rms_relative_error, 0.0);
  EXPECT_LE(fit->rms_relative_error, fit->max_relative_error);
  // Half the points sit 10% above the line: the fit falls short somewhere.
  EXPECT_GT(fit->max_underestimate, 0.0);
  EXPECT_LE(fit->max_underestimate, fit->max_relative_error);
  // The fit of a line with ±10% noise stays close to the line's slope.
  EXPECT_NEAR(fit->c1, 100.0, 15.0);
}

TEST(FitQuadraticCostTest, CoefficientsStayNonNegative) {
  // Plain least squares would give c0 = -100 here: y = 10·B·L - 100 (all y > 0).
  std::vector<GridPoint> shapes = Shapes();
  std::vector<double> y;
  for (const GridPoint& p : shapes) y.push_back(10.0 * p.batch_size * p.seq_len - 100.0);
  absl::StatusOr<QuadraticFit> fit = FitQuadraticCost(shapes, y);
  ASSERT_TRUE(fit.ok());
  EXPECT_GE(fit->c0, 0.0);
  EXPECT_GE(fit->c1, 0.0);
  EXPECT_GE(fit->c2, 0.0);
  EXPECT_EQ(fit->c0, 0.0);  // the unconstrained optimum has c0 < 0
  EXPECT_GT(fit->c1 + fit->c2, 0.0);
  EXPECT_LT(fit->rms_relative_error, 0.5);
}

TEST(FitQuadraticCostTest, RefusesTooFewOrMismatchedPoints) {
  std::vector<GridPoint> two = {{1, 1, 0, 0}, {2, 2, 0, 0}};
  std::vector<double> y2 = {1, 2};
  EXPECT_EQ(GetErrorKind(FitQuadraticCost(two, y2).status()), ErrorKind::kInvalidArgument);
  std::vector<GridPoint> three = {{1, 1, 0, 0}, {2, 2, 0, 0}, {0, 2, 0, 0}};
  std::vector<double> y3 = {1, 2, 3};
  EXPECT_EQ(GetErrorKind(FitQuadraticCost(three, y3).status()), ErrorKind::kInvalidArgument);
  EXPECT_EQ(GetErrorKind(FitQuadraticCost(three, y2).status()), ErrorKind::kInvalidArgument);
}

// Memory = 1 byte per padded token (c1 = 1), budget 1000 bytes, Lmax <= 512.
QuadraticFit Linear() { return QuadraticFit{0, 1, 0, 0, 0, 0}; }

TEST(RecommendBudgetsTest, LinearMemoryHandDerived) {
  BudgetLimits limits{1000, 512, 0};
  absl::StatusOr<Recommendation> r = RecommendBudgets(Linear(), limits);
  ASSERT_TRUE(r.ok()) << r.status();
  // padded: B·Lmax <= T costs at most T bytes, so T = 1000.
  EXPECT_EQ(r->padded_tokens, 1000);
  // sum: one request of L plus T-L one-token requests pads to (T-L+1)·L, largest
  // near L = (T+1)/2. T = 62 -> 32·31 = 992 fits; T = 63 -> 32·32 = 1024 does not.
  EXPECT_EQ(r->sum_tokens, 62);
  EXPECT_EQ(r->memory_bytes, 1000);
}

TEST(RecommendBudgetsTest, MaxBatchSizeBoundsThePadding) {
  BudgetLimits limits{1000, 512, 4};
  absl::StatusOr<Recommendation> r = RecommendBudgets(Linear(), limits);
  ASSERT_TRUE(r.ok());
  // sum with B <= 4: T = 253 admits at worst 4 rows of 250 (1000 bytes);
  // T = 254 admits 4 rows of 251 (1004).
  EXPECT_EQ(r->sum_tokens, 253);
  // padded with B <= 4: at T = 1001 every batch has B·L <= 1001, and B·L = 1001
  // (= 7·11·13) would need B >= 7 or L > 512, so the worst is 1000; T = 1002 admits
  // 3 rows of 334 (1002 bytes).
  EXPECT_EQ(r->padded_tokens, 1001);
}

TEST(RecommendBudgetsTest, QuadraticBudgetIsTightAgainstWorstCase) {
  QuadraticFit mem{5e6, 2e4, 50, 0, 0, 0};
  BudgetLimits limits{int64_t{1} << 30, 512, 64};
  absl::StatusOr<Recommendation> r = RecommendBudgets(mem, limits);
  ASSERT_TRUE(r.ok());
  for (bool padded : {false, true}) {
    const int64_t t = padded ? r->padded_tokens : r->sum_tokens;
    ASSERT_GT(t, 0);
    EXPECT_LE(WorstCaseBytes(mem, t, padded, limits), 1.0 * (1 << 30));
    EXPECT_GT(WorstCaseBytes(mem, t + 1, padded, limits), 1.0 * (1 << 30));
  }
  EXPECT_GE(r->padded_tokens, r->sum_tokens);
}

TEST(RecommendBudgetsTest, EverythingFitsGivesTheLargestAdmissibleBatch) {
  // 4 rows of 512 tokens cost 2048 bytes, well within 1e6.
  absl::StatusOr<Recommendation> r = RecommendBudgets(Linear(), BudgetLimits{1000000, 512, 4});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sum_tokens, 2048);
  EXPECT_EQ(r->padded_tokens, 2048);
}

TEST(RecommendBudgetsTest, NothingFitsGivesZeroAndBadLimitsAreRefused) {
  QuadraticFit big_c0{2000, 1, 0, 0, 0, 0};
  absl::StatusOr<Recommendation> r = RecommendBudgets(big_c0, BudgetLimits{1000, 512, 0});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sum_tokens, 0);
  EXPECT_EQ(r->padded_tokens, 0);
  EXPECT_EQ(GetErrorKind(RecommendBudgets(Linear(), BudgetLimits{1000, 0, 0}).status()),
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(GetErrorKind(RecommendBudgets(Linear(), BudgetLimits{-1, 512, 0}).status()),
            ErrorKind::kInvalidArgument);
}

TEST(PlanGridTest, SkipsLargeShapesAndOrdersByTokens) {
  GridOptions options;
  options.batch_sizes = {4, 1};
  options.seq_lens = {64, 16};
  options.max_tokens_per_shape = 128;
  std::vector<GridPoint> plan = PlanGrid(options);
  // [4, 64] = 256 tokens is skipped; [1, 64] and [4, 16] tie at 64 tokens and
  // the smaller batch comes first.
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].batch_size, 1);
  EXPECT_EQ(plan[0].seq_len, 16);
  EXPECT_EQ(plan[1].batch_size, 1);
  EXPECT_EQ(plan[1].seq_len, 64);
  EXPECT_EQ(plan[2].batch_size, 4);
  EXPECT_EQ(plan[2].seq_len, 16);
}

}  // namespace
}  // namespace tokenbatch::backend
