#include "service/input_limit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;

SchedulerOptions Options(CostModel cost_model, std::int64_t budget, std::int64_t max_input_tokens = 0) {
  SchedulerOptions s;
  s.cost_model = cost_model;
  s.max_batch_tokens = budget;
  s.max_input_tokens = max_input_tokens;
  return s;
}

TEST(InputLimitTest, ABudgetThatHoldsTheModelsLongestInputKeepsItAsTheLimit) {
  SchedulerOptions s = Options(CostModel::Sum(), 4096);
  absl::StatusOr<bool> raised = ResolveInputLimit(s, 256, ShortBudget::kRefuse);
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_FALSE(*raised);
  EXPECT_EQ(s.max_input_tokens, 256);
  EXPECT_EQ(s.max_batch_tokens, 4096);
  EXPECT_EQ(EffectiveMaxInputTokens(s), 256);
}

TEST(InputLimitTest, AnAskedLimitAboveThePositionsIsCappedAtThem) {
  SchedulerOptions s = Options(CostModel::Padded(), 4096, 1000);
  ASSERT_TRUE(ResolveInputLimit(s, 512, ShortBudget::kRefuse).ok());
  EXPECT_EQ(s.max_input_tokens, 512);
}

// The calibration defect: a sum budget of 89 below the model's 128 tokens
// silently became the input limit, so a 112-token input was cut to 89.
TEST(InputLimitTest, ABudgetBelowTheModelsLimitIsRefusedNamingBothFixes) {
  SchedulerOptions s = Options(CostModel::Sum(), 89);
  absl::StatusOr<bool> raised = ResolveInputLimit(s, 128, ShortBudget::kRefuse);
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(raised.status().message(),
              HasSubstr("max_batch_tokens 89 (cost model sum) holds one input of at most 89 tokens, below the input "
                        "limit of 128 tokens (the model's max_seq_length)"));
  EXPECT_THAT(raised.status().message(), HasSubstr("Raise max_batch_tokens to 128 tokens"));
  EXPECT_THAT(raised.status().message(), HasSubstr("or set max_input_tokens to 89 to cut longer inputs on purpose"));
}

TEST(InputLimitTest, AnAskedLimitThatTheBudgetCannotHoldIsRefusedToo) {
  SchedulerOptions s = Options(CostModel::Padded(), 100, 200);
  absl::StatusOr<bool> raised = ResolveInputLimit(s, 512, ShortBudget::kRefuse);
  ASSERT_FALSE(raised.ok());
  EXPECT_THAT(raised.status().message(), HasSubstr("below the input limit of 200 tokens (max_input_tokens)"));
}

TEST(InputLimitTest, AskingForTheCutIsAllowed) {
  SchedulerOptions s = Options(CostModel::Sum(), 89, 89);
  absl::StatusOr<bool> raised = ResolveInputLimit(s, 128, ShortBudget::kRefuse);
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_FALSE(*raised);
  EXPECT_EQ(EffectiveMaxInputTokens(s), 89);
}

TEST(InputLimitTest, ADefaultBudgetIsRaisedToHoldOneLongestInput) {
  SchedulerOptions s = Options(CostModel::Padded(), 4096);
  absl::StatusOr<bool> raised = ResolveInputLimit(s, 32768, ShortBudget::kRaise);
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_TRUE(*raised);
  EXPECT_EQ(s.max_batch_tokens, 32768);
  EXPECT_EQ(EffectiveMaxInputTokens(s), 32768);
}

TEST(InputLimitTest, AMemoryBudgetIsRaisedToTheBytesOfOneLongestInput) {
  absl::StatusOr<CostModel> memory = CostModel::Memory(1000, 10, 0.5);
  ASSERT_TRUE(memory.ok());
  SchedulerOptions s = Options(*memory, 2000);
  ASSERT_TRUE(ResolveInputLimit(s, 100, ShortBudget::kRaise).ok());
  EXPECT_EQ(s.max_batch_tokens, 1000 + 10 * 100 + 5000);
  EXPECT_EQ(EffectiveMaxInputTokens(s), 100);
}

TEST(InputLimitTest, WithoutAModelLimitAnUnsetOptionStaysDerivedFromTheBudget) {
  SchedulerOptions s = Options(CostModel::Sum(), 300);
  absl::StatusOr<bool> raised = ResolveInputLimit(s, 0, ShortBudget::kRefuse);
  ASSERT_TRUE(raised.ok());
  EXPECT_FALSE(*raised);
  EXPECT_EQ(s.max_input_tokens, 0);
  EXPECT_EQ(EffectiveMaxInputTokens(s), 300);
}

}  // namespace
}  // namespace tokenbatch::server
