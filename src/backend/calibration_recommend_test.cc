// RecommendFromGrid end to end (fit, judgement, recommendation, limits) on grids
// with zero, noisy and far-off peaks, a single length, and the grid of the
// MiniLM run whose fit once recommended 2^30 tokens.
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenbatch/backend/calibration.h"
#include "testing/build_paths.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;
const QuadraticFit kTrue{2 * kMiB, 20 * 1024.0, 48.0};  // bytes: MiniLM-like

// The default calibrate grid with peaks from `cost` times (1 + noise(rng)), and
// peaks below 4 MiB read as 0, as the CPU probe does for shapes served from
// already-resident memory.
std::vector<GridPoint> Grid(double relative_noise, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(-relative_noise, relative_noise);
  std::vector<GridPoint> grid;
  for (int64_t b : {1, 2, 4, 8, 16, 32}) {
    for (int64_t l : {16, 32, 64, 128, 256, 512}) {
      double peak = kTrue.At(b, l) * (1 + noise(rng));
      if (peak < 4 * kMiB) peak = 0;
      grid.push_back(GridPoint{b, l, 500.0 + 2.0 * b * l, static_cast<int64_t>(peak)});
    }
  }
  return grid;
}

RecommendOptions Options() {
  RecommendOptions o;
  o.memory_limit_bytes = int64_t{6} << 30;
  o.loaded_process_bytes = 300 * kMiB;
  return o;
}

// What every recommendation must satisfy, recomputed here from each cost model's
// rule (padded: B·L <= T; sum: L + B - 1 <= T; memory: fitted bytes <= M) rather
// than through the code under test.
void ExpectWithinMeasurements(const CalibrationResult& r) {
  const BudgetLimits& lim = r.limits;
  int64_t max_tokens = 0;
  for (const GridPoint& p : r.measured) max_tokens = std::max(max_tokens, p.batch_size * p.seq_len);
  const Recommendation& rec = r.recommendation;
  EXPECT_GT(rec.padded_tokens, 0);
  EXPECT_GT(rec.sum_tokens, 0);
  EXPECT_GT(rec.memory_bytes, 0);
  EXPECT_LE(rec.memory_bytes, lim.memory_budget_bytes);
  // The budget is shrunk by the fit's worst shortfall s on the large shapes,
  // × (1 - s): the fit may predict (1 - s)·y for a shape that used y.
  double s = 0;
  for (const GridPoint& p : r.measured) {
    if (p.batch_size * p.seq_len < r.memory_judgement.large_from_tokens) continue;
    s = std::max(s, (double(p.peak_bytes) - r.memory.At(p.batch_size, p.seq_len)) / double(p.peak_bytes));
  }
  EXPECT_DOUBLE_EQ(r.shortfall, s);
  EXPECT_LE(double(lim.memory_budget_bytes), r.forward_bytes * (1 - s) + 1);
  for (int64_t l = 1; l <= lim.max_input_tokens; ++l) {
    auto rows = [&](double b) { return lim.max_batch_size > 0 ? std::min(b, double(lim.max_batch_size)) : b; };
    const double padded_rows = rows(std::floor(double(rec.padded_tokens) / double(l)));
    const double sum_rows = rows(double(rec.sum_tokens - l + 1));
    const double per_row = r.memory.c1 * double(l) + r.memory.c2 * double(l) * double(l);
    const double memory_rows = rows(std::floor((double(rec.memory_bytes) - r.memory.c0) / per_row));
    for (const double b : {padded_rows, sum_rows, memory_rows}) {
      if (b < 1) continue;
      EXPECT_LE(b * double(l), double(max_tokens)) << "L " << l;  // within the measured B·L
      EXPECT_LE(r.memory.At(int64_t(b), l), double(lim.memory_budget_bytes) * (1 + 1e-9) + 1) << "L " << l;
    }
  }
  for (const GridPoint& p : r.measured) {
    if (p.seq_len > lim.max_input_tokens) continue;
    const bool admitted = p.batch_size * p.seq_len <= rec.padded_tokens ||
                          p.seq_len + p.batch_size - 1 <= rec.sum_tokens ||
                          r.memory.At(p.batch_size, p.seq_len) <= double(rec.memory_bytes);
    if (admitted) {
      EXPECT_LE(double(p.peak_bytes), r.forward_bytes) << p.batch_size << "x" << p.seq_len;
    }
  }
}

