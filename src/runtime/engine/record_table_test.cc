// The engine's record table on its own: each record of a completed batch is
// resolved by its status, exactly once, with abandoned records dropped, late
// results refused, split windows merged or failed together; freed slots are
// released at the next publish and their payloads cleared.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/engine/engine_test_util.h"
#include "runtime/engine/record_table.h"

namespace tokenbatch::engine::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class RecordTableTest : public ::testing::Test {
 protected:
  RecordTableTest() {
    options_.cost_model = CostModel::Sum();
    options_.policy = PackingPolicy::kFifo;
    options_.max_batch_tokens = 1000;
    scheduler_ = std::move(*Scheduler::Create(options_));
    table_ = std::make_unique<RecordTable>(intake_, *scheduler_, recorder_, client_);
  }

  // A request scheduled as `windows` (split if more than one), queued in the
  // Scheduler at `now`; returns the request id and sets `scheduled`.
  RequestId Schedule(const std::vector<TokenWindow>& windows, std::vector<RequestId>& scheduled,
                     std::optional<TimePoint> deadline = std::nullopt, TimePoint now = Ms(0)) {
    bool wake = false;
    MutexLock lock(&engine_mu_);
    const RequestId id = *intake_.AllocatePlannedLocked(engine_mu_, windows, 0, now, scheduled, &wake);
    EngineRecord& request = intake_.Get(id);
    request.deadline = deadline;
    if (windows.size() > 1) {
      request.stage = Stage::kSplitParent;
      request.split = std::make_unique<SplitWindows>(SplitWindows{windows, scheduled, windows.size()});
    }
    for (std::size_t i = 0; i < scheduled.size(); ++i) {
      EngineRecord& r = intake_.Get(scheduled[i]);
      r.parent = windows.size() > 1 ? id : 0;
      r.index = static_cast<std::uint32_t>(i);
      Stamp(r, 0, windows[i].size(), now);
      EXPECT_TRUE(scheduler_->Admit({scheduled[i], r.tokens, now, 0, deadline}).ok());
      runner_.tokens_of[scheduled[i]] = windows[i].size();
    }
    if (deadline) table_->AddDeadline(*deadline, id);
    return id;
  }
  RequestId Schedule(std::int64_t tokens) {
    std::vector<RequestId> scheduled;
    return Schedule({{0, tokens}}, scheduled);
  }
  // Takes the next batch from the Scheduler and marks it running, as a worker does.
  std::vector<RequestId> Dispatch(TimePoint now) {
    Decision d = scheduler_->Next(now, {1000, true});
    for (RequestId id : d.batch) intake_.Get(id).stage = Stage::kInFlight;
    runner_.LoadBatch(d.batch);
    return d.batch;
  }

  SchedulerOptions options_;
  FakeClient client_;
  FakeRunner runner_;
  Intake intake_{options_, client_};
  std::unique_ptr<Scheduler> scheduler_;
  MetricsRecorder recorder_;
  std::unique_ptr<RecordTable> table_;
  Mutex engine_mu_;
};

TEST_F(RecordTableTest, EachRecordOfABatchIsResolvedByItsStatus) {
  const RequestId ok = Schedule(10), failed = Schedule(20), abandoned = Schedule(30);
  const std::vector<RequestId> batch = Dispatch(Ms(0));
  ASSERT_THAT(batch, ElementsAre(ok, failed, abandoned));
  table_->Resolve(abandoned, CancelledError("cancelled while running"), runner_);  // as Cancel would
  EXPECT_THAT(client_.cleared, IsEmpty());  // still running: its slot stays taken
  const std::vector<absl::Status> statuses{absl::OkStatus(), BackendError("boom"), absl::OkStatus()};
  table_->CompleteBatch(batch, statuses, Ms(1), runner_);
  EXPECT_EQ(runner_.outcomes.at(ok).output, 10);
  EXPECT_EQ(GetErrorKind(runner_.StatusOf(failed)), ErrorKind::kBackend);
  EXPECT_EQ(GetErrorKind(runner_.StatusOf(abandoned)), ErrorKind::kCancelled);  // not overwritten
  EXPECT_EQ(runner_.resolutions, 3);
  EXPECT_THAT(client_.cleared, UnorderedElementsAre(ok, failed, abandoned));
  EXPECT_THAT(table_->released(), UnorderedElementsAre(ok, failed, abandoned));
  EXPECT_FALSE(intake_.IsLiveRequest(ok));
}

