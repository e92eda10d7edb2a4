#include "tokenbatch/runtime/aimd_budget.h"

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch {
namespace {

TEST(AimdBudgetTest, HalvesOnOomFromTheFailedBatchAndRecoversAdditively) {
  AimdBudget budget(4096, {.decrease_factor = 0.5, .additive_increase = 512, .floor = 256});
  EXPECT_EQ(budget.current(), 4096);
  budget.OnOutOfMemory(3000);  // the 3000-cost batch did not fit: min(4096, 3000) / 2
  EXPECT_EQ(budget.current(), 1500);
  budget.OnOutOfMemory(4096);  // a batch formed before the shrink: halves the current one
  EXPECT_EQ(budget.current(), 750);
  budget.OnOutOfMemory(100);
  EXPECT_EQ(budget.current(), 256);  // floor
  for (int i = 0; i < 7; ++i) budget.OnSuccess();
  EXPECT_EQ(budget.current(), 256 + 7 * 512);
  budget.OnSuccess();
  EXPECT_EQ(budget.current(), 4096);  // capped at max_batch_tokens
}

TEST(AimdBudgetTest, DefaultsDeriveFromTheBudget) {
  AimdBudget budget(3200, {});
  budget.OnOutOfMemory(3200);
  EXPECT_EQ(budget.current(), 1600);
  budget.OnSuccess();
  EXPECT_EQ(budget.current(), 1700);  // + 3200 / 32
  for (int i = 0; i < 10; ++i) budget.OnOutOfMemory(1);
  EXPECT_EQ(budget.current(), 200);  // floor 3200 / 16
}

TEST(AimdBudgetTest, ValidateNamesTheField) {
  EXPECT_NE(AimdBudget::Validate(100, {.decrease_factor = 1.0}).message().find("decrease_factor"),
            std::string_view::npos);
  EXPECT_NE(AimdBudget::Validate(100, {.floor = 101}).message().find("floor"), std::string_view::npos);
  EXPECT_TRUE(AimdBudget::Validate(100, {}).ok());
}

}  // namespace
}  // namespace tokenbatch