TEST(RecommendFromGridTest, ZeroPeaksAreLeftOutAndNoisyPeaksStillRecommend) {
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(Grid(0.03), Options());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->refusal, "");
  // [1,16] [1,32] [1,64] [2,16] [2,32] [4,16] are below 4 MiB and read 0.
  EXPECT_EQ(r->measured.size(), 36u - 6u);
  EXPECT_NEAR(r->memory.At(32, 512), kTrue.At(32, 512), 0.05 * kTrue.At(32, 512));
  ExpectWithinMeasurements(*r);
  // 6 GiB leaves room for far more than 32 × 512: the budget stops at what was measured.
  EXPECT_EQ(r->recommendation.padded_tokens, 32 * 512);
  EXPECT_GT(r->fitted.padded_tokens, 32 * 512);
  EXPECT_THAT(r->notes, ::testing::Contains(HasSubstr("padded budget lowered from")));
  EXPECT_THAT(r->notes, ::testing::Contains(HasSubstr("more than the 16384 tokens (B*L) of the largest measured")));
}

TEST(RecommendFromGridTest, AMeasuredShapeOverTheLimitLowersTheBudgetBelowIt) {
  std::vector<GridPoint> grid = Grid(0.0);
  for (GridPoint& p : grid) {
    if (p.batch_size == 4 && p.seq_len == 512) p.peak_bytes *= 3;  // used 3x what the fit says
  }
  RecommendOptions o = Options();
  o.memory_limit_bytes = 578 * kMiB;  // 578 x 0.9 - 300 = 220.2 MiB for forwards
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(grid, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->refusal, "");
  EXPECT_THAT(r->notes, ::testing::Contains(HasSubstr("the measured shape [4, 512] used")));
  EXPECT_LT(double(r->limits.memory_budget_bytes), r->memory.At(4, 512));
  ExpectWithinMeasurements(*r);
}

TEST(RecommendFromGridTest, ExtrapolationIsOnlyWhatWasAskedFor) {
  RecommendOptions o = Options();
  o.allow_extrapolation = true;
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(Grid(0.03), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->recommendation.padded_tokens, r->fitted.padded_tokens);
  EXPECT_GT(r->recommendation.padded_tokens, 32 * 512);
  o.allow_extrapolation = false;
  o.max_input_tokens = 1024;  // longer than any measured length
  r = RecommendFromGrid(Grid(0.03), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->refusal, HasSubstr("longer than the longest measured sequence (512 tokens)"));
  EXPECT_EQ(r->recommendation.padded_tokens, 0);
}

TEST(RecommendFromGridTest, PeaksTooNoisyToFitRecommendNothing) {
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(Grid(0.80), Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->refusal, HasSubstr("the memory fit misses the large shape"));
  EXPECT_EQ(r->recommendation.padded_tokens, 0);
  EXPECT_EQ(r->recommendation.memory_bytes, 0);
}

TEST(RecommendFromGridTest, ASingleLengthGridRecommendsNothing) {
  std::vector<GridPoint> grid;
  for (const GridPoint& p : Grid(0.0)) {
    if (p.seq_len == 512) grid.push_back(p);
  }
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(grid, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->refusal, HasSubstr("single sequence length"));
}

