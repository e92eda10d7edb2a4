// Batcher behaviour with real threads and a recording backend. No test sleeps:
// ordering is forced with notifications (a backend call held until released).
#include "tokenbatch/runtime/batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/test_backend.h"

namespace tokenbatch {
namespace {

using testing::MakeTokens;
using testing::RecordingBackend;
using testing::SumBatcher;
using testing::SumOf;
using testing::Tokens;
using ::testing::Contains;
using ::testing::Not;

BatcherOptions SumOptions(std::int64_t budget = 1000) {
  BatcherOptions o;
  o.scheduler.cost_model = CostModel::Sum();
  o.scheduler.max_batch_tokens = budget;
  o.scheduler.max_wait = std::chrono::milliseconds(1);
  return o;
}

std::unique_ptr<SumBatcher> Make(const BatcherOptions& o, RecordingBackend& backend,
                                 SumBatcher::Hooks hooks = {}) {
  auto b = SumBatcher::Create(o, backend.AsBackend(), std::move(hooks));
  EXPECT_TRUE(b.ok()) << b.status();
  return std::move(*b);
}

TEST(BatcherTest, EveryRequestGetsItsOwnResult) {
  RecordingBackend backend;
  BatcherOptions o = SumOptions();
  o.num_workers = 2;
  auto batcher = Make(o, backend);
  std::vector<std::pair<long, SumBatcher::Future>> pending;
  for (int i = 1; i <= 200; ++i) {
    Tokens t = MakeTokens(1 + i % 37, i);
    const long expected = SumOf(t);
    auto ticket = batcher->Submit(std::move(t), 1 + i % 37);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    pending.emplace_back(expected, std::move(ticket->result));
  }
  for (auto& [expected, future] : pending) {
    auto r = future.get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, expected);
  }
  const MetricsSnapshot m = batcher->metrics();
  EXPECT_EQ(m.requests_submitted, 200u);
  EXPECT_EQ(m.requests_succeeded, 200u);
  EXPECT_EQ(m.batch_size.count(), m.batches_dispatched);
  EXPECT_EQ(static_cast<std::uint64_t>(m.batch_size.sum()), 200u);
  for (const auto& sizes : backend.batches()) {
    long total = 0;
    for (long s : sizes) total += s;
    EXPECT_LE(total, 1000);  // sum cost within budget
  }
}

TEST(BatcherTest, APoisonRequestFailsAloneInsideABatch) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  auto batcher = Make(SumOptions(), backend);
  auto first = batcher->Submit(MakeTokens(1), 1);  // occupies the worker
  backend.WaitUntilEntered();
  std::vector<SumBatcher::Future> futures;
  for (int i = 0; i < 8; ++i) {
    Tokens t = i == 5 ? Tokens{1, -1, 1} : MakeTokens(3, 10 * i);
    futures.push_back(std::move(batcher->Submit(std::move(t), 3)->result));
  }
  backend.Release();
  for (int i = 0; i < 8; ++i) {
    auto r = futures[i].get();
    if (i == 5) {
      EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kBackend) << r.status();
    } else {
      ASSERT_TRUE(r.ok()) << i << ": " << r.status();
      EXPECT_EQ(*r, SumOf(MakeTokens(3, 10 * i)));
    }
  }
  EXPECT_TRUE(first->result.get().ok());
  EXPECT_GT(batcher->metrics().isolation_retries, 0u);
  EXPECT_EQ(batcher->metrics().failures_by_kind["backend"], 1u);
}

TEST(BatcherTest, OutOfMemoryBisectsShrinksTheBudgetAndRecovers) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  backend.OomAboveTokens(300);
  BatcherOptions o = SumOptions(1000);
  o.aimd = {.decrease_factor = 0.5, .additive_increase = 100, .floor = 100};
  auto batcher = Make(o, backend);
  auto first = batcher->Submit(MakeTokens(1), 1);
  backend.WaitUntilEntered();
  std::vector<SumBatcher::Future> futures;
  for (int i = 0; i < 8; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(100), 100)->result));
  backend.Release();
  for (auto& f : futures) ASSERT_TRUE(f.get().ok());
  EXPECT_TRUE(first->result.get().ok());
  const MetricsSnapshot m = batcher->metrics();
  EXPECT_GE(m.oom_events, 1u);
  // 800 tokens OOMed: the budget fell to 400 at most, then +100 per good batch.
  EXPECT_LT(m.effective_budget, 1000);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(batcher->Submit(MakeTokens(10), 10)->result.get().ok());
  EXPECT_EQ(batcher->effective_budget(), 1000);
}

