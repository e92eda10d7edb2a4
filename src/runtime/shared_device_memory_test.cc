// Two models' batch engines sharing one device's memory (SharedDeviceMemory):
// step by step on a manual clock, one model's batch running while the other
// decides; then two threaded Batchers with interleaved large requests, whose
// batches in flight never exceed the shared limit together (and, without the
// shared memory, do).
#include "tokenbatch/runtime/shared_device_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "runtime/engine/engine_test_util.h"
#include "runtime/test_backend.h"
#include "testing/wait_until.h"

namespace tokenbatch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// 10 bytes per padded token: bytes = 10·B·Lmax.
CostModel TenBytesPerToken() { return *CostModel::Memory(0, 10, 0); }

std::shared_ptr<SharedDeviceMemory> Device(std::int64_t limit) {
  auto device = SharedDeviceMemory::Create({limit, {{.name = "embed"}, {.name = "rerank"}}});
  EXPECT_TRUE(device.ok()) << device.status();
  return *device;
}

BatcherOptions Sharing(const std::shared_ptr<SharedDeviceMemory>& device, std::size_t model) {
  BatcherOptions o = engine::testing::SmallOptions();
  o.scheduler.max_batch_tokens = 1000;
  o.scheduler.max_batch_size = 8;
  o.device_memory = DeviceMemoryShare{.device = device, .model = model, .memory_model = TenBytesPerToken()};
  return o;
}

TEST(SharedDeviceMemoryStepTest, AModelWaitsForTheMemoryTheOthersBatchHolds) {
  using engine::testing::Ms;
  using engine::testing::SubmitAt;
  auto device = Device(10000);
  engine::testing::FakeClient client_a, client_b;
  engine::testing::FakeRunner embed, rerank;
  auto a = engine::testing::MakeEngine(Sharing(device, 0), client_a);
  auto b = engine::testing::MakeEngine(Sharing(device, 1), client_b);
  for (int i = 0; i < 4; ++i) SubmitAt(*a, embed, Ms(0), 150);  // 10·4·150 = 6000 bytes
  const RequestId long_one = SubmitAt(*b, rerank, Ms(0), 500);   // alone: 5000 bytes
  SubmitAt(*b, rerank, Ms(0), 300);
  // While the embedder's batch runs, the reranker decides.
  engine::WorkerStep during;
  embed.rule = [&](auto, auto, auto, auto&) {
    EXPECT_EQ(device->snapshot().in_flight_bytes, 6000);
    during = b->StepWorker(rerank, Ms(5));
  };
  const engine::WorkerStep first = a->StepWorker(embed, Ms(5));
  EXPECT_THAT(first.batch, SizeIs(4));
  EXPECT_THAT(during.batch, IsEmpty());  // 5000 bytes needed, 4000 free
  EXPECT_FALSE(during.wake_at.has_value());
  // The embedder's batch has ended: the reranker's anchor fits, and its other
  // input beside it: 10·2·500 = 10000 bytes.
  const SharedDeviceMemory::Snapshot waiting = device->snapshot();
  EXPECT_EQ(waiting.models[1].waiting_for_bytes, 5000);
  EXPECT_EQ(waiting.models[1].waits, 1u);
  EXPECT_EQ(waiting.in_flight_bytes, 0);
  embed.rule = nullptr;
  for (int i = 0; i < 2; ++i) SubmitAt(*a, embed, Ms(6), 100);
  rerank.rule = [&](auto, auto, auto, auto&) {
    EXPECT_EQ(device->snapshot().in_flight_bytes, 10000);
    // The embedder finds nothing left now and waits in its turn.
    EXPECT_THAT(a->StepWorker(embed, Ms(6)).batch, IsEmpty());
  };
  const engine::WorkerStep second = b->StepWorker(rerank, Ms(6));
  EXPECT_EQ(second.batch.front(), long_one);
  EXPECT_THAT(second.batch, SizeIs(2));
  EXPECT_EQ(device->snapshot().models[0].waiting_for_bytes, 1000);
  EXPECT_THAT(a->StepWorker(embed, Ms(10)).batch, SizeIs(2));
  EXPECT_EQ(device->snapshot().peak_in_flight_bytes, 10000);
  EXPECT_EQ(device->snapshot().models[0].waiting_for_bytes, 0);
}

