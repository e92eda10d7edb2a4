#include "tokenbatch/core/admission.h"

#include <limits>

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch {
namespace {

SchedulerOptions Budget4096(OversizePolicy oversize) {
  SchedulerOptions o;
  o.cost_model = CostModel::Padded();
  o.max_batch_tokens = 4096;
  o.oversize = oversize;
  return o;
}

TEST(AdmissionTest, RequestOfExactlyTheBudgetIsAdmittedWhole) {
  auto plan = PlanAdmission(4096, Budget4096(OversizePolicy::kReject));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->action, AdmissionPlan::Action::kAdmit);
  ASSERT_EQ(plan->windows.size(), 1u);
  EXPECT_EQ(plan->windows[0], (TokenWindow{0, 4096}));
}

TEST(AdmissionTest, BudgetPlusOneIsRejectedNamingTheNumbers) {
  auto plan = PlanAdmission(4097, Budget4096(OversizePolicy::kReject));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(GetErrorKind(plan.status()), ErrorKind::kOversize);
  EXPECT_NE(plan.status().message().find("4097 tokens"), std::string_view::npos) << plan.status();
  EXPECT_NE(plan.status().message().find("max_input_tokens 4096"), std::string_view::npos);
}

TEST(AdmissionTest, ZeroTokensIsInvalid) {
  EXPECT_EQ(GetErrorKind(PlanAdmission(0, Budget4096(OversizePolicy::kReject)).status()),
            ErrorKind::kInvalidArgument);
}

TEST(AdmissionTest, TruncateKeepsTheFirstMaxInputTokens) {
  SchedulerOptions o = Budget4096(OversizePolicy::kTruncate);
  o.max_input_tokens = 512;
  auto plan = PlanAdmission(2000, o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->action, AdmissionPlan::Action::kTruncate);
  EXPECT_EQ(plan->windows, (std::vector<TokenWindow>{{0, 512}}));
  // max_input_tokens above what the budget can hold is capped by the budget.
  o.max_input_tokens = 10'000;
  EXPECT_EQ(EffectiveMaxInputTokens(o), 4096);
}

TEST(AdmissionTest, SplitCoversTheRequestWithOverlappingWindows) {
  SchedulerOptions o = Budget4096(OversizePolicy::kSplit);
  o.max_input_tokens = 512;
  o.split_overlap_tokens = 64;
  auto plan = PlanAdmission(1200, o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->action, AdmissionPlan::Action::kSplit);
  EXPECT_EQ(plan->windows, (std::vector<TokenWindow>{{0, 512}, {448, 960}, {896, 1200}}));
}

TEST(AdmissionTest, SplitThatCouldNeverBeQueuedIsRefusedBeforeBuildingWindows) {
  SchedulerOptions o = Budget4096(OversizePolicy::kSplit);
  o.max_input_tokens = 100;
  o.split_overlap_tokens = 0;
  o.max_queue_size = 1000;
  auto plan = PlanAdmission(std::int64_t{1} << 40, o);  // 11 billion windows
  EXPECT_EQ(GetErrorKind(plan.status()), ErrorKind::kQueueFull);
  EXPECT_NE(plan.status().message().find("max_queue_size 1000"), std::string_view::npos);
  // No overflow at the top of the range.
  const auto huge = SlidingWindows(std::numeric_limits<std::int64_t>::max(),
                                   std::numeric_limits<std::int64_t>::max() / 2 + 1, 0);
  ASSERT_EQ(huge.size(), 2u);
  EXPECT_EQ(huge.back().end, std::numeric_limits<std::int64_t>::max());
}

TEST(AdmissionTest, SlidingWindowsExamplesAndDegenerateInputs) {
  EXPECT_EQ(SlidingWindows(10, 4, 1), (std::vector<TokenWindow>{{0, 4}, {3, 7}, {6, 10}}));
  EXPECT_EQ(SlidingWindows(4, 4, 1), (std::vector<TokenWindow>{{0, 4}}));
  EXPECT_EQ(SlidingWindows(5, 4, 0), (std::vector<TokenWindow>{{0, 4}, {4, 5}}));
  EXPECT_TRUE(SlidingWindows(5, 4, 4).empty());  // overlap must be < window
  EXPECT_TRUE(SlidingWindows(0, 4, 1).empty());
}

TEST(AdmissionTest, ValidateNamesTheBadField) {
  SchedulerOptions o;
  o.max_batch_size = 0;
  EXPECT_NE(Validate(o).message().find("max_batch_size"), std::string_view::npos);
  o = SchedulerOptions{};
  o.early_dispatch_fraction = 1.5;
  EXPECT_NE(Validate(o).message().find("early_dispatch_fraction"), std::string_view::npos);
  o = SchedulerOptions{};
  o.oversize = OversizePolicy::kSplit;
  o.max_input_tokens = 100;
  o.split_overlap_tokens = 100;
  EXPECT_NE(Validate(o).message().find("split_overlap_tokens"), std::string_view::npos);
  o = SchedulerOptions{};
  o.bucket_bounds = {64, 32};
  EXPECT_FALSE(Validate(o).ok());
  EXPECT_TRUE(Validate(SchedulerOptions{}).ok());
}

TEST(AdmissionTest, PolicyNamesRoundTrip) {
  for (auto p : {PackingPolicy::kFifo, PackingPolicy::kBucketed, PackingPolicy::kLengthAware}) {
    EXPECT_EQ(*ParsePackingPolicy(PackingPolicyName(p)), p);
  }
  for (auto p : {OversizePolicy::kReject, OversizePolicy::kTruncate, OversizePolicy::kSplit}) {
    EXPECT_EQ(*ParseOversizePolicy(OversizePolicyName(p)), p);
  }
  EXPECT_FALSE(ParsePackingPolicy("random").ok());
}

}  // namespace
}  // namespace tokenbatch
