// ArrivalWakeRule must say "wake" exactly when Scheduler::Enqueue would have said
// wake_worker for the same arrivals: checked step by step on small cases and
// against Enqueue itself over seeded random queues.
#include "tokenbatch/core/arrival_wake_rule.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "core/test_clock.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch {
namespace {

using std::chrono::milliseconds;

SchedulerOptions SumOptions() {
  SchedulerOptions o;
  o.cost_model = CostModel::Sum();
  o.max_batch_tokens = 100;
  o.max_batch_size = 4;
  o.max_wait = milliseconds(4);
  o.early_dispatch_fraction = 1.0;
  return o;
}

TEST(ArrivalWakeRule, EmptyQueueWakesOnFirstArrival) {
  auto s = std::move(*Scheduler::Create(SumOptions()));
  ArrivalWakeRule rule = s->WakeRuleForArrivals();
  EXPECT_TRUE(rule.OnArrival(5, 0, TimePoint{} + milliseconds(1)));
}

TEST(ArrivalWakeRule, WakesWhenTheLevelReachesTheBudgetOrTheBatchSize) {
  testing::ManualClock clock;
  auto s = std::move(*Scheduler::Create(SumOptions()));
  ASSERT_TRUE(s->Enqueue({1, 30, clock.now(), 0, std::nullopt}).ok());
  clock.Advance(milliseconds(1));

  ArrivalWakeRule by_tokens = s->WakeRuleForArrivals();
  EXPECT_FALSE(by_tokens.OnArrival(30, 0, clock.now()));  // 60 of 100
  EXPECT_FALSE(by_tokens.OnArrival(39, 0, clock.now()));  // 99
  EXPECT_TRUE(by_tokens.OnArrival(1, 0, clock.now()));    // 100: the budget is reached

  ArrivalWakeRule by_count = s->WakeRuleForArrivals();
  EXPECT_FALSE(by_count.OnArrival(1, 0, clock.now()));
  EXPECT_FALSE(by_count.OnArrival(1, 0, clock.now()));
  EXPECT_TRUE(by_count.OnArrival(1, 0, clock.now()));  // 4 requests = max_batch_size
}

TEST(ArrivalWakeRule, PriorityAndAnchorChanges) {
  testing::ManualClock clock;
  clock.Advance(milliseconds(10));
  auto s = std::move(*Scheduler::Create(SumOptions()));
  ASSERT_TRUE(s->Enqueue({1, 10, clock.now(), 1, std::nullopt}).ok());
  ArrivalWakeRule rule = s->WakeRuleForArrivals();
  EXPECT_FALSE(rule.OnArrival(90, 0, clock.now()));  // a lower level never makes the top ready
  EXPECT_TRUE(rule.OnArrival(1, 2, clock.now()));    // a higher level is served first
  ArrivalWakeRule older = s->WakeRuleForArrivals();
  EXPECT_TRUE(older.OnArrival(1, 1, clock.now() - milliseconds(1)));  // a new, older anchor
}

TEST(ArrivalWakeRule, MaxWaitZeroWakesOnEveryArrival) {
  SchedulerOptions o = SumOptions();
  o.max_wait = Duration::zero();
  auto s = std::move(*Scheduler::Create(o));
  ASSERT_TRUE(s->Enqueue({1, 10, TimePoint{}, 0, std::nullopt}).ok());
  EXPECT_TRUE(s->WakeRuleForArrivals().OnArrival(1, 0, TimePoint{}));
}

// Random queues under each cost model and policy: the rule's first "wake" is the
// first arrival for which Enqueue says wake_worker, and the two agree before it.
TEST(ArrivalWakeRule, AgreesWithEnqueueOnRandomQueues) {
  std::mt19937_64 rng(20261129);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const CostModel models[] = {CostModel::Sum(), CostModel::Padded(), *CostModel::Memory(1000, 8, 1)};
  const PackingPolicy policies[] = {PackingPolicy::kFifo, PackingPolicy::kBucketed, PackingPolicy::kLengthAware};
  int wakes = 0, quiet = 0;
  for (int trial = 0; trial < 600; ++trial) {
    SchedulerOptions o;
    o.cost_model = models[trial % 3];
    o.policy = policies[(trial / 3) % 3];
    o.max_batch_tokens = o.cost_model.kind() == CostModelKind::kMemory ? uniform(20000, 400000) : uniform(64, 4096);
    o.max_input_tokens = 64;
    o.max_batch_size = uniform(1, 32);
    o.max_wait = milliseconds(uniform(0, 3));
    o.early_dispatch_fraction = static_cast<double>(uniform(5, 10)) / 10.0;
    auto created = Scheduler::Create(o);
    ASSERT_TRUE(created.ok()) << created.status();
    Scheduler& s = **created;
    testing::ManualClock clock;
    RequestId next_id = 1;
    auto spec = [&] {
      return RequestSpec{next_id++, uniform(1, 64), clock.now() - milliseconds(uniform(0, 1) * uniform(0, 2)),
                         static_cast<int>(uniform(0, 2)), std::nullopt};
    };
    for (std::int64_t i = uniform(0, 12); i > 0; --i) {
      ASSERT_TRUE(s.Enqueue(spec()).ok());
      clock.Advance(milliseconds(uniform(0, 1)));
    }
    // Sets the budget Enqueue compares against (and may dispatch some).
    (void)s.Next(clock.now(), {uniform(o.max_batch_tokens / 2, o.max_batch_tokens), false});
    ArrivalWakeRule rule = s.WakeRuleForArrivals();
    bool woke = false;
    for (int k = 0; k < 40 && !woke; ++k) {
      const RequestSpec r = spec();
      const bool predicted = rule.OnArrival(r.tokens, r.priority, r.arrival);
      auto out = s.Enqueue(r);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(predicted, out->wake_worker) << "trial " << trial << " arrival " << k;
      woke = predicted;
      clock.Advance(milliseconds(uniform(0, 1)));
    }
    ++(woke ? wakes : quiet);
  }
  // Both outcomes are exercised, and most random queues do fill within 40 arrivals.
  EXPECT_GT(wakes, 300);
  EXPECT_GT(quiet, 0);
}

}  // namespace
}  // namespace tokenbatch
