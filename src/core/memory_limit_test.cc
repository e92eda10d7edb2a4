// The Scheduler under a shared device memory (DecisionContext::memory_model):
// the second limit, in bytes, beside the budget. Manual clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/test_clock.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using std::chrono::milliseconds;

// bytes = 1000 + 10·B·Lmax: a fixed part and a per-padded-token part.
CostModel Bytes() { return *CostModel::Memory(1000, 10, 0); }

class MemoryLimitTest : public ::testing::TestWithParam<PackingPolicy> {
 protected:
  void SetUp() override {
    SchedulerOptions o;
    o.policy = GetParam();
    o.cost_model = CostModel::Sum();
    o.max_batch_tokens = 4096;
    o.max_wait = milliseconds(4);
    o.length_aware_min_padding_efficiency = 0;
    o.anchor_slack_per_token = Duration::zero();  // the oldest request anchors every policy
    scheduler_ = *Scheduler::Create(o);
  }
  void Add(RequestId id, std::int64_t tokens, std::optional<TimePoint> deadline = std::nullopt) {
    ASSERT_TRUE(scheduler_->Enqueue({id, tokens, clock_.now(), 0, deadline}).ok());
  }
  Decision Next(std::int64_t allowance) {
    return scheduler_->Next(clock_.now(), {.budget = 4096, .memory_model = &bytes_, .memory_allowance = allowance});
  }

  testing::ManualClock clock_;
  CostModel bytes_ = Bytes();
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_P(MemoryLimitTest, TheAllowanceCutsTheBatchAndItGoesAtOnce) {
  for (RequestId id = 1; id <= 4; ++id) Add(id, 100);
  // Three rows of 100 tokens take 1000 + 10·300 = 4000 bytes; a fourth 5000.
  const Decision d = Next(4500);
  EXPECT_EQ(d.batch.size(), 3u);
  EXPECT_EQ(d.memory_bytes, 4000);
  EXPECT_EQ(d.reason, DispatchReason::kBudgetFull);  // not held for company
  EXPECT_EQ(d.memory_needed, 0);
}

TEST_P(MemoryLimitTest, AnAnchorThatDoesNotFitWaitsForMemoryNotForTime) {
  Add(1, 300);  // alone: 1000 + 3000 = 4000 bytes
  Add(2, 10);
  Decision d = Next(3999);
  EXPECT_THAT(d.batch, IsEmpty());
  EXPECT_EQ(d.memory_needed, 4000);
  EXPECT_FALSE(d.wake_at.has_value());  // no deadline: only memory given back helps
  clock_.Advance(milliseconds(100));    // long past max_wait: still nothing
  d = Next(3999);
  EXPECT_THAT(d.batch, IsEmpty());
  EXPECT_EQ(d.memory_needed, 4000);
  // The shorter request does not overtake the anchor it waits behind.
  d = Next(4000);
  EXPECT_EQ(d.batch.front(), 1u);
  EXPECT_EQ(d.memory_needed, 0);
  EXPECT_LE(d.memory_bytes, 4000);
}

TEST_P(MemoryLimitTest, ABlockedAnchorStillWakesForADeadline) {
  Add(1, 300);
  Add(2, 10, clock_.now() + milliseconds(50));
  const Decision d = Next(100);
  EXPECT_THAT(d.batch, IsEmpty());
  ASSERT_TRUE(d.wake_at.has_value());
  EXPECT_EQ(*d.wake_at, clock_.now() + milliseconds(50) + Duration(1));
  clock_.Advance(milliseconds(51));
  EXPECT_THAT(Next(100).expired, ElementsAre(2u));
}

TEST_P(MemoryLimitTest, WithoutAMemoryModelNothingChanges) {
  Add(1, 300);
  const Decision d = scheduler_->Next(clock_.now(), {.budget = 4096, .drain = true});
  EXPECT_THAT(d.batch, ElementsAre(1u));
  EXPECT_EQ(d.memory_bytes, 0);
  EXPECT_EQ(d.memory_needed, 0);
}

// A longer candidate that does not fit raises Lmax; a shorter one may still fit.
TEST(MemoryLimitLengthAwareTest, ALongerCandidateThatDoesNotFitLeavesTheShorterOnes) {
  SchedulerOptions o;
  o.policy = PackingPolicy::kLengthAware;
  o.cost_model = CostModel::Sum();
  o.max_batch_tokens = 4096;
  o.length_aware_min_padding_efficiency = 0;
  o.anchor_slack_per_token = Duration::zero();
  auto s = *Scheduler::Create(o);
  testing::ManualClock clock;
  ASSERT_TRUE(s->Enqueue({1, 100, clock.now()}).ok());
  ASSERT_TRUE(s->Enqueue({2, 150, clock.now()}).ok());  // nearer the anchor's length: tried first
  ASSERT_TRUE(s->Enqueue({3, 40, clock.now()}).ok());
  const CostModel bytes = Bytes();  // with 150: 1000 + 10·2·150 = 4000 bytes; with 40: 3000
  const Decision d = s->Next(clock.now(), {.budget = 4096, .memory_model = &bytes, .memory_allowance = 3500});
  EXPECT_THAT(d.batch, ElementsAre(1u, 3u));
  EXPECT_EQ(d.memory_bytes, 3000);
}

INSTANTIATE_TEST_SUITE_P(Policies, MemoryLimitTest,
                         ::testing::Values(PackingPolicy::kFifo, PackingPolicy::kBucketed,
                                           PackingPolicy::kLengthAware),
                         [](const auto& info) { return std::string(PackingPolicyName(info.param)); });

}  // namespace
}  // namespace tokenbatch
