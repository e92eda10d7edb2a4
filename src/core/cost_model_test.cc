#include "tokenbatch/core/cost_model.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch {
namespace {

BatchShape ShapeOf(std::initializer_list<std::int64_t> lengths) {
  BatchShape shape;
  for (auto l : lengths) shape = shape.With(l);
  return shape;
}

TEST(CostModelTest, SeedBatchCostsSumVersusPadded) {
  // The seed note's batch: it budgets 3,330 tokens but a padded backend computes 7,200.
  const BatchShape seed = ShapeOf({30, 1800, 300, 1200});
  EXPECT_EQ(seed.size, 4);
  EXPECT_EQ(seed.max_tokens, 1800);
  EXPECT_EQ(CostModel::Sum().Cost(seed), 3330);
  EXPECT_EQ(CostModel::Padded().Cost(seed), 7200);
  EXPECT_NEAR(seed.padding_efficiency(), 3330.0 / 7200.0, 1e-12);
}

TEST(CostModelTest, MemoryModelIsQuadraticInLength) {
  auto model = CostModel::Memory(1000, 4, 0.5);
  ASSERT_TRUE(model.ok()) << model.status();
  // c0 + c1*B*L + c2*B*L^2 = 1000 + 4*2*10 + 0.5*2*100 = 1180 bytes.
  EXPECT_EQ(model->Cost(ShapeOf({10, 3})), 1180);
  EXPECT_EQ(model->Cost(BatchShape{}), 0);
  EXPECT_EQ(model->unit(), "bytes");
  // Rounded up, never down: 0 + 0.3*1*1 -> 1 byte.
  auto tiny = CostModel::Memory(0, 0.3, 0);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->SingleCost(1), 1);
}

TEST(CostModelTest, MemoryModelRejectsBadCoefficients) {
  EXPECT_EQ(GetErrorKind(CostModel::Memory(-1, 1, 1).status()), ErrorKind::kInvalidArgument);
  EXPECT_EQ(GetErrorKind(CostModel::Memory(1, 0, 0).status()), ErrorKind::kInvalidArgument);
  EXPECT_EQ(GetErrorKind(CostModel::Memory(1, std::numeric_limits<double>::infinity(), 0).status()),
            ErrorKind::kInvalidArgument);
}

TEST(CostModelTest, MaxTokensWithinInvertsSingleCost) {
  EXPECT_EQ(CostModel::Sum().MaxTokensWithin(4096), 4096);
  EXPECT_EQ(CostModel::Padded().MaxTokensWithin(4096), 4096);
  auto memory = CostModel::Memory(100, 10, 1);
  ASSERT_TRUE(memory.ok());
  const std::int64_t l = memory->MaxTokensWithin(10'000);
  EXPECT_LE(memory->SingleCost(l), 10'000);
  EXPECT_GT(memory->SingleCost(l + 1), 10'000);
  EXPECT_EQ(memory->MaxTokensWithin(50), 0);  // c0 = 100 bytes alone exceeds 50
}

TEST(CostModelTest, PaddedCostSaturatesInsteadOfOverflowing) {
  const BatchShape huge{std::int64_t{1} << 40, std::int64_t{1} << 40, 1};
  EXPECT_EQ(CostModel::Padded().Cost(huge), std::numeric_limits<std::int64_t>::max());
}

TEST(CostModelTest, ParseNamesAndErrors) {
  EXPECT_EQ(CostModel::Parse("sum")->kind(), CostModelKind::kSum);
  EXPECT_EQ(CostModel::Parse("padded")->kind(), CostModelKind::kPadded);
  const auto memory = CostModel::Parse("memory");
  EXPECT_FALSE(memory.ok());
  EXPECT_NE(memory.status().message().find("calibration"), std::string_view::npos);
  const auto bad = CostModel::Parse("tokens");
  EXPECT_EQ(GetErrorKind(bad.status()), ErrorKind::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'tokens'"), std::string_view::npos);
}

TEST(ErrorsTest, KindsSurviveAndShareCodesSafely) {
  EXPECT_EQ(GetErrorKind(QueueFullError("q")), ErrorKind::kQueueFull);
  EXPECT_EQ(GetErrorKind(OutOfMemoryError("m")), ErrorKind::kOutOfMemory);
  EXPECT_EQ(QueueFullError("q").code(), OutOfMemoryError("m").code());
  EXPECT_EQ(GetErrorKind(absl::OkStatus()), ErrorKind::kNone);
  EXPECT_EQ(GetErrorKind(absl::InternalError("x")), ErrorKind::kUnclassified);
  EXPECT_EQ(ErrorKindName(ErrorKind::kShuttingDown), "shutting_down");
  EXPECT_TRUE(IsOutOfMemory(OutOfMemoryError("m")));
  EXPECT_FALSE(IsOutOfMemory(BackendError("b")));
}

}  // namespace
}  // namespace tokenbatch