TEST(SharedDeviceMemoryStepTest, EngineRefusesAnInputThatCouldNeverFit) {
  auto device = SharedDeviceMemory::Create({9999, {{.name = "embed"}}});
  ASSERT_TRUE(device.ok());
  engine::testing::FakeClient client;
  BatcherOptions o = Sharing(*device, 0);  // max_input_tokens 1000: 10000 bytes alone
  auto engine = engine::BatchEngineImpl::Make(o, client);
  ASSERT_FALSE(engine.ok());
  EXPECT_THAT(engine.status().message(),
              ::testing::HasSubstr("an input of 1000 tokens (max_input_tokens) needs 10000 bytes, more than the "
                                   "shared device memory can ever give this model (9999 bytes)"));
  o.device_memory->memory_model = CostModel::Sum();
  EXPECT_FALSE(engine::BatchEngineImpl::Make(o, client).ok());
  o.device_memory->memory_model = TenBytesPerToken();
  o.device_memory->model = 1;
  EXPECT_FALSE(engine::BatchEngineImpl::Make(o, client).ok());
}

TEST(SharedDeviceMemoryStepTest, AModelHasOneBatcherAtATime) {
  auto device = Device(10000);
  engine::testing::FakeClient client;
  auto first = engine::testing::MakeEngine(Sharing(device, 0), client);
  ASSERT_NE(first, nullptr);
  auto second = engine::BatchEngineImpl::Make(Sharing(device, 0), client);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), ::testing::HasSubstr("model embed of the shared device memory already has "
                                                              "a Batcher"));
  first.reset();  // it detaches: another may take its place
  EXPECT_TRUE(engine::BatchEngineImpl::Make(Sharing(device, 0), client).ok());
}

TEST(SharedDeviceMemoryStepTest, AWaiterWhoseReserveShrinksWakesTheModelsBehindIt) {
  auto device = Device(100);
  int woken = 0;
  ASSERT_TRUE(device->Attach(1, [&] { ++woken; }).ok());
  device->Decide(1, [](std::int64_t) { return SharedDeviceMemory::Take{.acquire = 70}; });
  // The embedder, using nothing, comes first and waits for 50 of the 30 free.
  device->Decide(0, [](std::int64_t allowance) {
    EXPECT_EQ(allowance, 30);
    return SharedDeviceMemory::Take{.need = 50};
  });
  device->Decide(1, [](std::int64_t allowance) {
    EXPECT_EQ(allowance, 0);  // the 30 free are reserved for the embedder
    return SharedDeviceMemory::Take{.need = 20};
  });
  EXPECT_EQ(woken, 0);
  // The embedder's anchor went (a deadline); its next batch takes 10: the
  // reranker's 20 fit beside it now.
  device->Decide(0, [](std::int64_t) { return SharedDeviceMemory::Take{.acquire = 10}; });
  EXPECT_EQ(woken, 1);
  device->Detach(1);
}

