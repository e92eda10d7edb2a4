// Step-by-step tests of the Scheduler with a manual clock: each test queues
// requests, calls Next at chosen times and checks the batch it returns.
#include "tokenbatch/core/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "core/test_clock.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using std::chrono::milliseconds;

class SchedulerTest : public ::testing::Test {
 protected:
  void Make(SchedulerOptions o) {
    auto s = Scheduler::Create(o);
    ASSERT_TRUE(s.ok()) << s.status();
    scheduler_ = std::move(*s);
    budget_ = o.max_batch_tokens;
  }
  EnqueueOutcome Add(RequestId id, std::int64_t tokens, int priority = 0,
                     std::optional<TimePoint> deadline = std::nullopt) {
    auto out = scheduler_->Enqueue({id, tokens, clock_.now(), priority, deadline});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or(EnqueueOutcome{});
  }
  Decision Next(bool drain = false) { return scheduler_->Next(clock_.now(), {budget_, drain}); }

  testing::ManualClock clock_;
  std::unique_ptr<Scheduler> scheduler_;
  std::int64_t budget_ = 0;
};

SchedulerOptions SeedOptions() {
  SchedulerOptions o;
  o.policy = PackingPolicy::kFifo;
  o.cost_model = CostModel::Sum();
  o.max_batch_tokens = 4096;
  o.max_batch_size = 64;
  o.max_wait = milliseconds(4);
  o.early_dispatch_fraction = 0.9;
  return o;
}

enum : RequestId { A = 1, B, C, D, E };

