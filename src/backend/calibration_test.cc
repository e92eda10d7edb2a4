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
