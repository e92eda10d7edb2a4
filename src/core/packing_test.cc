// Policy-specific batch shapes: length-aware and bucketed packing, driven through
// the Scheduler with a manual clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/test_clock.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using std::chrono::milliseconds;

struct Queued {
  RequestId id;
  std::int64_t tokens;
};

std::unique_ptr<Scheduler> MakeWith(SchedulerOptions o, const std::vector<Queued>& requests,
                                    testing::ManualClock& clock) {
  auto s = Scheduler::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  for (const Queued& q : requests) {
    EXPECT_TRUE((*s)->Enqueue({.id = q.id, .tokens = q.tokens, .arrival = clock.now()}).ok());
    clock.Advance(Duration(1));  // distinct arrivals, in list order
  }
  return std::move(*s);
}

// The packing rule around a FIFO anchor, without the efficiency floor (both
// have their own tests: anchor_slack_test.cc and the floor tests below).
SchedulerOptions PlainLengthAware() {
  SchedulerOptions o;
  o.policy = PackingPolicy::kLengthAware;
  o.anchor_slack_per_token = Duration::zero();
  o.length_aware_min_padding_efficiency = 0;
  return o;
}

TEST(LengthAwareTest, PicksTheNearestLengthsAroundTheOldestRequest) {
  SchedulerOptions o = PlainLengthAware();
  o.cost_model = CostModel::Padded();
  o.max_batch_tokens = 400;
  testing::ManualClock clock;
  //   id:      1    2   3   4   5    6    7
  //   tokens: 100  10  10  10  95  105  390
  auto s = MakeWith(o, {{1, 100}, {2, 10}, {3, 10}, {4, 10}, {5, 95}, {6, 105}, {7, 390}}, clock);
  Decision d = s->Next(clock.now(), {400});
  // Anchor 100, then 95 and 105 (gap 5 each; 95 is older): 3 x 105 = 315.
  // A 10-token request would make 4 x 105 = 420 > 400, so the batch is full.
  EXPECT_THAT(d.batch, ElementsAre(1, 5, 6));
  EXPECT_EQ(d.cost, 315);
  EXPECT_EQ(d.reason, DispatchReason::kBudgetFull);
  // Next anchor is 2 (10 tokens): the three 10s together; 4 x 390 does not fit.
  d = s->Next(clock.now(), {400});
  EXPECT_THAT(d.batch, ElementsAre(2, 3, 4));
  EXPECT_DOUBLE_EQ(d.shape.padding_efficiency(), 1.0);
}

TEST(LengthAwareTest, UnderSumCostSkipsACandidateThatDoesNotFitAndTakesASmallerOne) {
  SchedulerOptions o = PlainLengthAware();
  o.cost_model = CostModel::Sum();
  o.max_batch_tokens = 1300;
  testing::ManualClock clock;
  auto s = MakeWith(o, {{1, 1000}, {2, 290}, {3, 250}, {4, 5}}, clock);
  // 1000 + 290 = 1290; 250 would overflow; 5 still fits (1295).
  Decision d = s->Next(clock.now(), {1300});
  EXPECT_THAT(d.batch, ElementsAre(1, 2, 4));
  EXPECT_EQ(d.cost, 1295);
}

TEST(LengthAwareTest, PaddingEfficiencyFloorKeepsPassagesOutOfAQueryBatch) {
  SchedulerOptions o = PlainLengthAware();
  o.max_batch_tokens = 4096;
  testing::ManualClock clock;
  //   id:      1   2   3    4    5
  //   tokens: 20  24  300  310  280
  const std::vector<Queued> queue = {{1, 20}, {2, 24}, {3, 300}, {4, 310}, {5, 280}};
  // No floor: anchor 1, then 2, then the passages while 5 × 310 = 1,550 fits.
  auto plain = MakeWith(o, queue, clock);
  Decision d = plain->Next(clock.now(), {4096, /*drain=*/true});
  EXPECT_THAT(d.batch, ElementsAre(1, 2, 5, 3, 4));
  EXPECT_NEAR(d.shape.padding_efficiency(), 934.0 / 1550.0, 1e-12);
  // Floor 0.85: adding 5 would give (44 + 280) / (3 × 280) = 0.39, so the query
  // batch stops at [1 2] (44 / 48 = 0.92) and the passages go together
  // (890 / 930 = 0.96).
  o.length_aware_min_padding_efficiency = 0.85;
  auto floored = MakeWith(o, queue, clock);
  d = floored->Next(clock.now(), {4096, true});
  EXPECT_THAT(d.batch, ElementsAre(1, 2));
  d = floored->Next(clock.now(), {4096, true});
  EXPECT_THAT(d.batch, ElementsAre(3, 4, 5));
  EXPECT_GE(d.shape.padding_efficiency(), 0.85);
}