// Admit queues exactly as Enqueue does (the Batcher settles its intake with it),
// with the same errors; only the wake decision is left out.
TEST_F(SchedulerTest, AdmitQueuesLikeEnqueueWithTheSameErrors) {
  SchedulerOptions o = SeedOptions();
  o.max_input_tokens = 2000;
  Make(o);
  for (RequestId id : {A, B, C, D, E}) {
    const std::int64_t tokens[] = {0, 30, 1800, 300, 1200, 1500};
    ASSERT_TRUE(scheduler_->Admit({id, tokens[id], clock_.now(), 0, std::nullopt}).ok());
  }
  EXPECT_EQ(scheduler_->queued_requests(), 5u);
  EXPECT_EQ(scheduler_->queued_tokens(), 30 + 1800 + 300 + 1200 + 1500);
  EXPECT_EQ(scheduler_->Admit({A, 10, clock_.now(), 0, std::nullopt}).code(),
            absl::StatusCode::kInvalidArgument);  // duplicate id
  EXPECT_EQ(scheduler_->Admit({9, 0, clock_.now(), 0, std::nullopt}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GetErrorKind(scheduler_->Admit({9, 2001, clock_.now(), 0, std::nullopt})), ErrorKind::kOversize);
  EXPECT_EQ(scheduler_->queued_requests(), 5u);
  EXPECT_THAT(Next().batch, ElementsAre(A, B, C, D));  // the seed's example, as with Enqueue
}

TEST_F(SchedulerTest, SeedWorkedExampleDispatchesABCDThenE) {
  // A 30 | B 1800 | C 300 | D 1200 -> Σ 3330; E 1500 would make 4830 > 4096.
  Make(SeedOptions());
  Add(A, 30), Add(B, 1800), Add(C, 300), Add(D, 1200), Add(E, 1500);
  Decision first = Next();
  EXPECT_THAT(first.batch, ElementsAre(A, B, C, D));
  EXPECT_EQ(first.cost, 3330);
  EXPECT_EQ(first.reason, DispatchReason::kBudgetFull);
  // E starts the next batch and waits max_wait for company.
  Decision wait = Next();
  EXPECT_THAT(wait.batch, IsEmpty());
  EXPECT_EQ(wait.wake_at, clock_.now() + milliseconds(4));
  clock_.Advance(milliseconds(4));
  Decision second = Next();
  EXPECT_THAT(second.batch, ElementsAre(E));
  EXPECT_EQ(second.reason, DispatchReason::kMaxWait);
  EXPECT_EQ(scheduler_->queued_requests(), 0u);
}

TEST_F(SchedulerTest, SeedArrivalsUnderPaddedCostNeverExceedTheBudget) {
  for (auto policy : {PackingPolicy::kFifo, PackingPolicy::kBucketed, PackingPolicy::kLengthAware}) {
    SCOPED_TRACE(PackingPolicyName(policy));
    SchedulerOptions o = SeedOptions();
    o.cost_model = CostModel::Padded();
    o.policy = policy;
    Make(o);
    Add(A, 30), Add(B, 1800), Add(C, 300), Add(D, 1200), Add(E, 1500);
    std::vector<RequestId> seen;
    for (int i = 0; i < 10 && scheduler_->queued_requests() > 0; ++i) {
      Decision d = Next(/*drain=*/true);
      ASSERT_FALSE(d.batch.empty());
      EXPECT_LE(d.cost, 4096);
      EXPECT_EQ(d.cost, d.shape.size * d.shape.max_tokens);
      seen.insert(seen.end(), d.batch.begin(), d.batch.end());
    }
    EXPECT_THAT(seen, UnorderedElementsAre(A, B, C, D, E));
  }
}

TEST_F(SchedulerTest, FifoUnderPaddedCostCutsWhereTheSeedOverflows) {
  SchedulerOptions o = SeedOptions();
  o.cost_model = CostModel::Padded();
  Make(o);
  Add(A, 30), Add(B, 1800), Add(C, 300), Add(D, 1200), Add(E, 1500);
  EXPECT_THAT(Next().batch, ElementsAre(A, B));  // + C would be 3 x 1800 = 5400
  EXPECT_THAT(Next().batch, ElementsAre(C, D));  // + E would be 3 x 1500 = 4500
  EXPECT_THAT(Next(true).batch, ElementsAre(E));
}

TEST_F(SchedulerTest, RequestOfExactlyTheBudgetIsDispatchedAlone) {
  SchedulerOptions o = SeedOptions();
  o.cost_model = CostModel::Padded();
  Make(o);
  Add(A, 4096);
  Add(B, 1);
  Decision d = Next();
  EXPECT_THAT(d.batch, ElementsAre(A));
  EXPECT_EQ(d.cost, 4096);
  EXPECT_EQ(d.reason, DispatchReason::kBudgetFull);
  auto over = scheduler_->Enqueue({.id = C, .tokens = 4097, .arrival = clock_.now()});
  EXPECT_EQ(GetErrorKind(over.status()), ErrorKind::kOversize);
}

TEST_F(SchedulerTest, EarlyDispatchAtTheFractionOfTheBudget) {
  SchedulerOptions o = SeedOptions();
  o.max_batch_tokens = 1000;
  Make(o);
  Add(A, 500);
  EXPECT_THAT(Next().batch, IsEmpty());
  Add(B, 399);  // 899 < 900
  EXPECT_THAT(Next().batch, IsEmpty());
  Add(C, 1);  // 900 >= 0.9 x 1000
  Decision d = Next();
  EXPECT_THAT(d.batch, ElementsAre(A, B, C));
  EXPECT_EQ(d.reason, DispatchReason::kEarlyDispatch);
}

TEST_F(SchedulerTest, MaxBatchSizeClosesTheBatch) {
  SchedulerOptions o = SeedOptions();
  o.max_batch_size = 3;
  Make(o);
  for (RequestId id = 1; id <= 5; ++id) Add(id, 10);
  Decision d = Next();
  EXPECT_THAT(d.batch, ElementsAre(1, 2, 3));
  EXPECT_EQ(d.reason, DispatchReason::kMaxBatchSize);
}

TEST_F(SchedulerTest, MaxWaitIsExactToTheTick) {
  Make(SeedOptions());
  Add(A, 10);
  const TimePoint due = clock_.now() + milliseconds(4);
  EXPECT_EQ(Next().wake_at, due);
  clock_.AdvanceTo(due - Duration(1));
  EXPECT_THAT(Next().batch, IsEmpty());
  clock_.AdvanceTo(due);
  EXPECT_THAT(Next().batch, ElementsAre(A));
}

TEST_F(SchedulerTest, ZeroMaxWaitDispatchesImmediately) {
  SchedulerOptions o = SeedOptions();
  o.max_wait = Duration::zero();
  Make(o);
  EXPECT_TRUE(Add(A, 10).wake_worker);
  EXPECT_THAT(Next().batch, ElementsAre(A));
}

TEST_F(SchedulerTest, HigherPriorityIsServedFirst) {
  Make(SeedOptions());
  Add(A, 10, /*priority=*/0);
  clock_.Advance(milliseconds(1));
  Add(B, 10, /*priority=*/5);
  clock_.Advance(milliseconds(10));
  EXPECT_THAT(Next().batch, ElementsAre(B));
  EXPECT_THAT(Next().batch, ElementsAre(A));
}

TEST_F(SchedulerTest, ExpiredRequestsAreReturnedAndNeverDispatched) {
  Make(SeedOptions());
  Add(A, 10, 0, clock_.now() + milliseconds(1));
  Add(B, 10);
  Decision d = Next();
  EXPECT_EQ(d.wake_at, clock_.now() + milliseconds(1) + Duration(1));  // expiry before max_wait
  clock_.Advance(milliseconds(2));
  d = Next();
  EXPECT_THAT(d.expired, ElementsAre(A));
  EXPECT_THAT(d.batch, IsEmpty());  // B alone waits until its max_wait
  clock_.Advance(milliseconds(2));
  EXPECT_THAT(Next().batch, ElementsAre(B));
}

TEST_F(SchedulerTest, RemovedRequestsAreNotDispatched) {
  Make(SeedOptions());
  Add(A, 10), Add(B, 10);
  EXPECT_TRUE(scheduler_->Remove(A));
  EXPECT_FALSE(scheduler_->Remove(A));
  EXPECT_THAT(Next(true).batch, ElementsAre(B));
  EXPECT_EQ(scheduler_->queued_tokens(), 0);
}

TEST_F(SchedulerTest, QueueLimitsFailWithQueueFull) {
  SchedulerOptions o = SeedOptions();
  o.max_queue_size = 2;
  o.max_queued_tokens = 100;
  Make(o);
  Add(A, 60);
  auto too_many_tokens = scheduler_->Enqueue({.id = B, .tokens = 41, .arrival = clock_.now()});
  EXPECT_EQ(GetErrorKind(too_many_tokens.status()), ErrorKind::kQueueFull);
  EXPECT_NE(too_many_tokens.status().message().find("max_queued_tokens 100"), std::string_view::npos);
  Add(B, 40);
  auto too_many = scheduler_->Enqueue({.id = C, .tokens = 1, .arrival = clock_.now()});
  EXPECT_EQ(GetErrorKind(too_many.status()), ErrorKind::kQueueFull);
  EXPECT_EQ(GetErrorKind(scheduler_->Enqueue({.id = A, .tokens = 1, .arrival = clock_.now()}).status()), ErrorKind::kQueueFull);
  EXPECT_EQ(scheduler_->queued_requests(), 2u);
}

TEST_F(SchedulerTest, DuplicateIdIsRefused) {
  Make(SeedOptions());
  Add(A, 10);
  EXPECT_EQ(GetErrorKind(scheduler_->Enqueue({.id = A, .tokens = 5, .arrival = clock_.now()}).status()),
            ErrorKind::kInvalidArgument);
}

TEST_F(SchedulerTest, DrainDispatchesWithoutWaiting) {
  Make(SeedOptions());
  Add(A, 10);
  Decision d = Next(/*drain=*/true);
  EXPECT_THAT(d.batch, ElementsAre(A));
  EXPECT_EQ(d.reason, DispatchReason::kDrain);
}

TEST_F(SchedulerTest, ShrunkBudgetStillDispatchesTheAnchorAlone) {
  Make(SeedOptions());
  Add(A, 3000), Add(B, 10);
  budget_ = 1000;  // AIMD shrank the budget below A's own cost
  Decision d = Next();
  EXPECT_THAT(d.batch, ElementsAre(A));
  EXPECT_EQ(d.reason, DispatchReason::kBudgetFull);
}

TEST_F(SchedulerTest, WakeHintOnlyWhenABatchMayBeReady) {
  SchedulerOptions o = SeedOptions();
  o.max_batch_tokens = 100;
  Make(o);
  EXPECT_TRUE(Add(1, 10).wake_worker);   // empty queue: a new wake_at is needed
  EXPECT_FALSE(Add(2, 10).wake_worker);  // 20 < 90: the pending wake_at stands
  EXPECT_TRUE(Add(3, 70).wake_worker);   // 90 >= 0.9 x 100
  EXPECT_TRUE(Add(4, 5, /*priority=*/1).wake_worker);  // a new top level
}

TEST_F(SchedulerTest, ExtremeTimesNeitherOverflowNorSpin) {
  // A deadline of TimePoint::max() ("never") and max_wait of Duration::max()
  // ("only fill dispatches") must give a wake time in the future, not wrap around.
  SchedulerOptions o = SeedOptions();
  o.max_wait = Duration::max();
  Make(o);
  Add(A, 10, 0, TimePoint::max());
  Decision d = Next();
  EXPECT_THAT(d.batch, IsEmpty());
  ASSERT_TRUE(d.wake_at.has_value());
  EXPECT_GT(*d.wake_at, clock_.now());
}

TEST_F(SchedulerTest, Int64MaxBudgetIsValid) {
  SchedulerOptions o = SeedOptions();
  o.max_batch_tokens = std::numeric_limits<std::int64_t>::max();
  EXPECT_TRUE(Validate(o).ok());  // returns: the search no longer overflows
  EXPECT_EQ(EffectiveMaxInputTokens(o), std::int64_t{1} << 62);
}

TEST_F(SchedulerTest, AnOlderArrivalWakesTheWorker) {
  Make(SeedOptions());
  clock_.Advance(std::chrono::milliseconds(5));
  Add(A, 10);
  auto older = scheduler_->Enqueue({.id = B, .tokens = 10, .arrival = clock_.now() - std::chrono::milliseconds(3)});
  ASSERT_TRUE(older.ok());
  EXPECT_TRUE(older->wake_worker);  // the max_wait wake time moved earlier
}

}  // namespace
}  // namespace tokenbatch