TEST(BatcherTest, OneRequestThatRunsOutOfMemoryAloneLowersTheBudgetOnce) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  backend.OomAboveTokens(50);
  BatcherOptions o = SumOptions(1000);
  o.aimd = {.decrease_factor = 0.5, .additive_increase = 100, .floor = 10};
  o.scheduler.policy = PackingPolicy::kFifo;  // all eight in one batch, whatever their lengths
  auto batcher = Make(o, backend);
  auto first = batcher->Submit(MakeTokens(1), 1);
  backend.WaitUntilEntered();
  std::vector<SumBatcher::Future> small;
  for (int i = 0; i < 7; ++i) small.push_back(std::move(batcher->Submit(MakeTokens(5), 5)->result));
  auto big = batcher->Submit(MakeTokens(60), 60);  // runs out of memory even alone
  backend.Release();
  EXPECT_TRUE(first->result.get().ok());
  for (auto& f : small) EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(GetErrorKind(big->result.get().status()), ErrorKind::kOutOfMemory);
  // 95 tokens OOM, then 75, 65 and 60 alone while bisecting: four OOM events...
  EXPECT_EQ(batcher->metrics().oom_events, 4u);
  // ...but one decrease, from the dispatched batch's cost (95 -> 47), not four
  // (which would reach the floor of 10).
  AimdBudget once(1000, o.aimd);
  once.OnOutOfMemory(95);
  EXPECT_EQ(batcher->effective_budget(), once.current());
  EXPECT_GT(batcher->effective_budget(), 40);
}

TEST(BatcherTest, ARequestThatRunsOutOfMemoryAloneGetsOutOfMemory) {
  RecordingBackend backend;
  backend.OomAboveTokens(50);
  auto batcher = Make(SumOptions(), backend);
  auto r = batcher->Submit(MakeTokens(60), 60)->result.get();
  EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kOutOfMemory);
  EXPECT_EQ(batcher->metrics().failures_by_kind["out_of_memory"], 1u);
}

TEST(BatcherTest, OversizeIsRejectedAtSubmitAndTheInputStaysWithTheCaller) {
  RecordingBackend backend;
  auto batcher = Make(SumOptions(100), backend);
  Tokens big = MakeTokens(101);
  auto r = batcher->Submit(std::move(big), 101);
  EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kOversize);
  EXPECT_EQ(big.size(), 101u);  // not moved from
  EXPECT_EQ(batcher->metrics().failures_by_kind["oversize"], 1u);
  EXPECT_EQ(GetErrorKind(batcher->Submit(Tokens{}, 0).status()), ErrorKind::kInvalidArgument);
}

TEST(BatcherTest, TruncateKeepsTheFirstMaxInputTokens) {
  RecordingBackend backend;
  BatcherOptions o = SumOptions(1000);
  o.scheduler.max_input_tokens = 4;
  o.scheduler.oversize = OversizePolicy::kTruncate;
  SumBatcher::Hooks hooks;
  hooks.slice = [](const Tokens& t, TokenWindow w) -> absl::StatusOr<Tokens> {
    return Tokens(t.begin() + w.begin, t.begin() + w.end);
  };
  auto batcher = Make(o, backend, hooks);
  auto r = batcher->Submit(MakeTokens(10), 10)->result.get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 1 + 2 + 3 + 4);
}

TEST(BatcherTest, SplitRunsWindowsAndMergesTheirResults) {
  RecordingBackend backend;
  BatcherOptions o = SumOptions(1000);
  o.scheduler.max_input_tokens = 4;
  o.scheduler.split_overlap_tokens = 1;
  o.scheduler.oversize = OversizePolicy::kSplit;
  SumBatcher::Hooks hooks;
  hooks.slice = [](const Tokens& t, TokenWindow w) -> absl::StatusOr<Tokens> {
    return Tokens(t.begin() + w.begin, t.begin() + w.end);
  };
  std::vector<TokenWindow> merged_windows;
  hooks.merge = [&](std::span<const long> parts, std::span<const TokenWindow> windows) -> absl::StatusOr<long> {
    merged_windows.assign(windows.begin(), windows.end());
    long total = 0;
    for (long p : parts) total += p;
    return total;
  };
  auto batcher = Make(o, backend, hooks);
  // 1..10 in windows [0,4) [3,7) [6,10): sums 10 + 22 + 34 = 66.
  auto r = batcher->Submit(MakeTokens(10), 10)->result.get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 66);
  EXPECT_EQ(merged_windows, (std::vector<TokenWindow>{{0, 4}, {3, 7}, {6, 10}}));
  // One failing window fails the whole request.
  Tokens poisoned = MakeTokens(10);
  poisoned[8] = -1;
  auto failed = batcher->Submit(std::move(poisoned), 10)->result.get();
  EXPECT_EQ(GetErrorKind(failed.status()), ErrorKind::kBackend);
}