TEST(RecommendFromGridTest, OneShapeFarOff) {
  // A large shape far off: the fit cannot follow both it and its neighbours.
  std::vector<GridPoint> large_off = Grid(0.0);
  for (GridPoint& p : large_off) {
    if (p.batch_size == 32 && p.seq_len == 256) p.peak_bytes *= 3;
  }
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(large_off, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->refusal, HasSubstr("misses the large shape"));
  // A small measured shape far off pulls a relative fit, but the large shapes
  // decide: the recommendation stands and stays within the measurements.
  std::vector<GridPoint> small_off = Grid(0.0);
  for (GridPoint& p : small_off) {
    if (p.batch_size == 2 && p.seq_len == 128) p.peak_bytes *= 3;
  }
  r = RecommendFromGrid(small_off, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->refusal, "");
  ExpectWithinMeasurements(*r);
}

TEST(RecommendFromGridTest, AllZeroPeaksRecommendNothing) {
  std::vector<GridPoint> grid = Grid(0.0);
  for (GridPoint& p : grid) p.peak_bytes = 0;
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(grid, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->refusal, HasSubstr("only 0 of 36 shapes"));
  RecommendOptions o = Options();
  o.memory_limit_bytes = 100 * kMiB;  // less than the loaded process
  EXPECT_EQ(GetErrorKind(RecommendFromGrid(grid, o).status()), ErrorKind::kInvalidArgument);
}

// The grid of the report that found calibrate recommending 2^30 tokens: three
// shapes read 0 bytes, and its old fit was pulled to 0 by them.
TEST(RecommendFromGridTest, TheReportedGridRecommendsWithinWhatItMeasured) {
  const std::string path = tokenbatch::testing::TestDataDir() + "/calibration/minilm_cpu_2_30.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const nlohmann::json file = nlohmann::json::parse(in);
  std::vector<GridPoint> grid;
  for (const nlohmann::json& g : file.at("grid")) {
    grid.push_back(GridPoint{g.at("batch_size").get<int64_t>(), g.at("seq_len").get<int64_t>(),
                             g.at("latency_us").get<double>(), g.at("peak_bytes").get<int64_t>()});
  }
  ASSERT_EQ(grid.size(), 36u);
  RecommendOptions o = Options();  // --memory-limit 6GiB, headroom 10%
  o.loaded_process_bytes = file.at("loaded_process_bytes").get<int64_t>();
  absl::StatusOr<CalibrationResult> r = RecommendFromGrid(grid, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->refusal, "");
  EXPECT_LT(r->measured.size(), grid.size());  // the zeros (and other sub-resolution readings) are out
  for (const GridPoint& p : r->measured) EXPECT_GE(p.peak_bytes, kCpuPeakResolutionBytes);
  // The fit follows the large shapes instead of the zeros.
  EXPECT_NEAR(r->memory.At(16, 512), 780705792.0, 0.35 * 780705792.0);
  EXPECT_NE(r->recommendation.padded_tokens, int64_t{1} << 30);
  EXPECT_LE(r->recommendation.padded_tokens, 32 * 512);
  ExpectWithinMeasurements(*r);
  // The file's own recommendation fails the checks serve now applies to it.
  std::vector<GridPoint> measured = MeasuredPeaks(grid, kCpuPeakResolutionBytes);
  BudgetLimits limits{file.at("memory_budget_bytes").get<int64_t>(), 512, 0,
                      file.at("forward_bytes").get<int64_t>()};
  const QuadraticFit old_fit{0, 0, 1.02092e-07};
  EXPECT_FALSE(CheckRecommendation(Recommendation{int64_t{1} << 30, int64_t{1} << 30, 1956418765}, old_fit,
                                   measured, limits, false)
                   .ok());
  std::vector<double> peaks;
  for (const GridPoint& p : measured) peaks.push_back(static_cast<double>(p.peak_bytes));
  EXPECT_THAT(std::string(JudgeFit(old_fit, measured, peaks, 0.35, FitBounds{}, "memory", nullptr).message()),
              HasSubstr("the memory fit misses the large shape"));
}

}  // namespace
}  // namespace tokenbatch::backend
