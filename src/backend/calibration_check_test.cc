// The rules a calibration must pass before it recommends (calibration_check.h),
// on hand-made grids whose true cost is known.
#include "tokenbatch/backend/calibration_check.h"

#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

// A MiniLM-like true cost: 20 KiB per token, 48 bytes per (token × length).
const QuadraticFit kTrue{0, 20 * 1024.0, 48.0};

// The default calibrate grid (B 1..32, L 16..512, B·L <= 16384) with exact peaks.
std::vector<GridPoint> ExactGrid(const QuadraticFit& cost = kTrue) {
  std::vector<GridPoint> grid;
  for (int64_t b : {1, 2, 4, 8, 16, 32}) {
    for (int64_t l : {16, 32, 64, 128, 256, 512}) {
      grid.push_back(GridPoint{b, l, 1000.0 + b * l, static_cast<int64_t>(cost.At(b, l))});
    }
  }
  return grid;
}

std::vector<double> Peaks(const std::vector<GridPoint>& points) {
  std::vector<double> y;
  for (const GridPoint& p : points) y.push_back(static_cast<double>(p.peak_bytes));
  return y;
}

TEST(MeasuredPeaksTest, ReadingsBelowTheResolutionAreNotMeasurements) {
  std::vector<GridPoint> grid = {{1, 16, 1, 0}, {1, 32, 1, 4 * kMiB - 1}, {2, 16, 1, 4 * kMiB}, {8, 512, 1, 900 * kMiB}};
  const std::vector<GridPoint> measured = MeasuredPeaks(grid, kCpuPeakResolutionBytes);
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(measured[0].batch_size, 2);
  EXPECT_EQ(measured[1].seq_len, 512);
  EXPECT_EQ(PeakResolutionBytes("cpu"), kCpuPeakResolutionBytes);
  EXPECT_EQ(PeakResolutionBytes("cuda:1"), kCudaPeakResolutionBytes);
  EXPECT_EQ(PeakResolutionBytes("cuda"), kCudaPeakResolutionBytes);
}

TEST(JudgeFitTest, AnExactFitPassesOnTheLargeShapes) {
  const std::vector<GridPoint> grid = ExactGrid();
  FitJudgement j;
  ASSERT_TRUE(JudgeFit(kTrue, grid, Peaks(grid), 0.10, FitBounds{}, "memory", &j).ok());
  EXPECT_EQ(j.large_from_tokens, 4096);  // a quarter of 32 × 512
  // B·L >= 4096: (8,512) (16,256) (16,512) (32,128) (32,256) (32,512).
  EXPECT_EQ(j.large_shapes, 6);
  EXPECT_LT(j.max_relative_error, 1e-6);
}

TEST(JudgeFitTest, OneLargeShapeFarOffIsRefusedByName) {
  std::vector<GridPoint> grid = ExactGrid();
  for (GridPoint& p : grid) {
    if (p.batch_size == 16 && p.seq_len == 512) p.peak_bytes *= 2;
  }
  FitJudgement j;
  const absl::Status s = JudgeFit(kTrue, grid, Peaks(grid), 0.10, FitBounds{}, "memory", &j);
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("[16, 512] by 50.0%"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("--threads"));
  // The report can still show what was judged.
  EXPECT_EQ(j.large_shapes, 6);
  EXPECT_NEAR(j.max_relative_error, 0.5, 1e-6);
  EXPECT_EQ(j.worst.batch_size, 16);
}

TEST(JudgeFitTest, ASmallShapeFarOffDoesNotDecide) {
  std::vector<GridPoint> grid = ExactGrid();
  grid[0].peak_bytes *= 10;  // [1, 16]: allocator noise at the bottom of the grid
  EXPECT_TRUE(JudgeFit(kTrue, grid, Peaks(grid), 0.10, FitBounds{}, "memory", nullptr).ok());
}

TEST(JudgeFitTest, ASingleLengthGridCannotSeparateTheTerms) {
  std::vector<GridPoint> grid;
  for (const GridPoint& p : ExactGrid()) {
    if (p.seq_len == 256) grid.push_back(p);
  }
  const absl::Status s = JudgeFit(kTrue, grid, Peaks(grid), 0.10, FitBounds{}, "memory", nullptr);
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("single sequence length"));
}