TEST(BatcherTest, NoWorkersIsRefusedAtCreate) {
  RecordingBackend backend;
  BatcherOptions o = SumOptions();
  o.num_workers = 0;
  auto b = SumBatcher::Create(o, backend.AsBackend());
  EXPECT_EQ(GetErrorKind(b.status()), ErrorKind::kInvalidArgument);
  EXPECT_NE(b.status().message().find("num_workers must be >= 1, got 0"), std::string_view::npos);
}

TEST(BatcherTest, SplitWithoutHooksIsRefusedAtCreate) {
  RecordingBackend backend;
  BatcherOptions o = SumOptions();
  o.scheduler.oversize = OversizePolicy::kSplit;
  auto b = SumBatcher::Create(o, backend.AsBackend());
  EXPECT_EQ(GetErrorKind(b.status()), ErrorKind::kInvalidArgument);
  EXPECT_NE(b.status().message().find("slice"), std::string_view::npos);
}

TEST(BatcherTest, CancelledQueuedRequestIsNeverComputed) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  auto batcher = Make(SumOptions(), backend);
  auto first = batcher->Submit(MakeTokens(1), 1);
  backend.WaitUntilEntered();
  auto victim = batcher->Submit(MakeTokens(5, 1000), 5);
  EXPECT_TRUE(batcher->Cancel(victim->id));
  EXPECT_FALSE(batcher->Cancel(victim->id));  // exactly once
  EXPECT_EQ(GetErrorKind(victim->result.get().status()), ErrorKind::kCancelled);
  backend.Release();
  EXPECT_TRUE(first->result.get().ok());
  batcher->Shutdown(ShutdownMode::kDrain);
  EXPECT_THAT(backend.seen_sums(), Not(Contains(SumOf(MakeTokens(5, 1000)))));
}

TEST(BatcherTest, CancelWhileRunningDropsTheResult) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  auto batcher = Make(SumOptions(), backend);
  auto running = batcher->Submit(MakeTokens(3), 3);
  backend.WaitUntilEntered();
  EXPECT_TRUE(batcher->Cancel(running->id));
  backend.Release();
  EXPECT_EQ(GetErrorKind(running->result.get().status()), ErrorKind::kCancelled);
}

TEST(BatcherTest, ExpiredDeadlineIsResolvedWithoutRunning) {
  RecordingBackend backend;
  auto batcher = Make(SumOptions(), backend);
  SubmitOptions late;
  late.deadline = SteadyClock::now() - std::chrono::milliseconds(1);
  auto r = batcher->Submit(MakeTokens(2, 500), 2, late)->result.get();
  EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kDeadlineExceeded);
  EXPECT_TRUE(backend.seen_sums().empty());
}

TEST(BatcherTest, QueueFullIsImmediateAndTyped) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  BatcherOptions o = SumOptions();
  o.scheduler.max_queue_size = 2;
  auto batcher = Make(o, backend);
  auto first = batcher->Submit(MakeTokens(1), 1);
  backend.WaitUntilEntered();
  auto a = batcher->Submit(MakeTokens(1), 1);
  auto b = batcher->Submit(MakeTokens(1), 1);
  Tokens c = MakeTokens(4);
  auto refused = batcher->Submit(std::move(c), 4);
  EXPECT_EQ(GetErrorKind(refused.status()), ErrorKind::kQueueFull);
  EXPECT_EQ(c.size(), 4u);
  backend.Release();
  EXPECT_TRUE(a->result.get().ok());
  EXPECT_TRUE(b->result.get().ok());
  EXPECT_EQ(batcher->metrics().failures_by_kind["queue_full"], 1u);
}

}  // namespace
}  // namespace tokenbatch
