// Two models on one simulated GPU: each batching within its own budget, blind
// to the other (Infinity's design), runs out of memory when their large batches
// coincide; one shared budget does not.
#include "tokenbatch/sim/shared_device.h"

#include <vector>

#include <gtest/gtest.h>

namespace tokenbatch::sim {
namespace {

// An A10G capped at `gib` GiB, eager attention (a batch's memory grows with B·Lmax²).
GpuModel On(const ModelShape& shape, std::int64_t gib) {
  DeviceSpec device = *DevicePreset("a10g");
  device.memory_bytes = gib << 30;
  return *GpuModel::Create(shape, device, {});
}

// The core's length-aware policy under the model's memory cost model, its budget
// all the activation memory the device has beside both models' weights: what
// one model alone may use.
PolicySpec Alone(const GpuModel& gpu, std::int64_t activation_bytes) {
  PolicySpec p{.name = "ours-length-aware"};
  p.core.cost_model = *gpu.MatchingMemoryCostModel();
  p.core.max_batch_tokens = activation_bytes;
  p.core.max_batch_size = 64;
  p.core.max_input_tokens = 512;
  p.core.max_queue_size = 0;
  return p;
}

std::vector<ModelLane> EmbedderAndReranker(std::int64_t gib, PolicySpec (*policy)(const GpuModel&, std::int64_t)) {
  const GpuModel embed = On(ModelShape::Qwen3Embedding0_6B(), gib);
  const GpuModel rerank = On(ModelShape::XlmRobertaBase(), gib);
  const std::int64_t activations = embed.usable_bytes() - embed.weight_bytes() - rerank.weight_bytes();
  std::vector<SimRequest> passages, pairs;
  for (int i = 0; i < 400; ++i) {
    passages.push_back({.tokens = 200 + (i * 37) % 300, .is_long = true, .arrival_us = (i / 100) * 20000});
    pairs.push_back({.tokens = 300 + (i * 53) % 212, .is_long = true, .arrival_us = (i / 100) * 20000});
  }
  return {ModelLane{.name = "embed", .gpu = embed, .policy = policy(embed, activations), .requests = passages},
          ModelLane{.name = "rerank", .gpu = rerank, .policy = policy(rerank, activations), .requests = pairs}};
}

TEST(SharedDevice, PerModelBudgetsRunOutOfMemoryWhereTheSharedBudgetDoesNot) {
  const std::vector<ModelLane> lanes = EmbedderAndReranker(6, Alone);
  auto per_model = SimulateSharedDevice(lanes, MemorySharing::kPerModel);
  auto shared = SimulateSharedDevice(lanes, MemorySharing::kSharedBudget);
  ASSERT_TRUE(per_model.ok()) << per_model.status();
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_GT(per_model->oom_events, 0u);
  EXPECT_EQ(shared->oom_events, 0u);
  EXPECT_EQ(shared->requests_lost, 0u);
  EXPECT_LE(shared->peak_activation_bytes, shared->activation_limit_bytes);
  EXPECT_GT(per_model->peak_activation_bytes, 0);
  for (const PolicyResult& r : shared->models) EXPECT_EQ(r.completed, r.requests) << r.policy;
  EXPECT_GT(shared->tokens_per_s, 0);
}

TEST(SharedDevice, TheSameInputsGiveTheSameResult) {
  const std::vector<ModelLane> lanes = EmbedderAndReranker(6, Alone);
  auto a = SimulateSharedDevice(lanes, MemorySharing::kSharedBudget);
  auto b = SimulateSharedDevice(lanes, MemorySharing::kSharedBudget);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->makespan_s, b->makespan_s);
  EXPECT_EQ(a->memory_waits, b->memory_waits);
  EXPECT_EQ(a->models[1].latency_long.p99, b->models[1].latency_long.p99);
}

TEST(SharedDevice, OnlyCorePoliciesShareABudget) {
  std::vector<ModelLane> lanes = EmbedderAndReranker(6, Alone);
  lanes[1].policy = PolicySpec{.name = "infinity", .kind = FormerKind::kSortedWindow, .batch_size = 32};
  EXPECT_TRUE(SimulateSharedDevice(lanes, MemorySharing::kPerModel).ok());
  auto shared = SimulateSharedDevice(lanes, MemorySharing::kSharedBudget);
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("cannot share a memory budget"), std::string::npos);
  EXPECT_FALSE(SimulateSharedDevice({}, MemorySharing::kPerModel).ok());
}

}  // namespace
}  // namespace tokenbatch::sim