TEST(JudgeFitTest, TooFewLargeShapesOrPointsCannotJudge) {
  // Only the largest shape reaches a quarter of the largest B·L.
  std::vector<GridPoint> grid = {{1, 16, 1, 0}, {1, 64, 1, 0}, {2, 32, 1, 0}, {4, 64, 1, 0}, {32, 512, 1, 0}};
  for (GridPoint& p : grid) p.peak_bytes = static_cast<int64_t>(kTrue.At(p.batch_size, p.seq_len));
  EXPECT_THAT(std::string(JudgeFit(kTrue, grid, Peaks(grid), 0.10, FitBounds{}, "memory", nullptr).message()),
              HasSubstr("at least 2 are needed"));
  // Three points fit three coefficients exactly, whatever their noise: no judgement.
  grid.resize(3);
  EXPECT_THAT(std::string(JudgeFit(kTrue, grid, Peaks(grid), 0.10, FitBounds{}, "memory", nullptr).message()),
              HasSubstr("only 3 shapes"));
}

// Limits for ExactGrid: 1 GiB for forwards, Lmax 512.
BudgetLimits Limits(int64_t max_input_tokens = 512, int64_t max_batch_size = 0) {
  return BudgetLimits{int64_t{1} << 30, max_input_tokens, max_batch_size, int64_t{1} << 30};
}

TEST(AdmitsTest, EachCostModelsOwnRule) {
  const GridPoint shape{8, 256, 0, 0};
  // padded: B·Lmax <= T.
  EXPECT_TRUE(Admits(BudgetKind::kPadded, 2048, shape, kTrue, Limits()));
  EXPECT_FALSE(Admits(BudgetKind::kPadded, 2047, shape, kTrue, Limits()));
  // sum: a 256-token request and seven 1-token ones (263 tokens) pad to [8, 256].
  EXPECT_TRUE(Admits(BudgetKind::kSum, 263, shape, kTrue, Limits()));
  EXPECT_FALSE(Admits(BudgetKind::kSum, 262, shape, kTrue, Limits()));
  // memory: fitted bytes <= the budget.
  const auto fitted = static_cast<int64_t>(kTrue.At(8, 256));
  EXPECT_TRUE(Admits(BudgetKind::kMemory, fitted, shape, kTrue, Limits()));
  EXPECT_FALSE(Admits(BudgetKind::kMemory, fitted - 1, shape, kTrue, Limits()));
  // Never beyond max_input_tokens or max_batch_size.
  EXPECT_FALSE(Admits(BudgetKind::kPadded, 1 << 20, shape, kTrue, Limits(128)));
  EXPECT_FALSE(Admits(BudgetKind::kPadded, 1 << 20, shape, kTrue, Limits(512, 4)));
}

TEST(AdmitsTest, LargestAdmittedTokensHandDerived) {
  EXPECT_EQ(LargestAdmittedTokens(BudgetKind::kPadded, 1000, kTrue, Limits()), 1000);
  // sum: (T - L + 1)·L is largest at L = 500 or 501: 501 × 500.
  EXPECT_EQ(LargestAdmittedTokens(BudgetKind::kSum, 1000, kTrue, Limits()), 250500);
  EXPECT_EQ(LargestAdmittedTokens(BudgetKind::kSum, 1000, kTrue, Limits(512, 8)), 8 * 512);
  // memory: the most rows is at L = 1, 20,528 bytes a row: floor(2^30 / 20528).
  EXPECT_EQ(LargestAdmittedTokens(BudgetKind::kMemory, int64_t{1} << 30, kTrue, Limits()), 52306);
  EXPECT_EQ(LargestAdmittedTokens(BudgetKind::kMemory, 0, kTrue, Limits()), 0);
}