TEST(LengthAwareTest, PaddingEfficiencyFloorOutOfRangeIsInvalid) {
  SchedulerOptions o = PlainLengthAware();
  o.length_aware_min_padding_efficiency = 1.0;
  EXPECT_FALSE(Validate(o).ok());
  o.length_aware_min_padding_efficiency = -0.1;
  EXPECT_FALSE(Validate(o).ok());
  o.length_aware_min_padding_efficiency = 0.99;
  EXPECT_TRUE(Validate(o).ok());
}

TEST(LengthAwareTest, BeatsFifoOnPaddingForAMixedQueue) {
  // Alternating short (16) and long (512) requests.
  std::vector<Queued> mixed;
  for (RequestId id = 1; id <= 64; ++id) mixed.push_back({id, id % 2 ? 16 : 512});
  auto efficiency = [&](PackingPolicy policy) {
    SchedulerOptions o;
    o.policy = policy;
    o.cost_model = CostModel::Padded();
    o.max_batch_tokens = 4096;
    testing::ManualClock clock;
    auto s = MakeWith(o, mixed, clock);
    std::int64_t real = 0, padded = 0;
    while (s->queued_requests() > 0) {
      Decision d = s->Next(clock.now(), {4096, /*drain=*/true});
      real += d.shape.sum_tokens;
      padded += d.shape.padded_tokens();
    }
    return static_cast<double>(real) / static_cast<double>(padded);
  };
  const double fifo = efficiency(PackingPolicy::kFifo);
  const double length_aware = efficiency(PackingPolicy::kLengthAware);
  EXPECT_DOUBLE_EQ(length_aware, 1.0);  // every batch is all-short or all-long
  EXPECT_LT(fifo, 0.6);
}

TEST(BucketedTest, AFullBucketGoesWhileTheAnchorsBucketWaits) {
  SchedulerOptions o;
  o.policy = PackingPolicy::kBucketed;
  o.cost_model = CostModel::Padded();
  o.max_batch_tokens = 256;
  o.bucket_bounds = {16, 64};
  o.max_wait = milliseconds(4);
  testing::ManualClock clock;
  // The oldest request (1) is long and alone in bucket 1; four 64s in bucket 1
  // would be 5 x 64 = 320 > 256, so bucket 1 is full; bucket 0 has 2 requests.
  auto s = MakeWith(o, {{1, 10}, {2, 60}, {3, 64}, {4, 64}, {5, 64}, {6, 64}, {7, 12}}, clock);
  Decision d = s->Next(clock.now(), {256});
  EXPECT_THAT(d.batch, ElementsAre(2, 3, 4, 5));
  EXPECT_EQ(d.reason, DispatchReason::kBudgetFull);
  // Bucket 0 (1 and 7) is not full: it waits for the anchor's max_wait.
  d = s->Next(clock.now(), {256});
  EXPECT_THAT(d.batch, IsEmpty());
  ASSERT_TRUE(d.wake_at.has_value());
  clock.AdvanceTo(*d.wake_at);
  d = s->Next(clock.now(), {256});
  EXPECT_THAT(d.batch, ElementsAre(1, 7));
  EXPECT_EQ(d.reason, DispatchReason::kMaxWait);
  EXPECT_THAT(s->Next(clock.now(), {256}).batch, IsEmpty());  // 6 arrived later than 1
  clock.Advance(milliseconds(1));
  EXPECT_THAT(s->Next(clock.now(), {256}).batch, ElementsAre(6));
}

TEST(BucketedTest, AnotherBucketsBatchNeverExceedsAShrunkBudget) {
  SchedulerOptions o;
  o.policy = PackingPolicy::kBucketed;
  o.cost_model = CostModel::Sum();
  o.max_batch_tokens = 100;
  o.bucket_bounds = {10};
  o.max_wait = milliseconds(10);
  testing::ManualClock clock;
  auto s = MakeWith(o, {{1, 5}, {2, 50}}, clock);
  // Budget shrunk to 20: request 2 (50 tokens, not the anchor) must not go.
  EXPECT_THAT(s->Next(clock.now(), {20}).batch, IsEmpty());
}

TEST(BucketedTest, BatchesNeverMixBuckets) {
  SchedulerOptions o;
  o.policy = PackingPolicy::kBucketed;
  o.cost_model = CostModel::Sum();
  o.bucket_bounds = {16, 64};
  testing::ManualClock clock;
  auto s = MakeWith(o, {{1, 5}, {2, 50}, {3, 500}, {4, 6}, {5, 40}}, clock);
  std::vector<std::vector<RequestId>> batches;
  while (s->queued_requests() > 0) batches.push_back(s->Next(clock.now(), {4096, true}).batch);
  EXPECT_THAT(batches, UnorderedElementsAre(ElementsAre(1, 4), ElementsAre(2, 5), ElementsAre(3)));
}

}  // namespace
}  // namespace tokenbatch
