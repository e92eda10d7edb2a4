#include "tokenbatch/sim/batch_former.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::sim {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;

TimePoint At(int ms) { return TimePoint{} + milliseconds(ms); }

TEST(FixedCountFormer, FullBatchNowRemainderAfterMaxWait) {
  auto former = MakeFormer({.name = "fixed", .kind = FormerKind::kFixedCount, .batch_size = 32});
  ASSERT_TRUE(former.ok());
  for (RequestId id = 0; id < 33; ++id) ASSERT_TRUE((*former)->Enqueue(id, 10 + id, At(0)).ok());
  FormerDecision first = (*former)->Next(At(0));
  ASSERT_EQ(first.batch.size(), 32u);
  EXPECT_EQ(first.batch.front(), 0u);
  EXPECT_EQ(first.batch.back(), 31u);
  EXPECT_DOUBLE_EQ(first.fill, 1.0);
  // One left: it waits for company until arrival + 4 ms.
  FormerDecision wait = (*former)->Next(At(1));
  EXPECT_TRUE(wait.batch.empty());
  ASSERT_TRUE(wait.wake_at.has_value());
  EXPECT_EQ(*wait.wake_at, At(4));
  FormerDecision last = (*former)->Next(At(4));
  EXPECT_THAT(last.batch, ElementsAre(32u));
  EXPECT_DOUBLE_EQ(last.fill, 1.0 / 32);
  EXPECT_EQ((*former)->queued(), 0u);
  EXPECT_FALSE((*former)->Next(At(5)).wake_at.has_value());
}

TEST(SortedWindowFormer, SortsWindowThenCutsFixedCountBatches) {
  auto former = MakeFormer({.name = "infinity", .kind = FormerKind::kSortedWindow, .batch_size = 2, .window = 4});
  ASSERT_TRUE(former.ok());
  const std::int64_t tokens[] = {50, 10, 40, 20, 30};
  for (RequestId id = 0; id < 5; ++id) ASSERT_TRUE((*former)->Enqueue(id, tokens[id], At(0)).ok());
  // Window = ids 0..3 sorted by length: 1(10) 3(20) | 2(40) 0(50); id 4 waits.
  EXPECT_THAT((*former)->Next(At(0)).batch, ElementsAre(1u, 3u));
  EXPECT_THAT((*former)->Next(At(0)).batch, ElementsAre(2u, 0u));
  FormerDecision wait = (*former)->Next(At(0));
  EXPECT_TRUE(wait.batch.empty());
  EXPECT_EQ(*wait.wake_at, At(4));
  EXPECT_THAT((*former)->Next(At(4)).batch, ElementsAre(4u));
}

TEST(CoreFormer, SeedNoteExample) {
  // The seed note: A 30, B 1800, C 300, D 1200, E 1500 under fifo, sum, 4096.
  auto policies = SeedExperimentPolicies(4096, CostModel::Padded());
  const PolicySpec& seed = policies[1];
  ASSERT_EQ(seed.name, "seed-greedy");
  auto former = MakeFormer(seed);
  ASSERT_TRUE(former.ok()) << former.status();
  const std::int64_t tokens[] = {30, 1800, 300, 1200, 1500};
  for (RequestId id = 0; id < 5; ++id) ASSERT_TRUE((*former)->Enqueue(id, tokens[id], At(0)).ok());
  FormerDecision d = (*former)->Next(At(0));
  EXPECT_THAT(d.batch, ElementsAre(0u, 1u, 2u, 3u));
  EXPECT_DOUBLE_EQ(d.fill, 3330.0 / 4096);
}

TEST(SeedExperimentPolicies, NamesAndSettings) {
  auto p = SeedExperimentPolicies(4096, CostModel::Padded());
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].kind, FormerKind::kFixedCount);
  EXPECT_EQ(p[2].name, "tei");
  EXPECT_EQ(p[2].core.max_wait, Duration::zero());
  EXPECT_EQ(p[2].core.cost_model.kind(), CostModelKind::kPadded);
  EXPECT_EQ(p[3].kind, FormerKind::kSortedWindow);
  EXPECT_EQ(p[5].core.policy, PackingPolicy::kLengthAware);
  for (const PolicySpec& spec : p) EXPECT_TRUE(MakeFormer(spec).ok()) << spec.name;
}

TEST(MakeFormer, RejectsBadSettings) {
  EXPECT_FALSE(MakeFormer({.name = "x", .kind = FormerKind::kFixedCount, .batch_size = 0}).ok());
  PolicySpec core{.name = "y"};
  core.core.max_batch_tokens = 0;
  EXPECT_FALSE(MakeFormer(core).ok());
}

}  // namespace
}  // namespace tokenbatch::sim
