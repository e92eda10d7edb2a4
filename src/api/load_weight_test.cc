// The load-balancer weight (load_weight.h): numbers in, weight out.
#include "api/load_weight.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

using std::chrono::microseconds;
constexpr microseconds kHalfAt{100'000};

TEST(LoadWeight, AnIdleReplicaAsksForFullWeight) {
  EXPECT_EQ(LoadWeightPercent(ReplicaLoad{.queued_tokens = 0, .max_batch_tokens = 8192}, kHalfAt), 100);
  EXPECT_EQ(BacklogUs(ReplicaLoad{.queued_tokens = 0, .latency = {{.fixed_us = 5000, .us_per_cost = 1}}}), 0);
}

TEST(LoadWeight, QueuedBudgetsPerWorkerWithoutALearnedLatency) {
  // One full budget queued per worker: pressure 1, weight halves.
  EXPECT_EQ(LoadWeightPercent(ReplicaLoad{.queued_tokens = 8192, .max_batch_tokens = 8192, .workers = 1}, kHalfAt), 50);
  EXPECT_EQ(LoadWeightPercent(ReplicaLoad{.queued_tokens = 16384, .max_batch_tokens = 8192, .workers = 2}, kHalfAt),
            50);
  // Three budgets on one worker: 100 / 4.
  EXPECT_EQ(LoadWeightPercent(ReplicaLoad{.queued_tokens = 3 * 8192, .max_batch_tokens = 8192}, kHalfAt), 25);
  // Nothing learned: no backlog term.
  EXPECT_EQ(BacklogUs(ReplicaLoad{.queued_tokens = 8192, .max_batch_tokens = 8192, .latency = {{}, {}}}), 0);
}

TEST(LoadWeight, QueuedInputsFillBatchesBeforeTheirTokensDo) {
  // 96 short inputs at 64 per batch: 1.5 batches although their 960 tokens are
  // far below the budget (100 / 2.5).
  const ReplicaLoad load{.queued_tokens = 960, .queued_inputs = 96, .max_batch_tokens = 8192, .max_batch_size = 64};
  EXPECT_EQ(LoadWeightPercent(load, kHalfAt), 40);
  // Backlog: 1.5 batches of 5 ms.
  ReplicaLoad learned = load;
  learned.latency = {{.fixed_us = 5000, .us_per_cost = 0}};
  EXPECT_DOUBLE_EQ(BacklogUs(learned), 7'500);
}

TEST(LoadWeight, BacklogIsQueuedWorkInLearnedBatchTime) {
  // 2,000 tokens queued (a quarter of a batch) at 20 ms per batch + 10 µs per token.
  const ReplicaLoad load{.queued_tokens = 2000,
                         .max_batch_tokens = 8000,
                         .workers = 1,
                         .latency = {{.fixed_us = 20'000, .us_per_cost = 10}}};
  EXPECT_DOUBLE_EQ(BacklogUs(load), 0.25 * 20'000 + 2000 * 10);
  // 25 ms of backlog against a half weight at 25 ms: 50 %.
  EXPECT_EQ(LoadWeightPercent(load, microseconds(25'000)), 50);
  // The same backlog matters less when the weight halves at 100 ms: 100 / 1.25.
  EXPECT_EQ(LoadWeightPercent(load, kHalfAt), 80);
}

TEST(LoadWeight, BacklogSpreadsOverWorkersAndAveragesTheirModels) {
  // 2.5 budgets; the workers' mean model is 15 ms + 2 µs/token; two workers
  // share it.
  const ReplicaLoad load{.queued_tokens = 2500,
                         .max_batch_tokens = 1000,
                         .workers = 2,
                         .latency = {{.fixed_us = 10'000, .us_per_cost = 1}, {.fixed_us = 20'000, .us_per_cost = 3}}};
  EXPECT_DOUBLE_EQ(BacklogUs(load), (2.5 * 15'000 + 2500 * 2) / 2.0);
  // A worker that has learned nothing yet is left out of the mean.
  ReplicaLoad with_new = load;
  with_new.latency.push_back({});
  EXPECT_DOUBLE_EQ(BacklogUs(with_new), BacklogUs(load));
}

TEST(LoadWeight, TheLargerPressureDecides) {
  // Queue term 4 budgets / 1 worker = 4; backlog 4 × 1 ms = 4 ms against 100 ms
  // = 0.04: the queue term decides (100 / 5).
  const ReplicaLoad queue_heavy{
      .queued_tokens = 4000, .max_batch_tokens = 1000, .latency = {{.fixed_us = 1000, .us_per_cost = 0}}};
  EXPECT_EQ(LoadWeightPercent(queue_heavy, kHalfAt), 20);
  // A slow model: a tenth of a batch, at 3 s per batch; the backlog term
  // decides (300 ms against 100 ms: 100 / 4).
  const ReplicaLoad slow{
      .queued_tokens = 100, .max_batch_tokens = 1000, .latency = {{.fixed_us = 3'000'000, .us_per_cost = 0}}};
  EXPECT_EQ(LoadWeightPercent(slow, kHalfAt), 25);
}

TEST(LoadWeight, StaysWithinOneToAHundred) {
  const ReplicaLoad huge{.queued_tokens = 1'000'000'000, .max_batch_tokens = 1, .workers = 1};
  EXPECT_EQ(LoadWeightPercent(huge, kHalfAt), 1);
  // Degenerate options do not divide by zero.
  EXPECT_EQ(LoadWeightPercent(ReplicaLoad{.queued_tokens = 0, .max_batch_tokens = 0, .workers = 0}, microseconds(0)),
            100);
  // A budget of 0 is taken as 1: five full batches queued on one worker.
  EXPECT_EQ(LoadWeightPercent(ReplicaLoad{.queued_tokens = 5, .max_batch_tokens = 0, .workers = 0}, microseconds(0)),
            17);
}

TEST(QueueAverage, WeighsEachSampleByTheTimeSinceThePrevious) {
  using std::chrono::milliseconds;
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  QueueAverage avg(milliseconds(500));
  EXPECT_TRUE(avg.empty());
  avg.Observe(t0, 0, 0);  // the first sample is the average
  EXPECT_FALSE(avg.empty());
  EXPECT_EQ(avg.tokens(), 0);
  // One time constant of a queue of 1,000 tokens / 10 inputs: 1 - 1/e of it.
  avg.Observe(t0 + milliseconds(500), 1000, 10);
  EXPECT_NEAR(avg.tokens(), 1000 * (1 - std::exp(-1.0)), 1e-9);
  EXPECT_NEAR(avg.inputs(), 10 * (1 - std::exp(-1.0)), 1e-9);
  // 400 samples 10 ms apart of a steady queue: 4 s, eight time constants, close
  // the gap to it as one sample 4 s later would.
  for (int i = 1; i <= 400; ++i) avg.Observe(t0 + milliseconds(500 + 10 * i), 1000, 10);
  EXPECT_NEAR(avg.tokens(), 1000 - 1000 * std::exp(-1.0) * std::exp(-8.0), 1e-6);
  // A queue that a batch empties half of each cycle averages to half.
  QueueAverage cycling(milliseconds(500));
  for (int i = 0; i <= 2000; ++i) cycling.Observe(t0 + milliseconds(10 * i), (i / 2) % 2 == 0 ? 0 : 800, 0);
  EXPECT_NEAR(cycling.tokens(), 400, 20);
  // A sample from the past (clocks are steady, but callers race) moves nothing back.
  cycling.Observe(t0, 0, 0);
  EXPECT_NEAR(cycling.tokens(), 400, 20);
}

TEST(AgentCheckLine, SaysReadyUpWithTheWeightThenDrainThenDown) {
  EXPECT_EQ(AgentCheckLine(ServingState::kServing, 73), "ready up 73%\n");
  EXPECT_EQ(AgentCheckLine(ServingState::kServing, 0), "ready up 1%\n");
  EXPECT_EQ(AgentCheckLine(ServingState::kServing, 250), "ready up 100%\n");
  EXPECT_EQ(AgentCheckLine(ServingState::kDraining, 73), "drain\n");
  EXPECT_EQ(AgentCheckLine(ServingState::kStopping, 73), "down\n");
}

TEST(LoadWeight, SeveralModelsAddTheirQueuesAndBacklogs) {
  const ReplicaLoad embed{.queued_tokens = 8192, .max_batch_tokens = 8192};
  const ReplicaLoad rerank{.queued_tokens = 2048, .max_batch_tokens = 2048};
  // One model is LoadWeightPercent of that model.
  EXPECT_EQ(LoadWeightPercent(ModelsLoad{.models = {embed}}, kHalfAt), LoadWeightPercent(embed, kHalfAt));
  // A full budget queued for each: pressure 2.
  EXPECT_EQ(LoadWeightPercent(ModelsLoad{.models = {embed, rerank}}, kHalfAt), 33);
  // Backlogs add too: half a batch of 120 ms and half one of 180 ms make 150 ms,
  // pressure 1.5 beside the one budget queued in all: 100 / 2.5.
  ReplicaLoad slow_embed{.queued_tokens = 4096, .max_batch_tokens = 8192, .latency = {{.fixed_us = 120'000}}};
  ReplicaLoad slow_rerank{.queued_tokens = 1024, .max_batch_tokens = 2048, .latency = {{.fixed_us = 180'000}}};
  EXPECT_EQ(LoadWeightPercent(ModelsLoad{.models = {slow_embed, slow_rerank}}, kHalfAt), 40);
}

TEST(LoadWeight, WithASharedDeviceTheQueuesAreWeighedInItsBytes) {
  // 3 inputs of 100 tokens under 1000 + 10·B·L bytes: 1000 + 3000 bytes.
  EXPECT_DOUBLE_EQ(QueuedBytes(300, 3, 1000, 10, 0), 4000);
  EXPECT_DOUBLE_EQ(QueuedBytes(300, 3, 0, 0, 0.5), 0.5 * 300 * 100);
  EXPECT_EQ(QueuedBytes(0, 0, 1000, 10, 0), 0);
  const ReplicaLoad embed{.queued_tokens = 300, .queued_inputs = 3, .max_batch_tokens = 8192};
  // The queues hold 4000 + 4000 bytes of an 8000-byte device: one device-full, weight halves.
  EXPECT_EQ(LoadWeightPercent(ModelsLoad{.models = {embed, embed}, .queued_bytes = {4000, 4000}, .limit_bytes = 8000},
                              kHalfAt),
            50);
}

}  // namespace
}  // namespace tokenbatch::server