// Two threaded Batchers whose backends measure the bytes of the batches running
// at once (bytes = 10·B·Lmax of each batch): interleaved large inputs to the
// two models. `shared`: both decide through one SharedDeviceMemory of `limit`;
// else each batches alone under a budget of the same limit (10·B·Lmax <= limit
// per batch, Infinity's design). `overlap`: each backend's first batch waits for
// the other's to start, so that batches coincide.
struct PeakRun {
  std::int64_t peak_bytes = 0;
  int results = 0;
};
PeakRun RunTwoModels(bool shared, bool overlap) {
  constexpr std::int64_t kLimit = 40000;
  std::shared_ptr<SharedDeviceMemory> device = shared ? Device(kLimit) : nullptr;
  std::atomic<std::int64_t> running{0}, peak{0};
  std::atomic<int> started{0};
  auto backend = [&](std::span<const testing::Tokens> batch) -> absl::StatusOr<std::vector<long>> {
    std::size_t longest = 0;
    for (const testing::Tokens& t : batch) longest = std::max(longest, t.size());
    const auto bytes = static_cast<std::int64_t>(10 * batch.size() * longest);
    const std::int64_t now = running.fetch_add(bytes) + bytes;
    for (std::int64_t p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);) {
    }
    if (overlap && started.fetch_add(1) < 2) {
      // Under per-model budgets the other model's first batch always starts, so
      // the wait ends when it does. Under a shared limit it may not fit beside
      // this one until this one ends: the wait gives up early.
      const std::chrono::milliseconds limit = shared ? std::chrono::milliseconds(200) : testing::kWaitLimit;
      testing::WaitUntil([&] { return started.load() >= 2; }, limit);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    running.fetch_sub(bytes);
    std::vector<long> out;
    for (const testing::Tokens& t : batch) out.push_back(testing::SumOf(t));
    return out;
  };
  std::vector<std::unique_ptr<testing::SumBatcher>> batchers;
  for (std::size_t m = 0; m < 2; ++m) {
    BatcherOptions o;
    o.scheduler.cost_model = *CostModel::Memory(0, 10, 0);
    o.scheduler.max_batch_tokens = kLimit;  // alone, a batch may take the whole device
    o.scheduler.max_input_tokens = 1000;
    o.scheduler.max_batch_size = 16;
    o.scheduler.max_wait = std::chrono::microseconds(200);
    o.defer_start = true;
    if (shared) o.device_memory = DeviceMemoryShare{.device = device, .model = m, .memory_model = TenBytesPerToken()};
    auto b = testing::SumBatcher::Create(o, backend);
    EXPECT_TRUE(b.ok()) << b.status();
    batchers.push_back(*std::move(b));
  }
  // Every input is queued before the first batch forms (defer_start), so both
  // models' first batches are as large as their limits allow.
  std::mt19937 rng(7);
  std::vector<testing::SumBatcher::Future> futures;
  std::vector<long> expected;
  for (int i = 0; i < 600; ++i) {
    const int length = i % 3 == 0 ? 600 + static_cast<int>(rng() % 400) : 1 + static_cast<int>(rng() % 100);
    testing::Tokens t = testing::MakeTokens(length);
    expected.push_back(testing::SumOf(t));
    auto ticket = batchers[static_cast<std::size_t>(i % 2)]->Submit(std::move(t), length);
    EXPECT_TRUE(ticket.ok()) << ticket.status();
    futures.push_back(std::move(ticket->result));
  }
  for (auto& b : batchers) b->Start();
  int ok = 0;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    absl::StatusOr<long> r = futures[i].get();
    if (r.ok() && *r == expected[i]) ++ok;
  }
  batchers.clear();
  if (shared) {
    EXPECT_EQ(device->snapshot().in_flight_bytes, 0);
  }
  return {peak.load(), ok};
}

TEST(SharedDeviceMemoryBatcherTest, InterleavedLargeRequestsNeverExceedTheSharedLimit) {
  const PeakRun run = RunTwoModels(/*shared=*/true, /*overlap=*/true);
  EXPECT_EQ(run.results, 600);  // every input answered, with its own sum
  EXPECT_LE(run.peak_bytes, 40000);
  EXPECT_GT(run.peak_bytes, 0);
}

TEST(SharedDeviceMemoryBatcherTest, PerModelBudgetsExceedItWhenLargeBatchesCoincide) {
  const PeakRun run = RunTwoModels(/*shared=*/false, /*overlap=*/true);
  EXPECT_EQ(run.results, 600);
  EXPECT_GT(run.peak_bytes, 40000);
}

}  // namespace
}  // namespace tokenbatch
