// RecommendBudgets: the fit-based budgets, hand-derived on small cost models.
#include "tokenbatch/backend/calibration_model.h"

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

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

}  // namespace
}  // namespace tokenbatch::backend