TEST_F(RecordTableTest, ResolvingAQueuedRequestTakesItOutOfTheScheduler) {
  const RequestId a = Schedule(10), b = Schedule(20);
  table_->Resolve(a, CancelledError("cancelled"), runner_);
  EXPECT_EQ(scheduler_->queued_requests(), 1u);
  EXPECT_THAT(Dispatch(Ms(0)), ElementsAre(b));
}

TEST_F(RecordTableTest, ALateResultBecomesDeadlineExceeded) {
  std::vector<RequestId> scheduled;
  const RequestId r = Schedule({{0, 10}}, scheduled, Ms(5));
  const std::vector<RequestId> batch = Dispatch(Ms(1));
  table_->CompleteBatch(batch, std::vector<absl::Status>{absl::OkStatus()}, Ms(6), runner_);
  EXPECT_EQ(GetErrorKind(runner_.StatusOf(r)), ErrorKind::kDeadlineExceeded);
  EXPECT_FALSE(table_->next_deadline().has_value());  // resolved: its deadline entry is gone
}

TEST_F(RecordTableTest, SplitWindowsMergeWhenTheLastCompletes) {
  std::vector<RequestId> windows;
  const RequestId r = Schedule({{0, 30}, {20, 50}, {40, 70}}, windows);
  const std::vector<RequestId> batch = Dispatch(Ms(0));
  ASSERT_EQ(batch.size(), 3u);
  // Completed out of window order: the merge waits for all three.
  table_->CompleteBatch(std::vector<RequestId>{batch[2]}, std::vector<absl::Status>{absl::OkStatus()}, Ms(1), runner_);
  EXPECT_EQ(runner_.outcomes.count(r), 0u);
  runner_.LoadBatch(std::vector<RequestId>{batch[0], batch[1]});
  table_->CompleteBatch(std::vector<RequestId>{batch[0], batch[1]},
                        std::vector<absl::Status>{absl::OkStatus(), absl::OkStatus()}, Ms(1), runner_);
  ASSERT_TRUE(runner_.StatusOf(r).ok());
  EXPECT_EQ(runner_.outcomes.at(r).output, 90);
  EXPECT_EQ(runner_.resolutions, 1);
  EXPECT_THAT(client_.cleared, UnorderedElementsAre(r, windows[0], windows[1], windows[2]));
}

TEST_F(RecordTableTest, AFailedWindowFailsTheRequestAndAbandonsItsRunningSiblings) {
  std::vector<RequestId> windows;
  const RequestId r = Schedule({{0, 30}, {20, 50}, {40, 70}}, windows);
  Decision first = scheduler_->Next(Ms(0), {60, true});  // two windows fit in 60 tokens
  ASSERT_EQ(first.batch.size(), 2u);
  for (RequestId id : first.batch) intake_.Get(id).stage = Stage::kInFlight;
  runner_.LoadBatch(first.batch);
  table_->CompleteBatch(first.batch, std::vector<absl::Status>{BackendError("window 0 failed"), absl::OkStatus()},
                        Ms(1), runner_);
  EXPECT_EQ(GetErrorKind(runner_.StatusOf(r)), ErrorKind::kBackend);
  EXPECT_EQ(scheduler_->queued_requests(), 0u);  // the third window left the queue
  EXPECT_EQ(runner_.resolutions, 1);
  EXPECT_THAT(client_.cleared, UnorderedElementsAre(r, windows[0], windows[1], windows[2]));
}

TEST_F(RecordTableTest, DeadlinesExpireStrictlyAfterTheyPassEarliestFirst) {
  std::vector<RequestId> s1, s2;
  const RequestId later = Schedule({{0, 10}}, s1, Ms(9));
  const RequestId sooner = Schedule({{0, 10}}, s2, Ms(3));
  EXPECT_EQ(table_->next_deadline(), Ms(3));
  EXPECT_EQ(table_->ExpireDeadlines(Ms(3), runner_), 0u);
  EXPECT_EQ(table_->ExpireDeadlines(Ms(4), runner_), 1u);
  EXPECT_EQ(GetErrorKind(runner_.StatusOf(sooner)), ErrorKind::kDeadlineExceeded);
  EXPECT_EQ(runner_.outcomes.count(later), 0u);
  EXPECT_EQ(table_->next_deadline(), Ms(9));
  EXPECT_EQ(scheduler_->queued_requests(), 1u);
}

}  // namespace
}  // namespace tokenbatch::engine::testing