TEST(LimitToMeasurementsTest, NoBudgetAdmitsMoreThanWasMeasuredUnlessAsked) {
  const std::vector<GridPoint> grid = ExactGrid();
  // What the reported broken fit recommended (2^30 everywhere) fails the checks.
  const Recommendation reported{int64_t{1} << 30, int64_t{1} << 30, int64_t{1} << 30};
  EXPECT_FALSE(CheckRecommendation(reported, kTrue, grid, Limits(), false).ok());
  // The fit alone allows batches beyond the largest measured, 32 × 512 = 16,384 tokens.
  absl::StatusOr<Recommendation> fitted = RecommendBudgets(kTrue, Limits());
  ASSERT_TRUE(fitted.ok());
  ASSERT_GT(fitted->padded_tokens, 16384);
  EXPECT_THAT(std::string(CheckRecommendation(*fitted, kTrue, grid, Limits(), false).message()),
              HasSubstr("above the largest measured shape (16384 tokens)"));
  std::vector<std::string> notes;
  absl::StatusOr<Recommendation> r = LimitToMeasurements(*fitted, kTrue, grid, Limits(), false, &notes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->padded_tokens, 16384);
  // sum 255: at L = 128 it pads 128 rows to 16,384 tokens; 256 would pad 129.
  EXPECT_EQ(r->sum_tokens, 255);
  // memory: one-token rows at 20,528 bytes each, at most 16,384 of them.
  EXPECT_EQ(r->memory_bytes, 16385 * 20528 - 1);
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_THAT(notes[1], HasSubstr("padded budget lowered from " + std::to_string(fitted->padded_tokens) +
                                  " to 16384: it admitted batches of more than the 16384 tokens"));
  EXPECT_TRUE(CheckRecommendation(*r, kTrue, grid, Limits(), false).ok());
  // Asked for, extrapolation keeps the fit's budgets (and the file records it).
  absl::StatusOr<Recommendation> e = LimitToMeasurements(*fitted, kTrue, grid, Limits(), true, nullptr);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->padded_tokens, fitted->padded_tokens);
  EXPECT_TRUE(CheckRecommendation(*e, kTrue, grid, Limits(), true).ok());
}

TEST(LimitToMeasurementsTest, LongerInputsThanMeasuredNeedExtrapolation) {
  const std::vector<GridPoint> grid = ExactGrid();
  const Recommendation some{100, 1000, 1000};
  absl::StatusOr<Recommendation> r = LimitToMeasurements(some, kTrue, grid, Limits(1024), false, nullptr);
  EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("--extrapolate"));
  EXPECT_FALSE(CheckRecommendation(some, kTrue, grid, Limits(1024), false).ok());
  EXPECT_TRUE(LimitToMeasurements(some, kTrue, grid, Limits(1024), true, nullptr).ok());
}

TEST(CheckRecommendationTest, AMeasuredShapeOverTheLimitMustNotBeAdmitted) {
  std::vector<GridPoint> grid = ExactGrid();
  // [8, 256] really used 2 GiB, far above its fit and the 1 GiB limit.
  for (GridPoint& p : grid) {
    if (p.batch_size == 8 && p.seq_len == 256) p.peak_bytes = int64_t{2} << 30;
  }
  const BudgetLimits limits = Limits(512, 32);
  // A sum budget of 263 admits 256 + 7 × 1 tokens, which pad to [8, 256].
  EXPECT_THAT(std::string(CheckRecommendation(Recommendation{263, 0, 0}, kTrue, grid, limits, false).message()),
              HasSubstr("sum budget 263 admits the measured shape [8, 256], which used 2048.0 MiB"));
  EXPECT_TRUE(CheckRecommendation(Recommendation{262, 0, 0}, kTrue, grid, limits, false).ok());
  EXPECT_FALSE(CheckRecommendation(Recommendation{0, 2048, 0}, kTrue, grid, limits, false).ok());
  EXPECT_TRUE(CheckRecommendation(Recommendation{0, 2047, 0}, kTrue, grid, limits, false).ok());
  const auto fitted = static_cast<int64_t>(kTrue.At(8, 256));
  EXPECT_FALSE(CheckRecommendation(Recommendation{0, 0, fitted}, kTrue, grid, limits, false).ok());
  EXPECT_TRUE(CheckRecommendation(Recommendation{0, 0, fitted - 1}, kTrue, grid, limits, false).ok());
}

TEST(CheckRecommendationTest, AWorstCaseOverTheBudgetIsCaught) {
  const std::vector<GridPoint> grid = ExactGrid();
  BudgetLimits small = Limits();
  small.memory_budget_bytes = 100 * kMiB;  // the fit predicts [32, 512] at 704 MiB
  const absl::Status s = CheckRecommendation(Recommendation{0, 16384, 0}, kTrue, grid, small, false);
  EXPECT_THAT(std::string(s.message()), HasSubstr("padded budget 16384 admits a batch predicted at"));
  EXPECT_FALSE(CheckRecommendation(Recommendation{0, 0, 200 * kMiB}, kTrue, grid, small, false).ok());
  EXPECT_TRUE(CheckRecommendation(Recommendation{0, 0, 0}, kTrue, grid, small, false).ok());  // none
}

}  // namespace
}  // namespace tokenbatch::backend
