#include "tokenbatch/core/device_memory_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

DeviceMemoryBudget Make(std::int64_t limit, std::vector<ModelMemoryShare> models) {
  absl::StatusOr<DeviceMemoryBudget> b = DeviceMemoryBudget::Create({limit, std::move(models)});
  EXPECT_TRUE(b.ok()) << b.status();
  return *std::move(b);
}

TEST(DeviceMemoryBudgetTest, OneModelMayUseTheWholeLimit) {
  DeviceMemoryBudget b = Make(100, {{.name = "a"}});
  EXPECT_EQ(b.Allowance(0), 100);
  b.Acquire(0, 70);
  EXPECT_EQ(b.Allowance(0), 30);
  b.Acquire(0, 30);
  EXPECT_EQ(b.Allowance(0), 0);
  EXPECT_EQ(b.in_flight_total(), 100);
  b.Release(0, 70);
  EXPECT_EQ(b.Allowance(0), 70);
  EXPECT_EQ(b.peak_in_flight_total(), 100);
}

TEST(DeviceMemoryBudgetTest, TwoModelsShareTheLimitWhenNeitherWaits) {
  DeviceMemoryBudget b = Make(100, {{.name = "embed"}, {.name = "rerank"}});
  b.Acquire(0, 60);
  EXPECT_EQ(b.Allowance(1), 40);  // the embedder's batch holds 60 of 100
  b.Acquire(1, 40);
  EXPECT_EQ(b.Allowance(0), 0);
  EXPECT_EQ(b.Allowance(1), 0);
  EXPECT_EQ(b.in_flight_total(), 100);
}

TEST(DeviceMemoryBudgetTest, AnIdleModelsGuaranteeIsNeverLent) {
  DeviceMemoryBudget b = Make(100, {{.name = "embed"}, {.name = "rerank", .guaranteed_bytes = 30}});
  EXPECT_EQ(b.Allowance(0), 70);
  b.Acquire(0, 70);
  // The reranker gets its 30 at once, although the embedder uses the rest.
  EXPECT_EQ(b.Allowance(1), 30);
  b.Acquire(1, 20);
  EXPECT_EQ(b.Allowance(1), 10);
  EXPECT_EQ(b.Allowance(0), 0);
}

TEST(DeviceMemoryBudgetTest, AWaitingModelBelowItsShareIsServedFirst) {
  DeviceMemoryBudget b = Make(100, {{.name = "embed"}, {.name = "rerank"}});
  b.Acquire(0, 80);
  // The reranker's anchor needs 50; 20 are free: it waits.
  ASSERT_LT(b.Allowance(1), 50);
  b.Wait(1, 50);
  // The embedder, above the reranker's usage, must leave the reranker's 50:
  // nothing is left for it until its batch ends.
  EXPECT_EQ(b.Allowance(0), 0);
  EXPECT_THAT(b.Satisfiable(), IsEmpty());
  b.Release(0, 80);
  EXPECT_THAT(b.Satisfiable(), ElementsAre(1));
  EXPECT_EQ(b.Allowance(0), 50);  // the rest, beside the reserve
  b.Acquire(1, 50);
  EXPECT_FALSE(b.need(1).has_value());
  EXPECT_EQ(b.Allowance(0), 50);
  EXPECT_EQ(b.waits(1), 1u);
}

TEST(DeviceMemoryBudgetTest, AModelAboveItsShareLeavesNoReserveToOthers) {
  DeviceMemoryBudget b = Make(100, {{.name = "embed"}, {.name = "rerank"}});
  b.Acquire(1, 60);
  b.Wait(1, 50);  // the reranker, already using 60, wants 50 more
  // The embedder uses nothing: it comes before the reranker and takes the 40.
  EXPECT_EQ(b.Allowance(0), 40);
  EXPECT_EQ(b.Allowance(1), 40);
  EXPECT_THAT(b.Satisfiable(), IsEmpty());
}

TEST(DeviceMemoryBudgetTest, WeightsOrderTheModelsByUsagePerWeight) {
  // embed weighs 3, rerank 1: with 30 and 15 in flight, embed's usage per weight
  // is 10 and rerank's 15, so a waiting embed comes first.
  DeviceMemoryBudget b = Make(100, {{.name = "embed", .weight = 3}, {.name = "rerank", .weight = 1}});
  b.Acquire(0, 30);
  b.Acquire(1, 15);
  b.Wait(0, 40);
  EXPECT_EQ(b.Allowance(1), 15);  // 55 free, 40 reserved for embed
  b.Wait(1, 40);
  EXPECT_EQ(b.Allowance(0), 55);
  EXPECT_THAT(b.Satisfiable(), ElementsAre(0));
}

TEST(DeviceMemoryBudgetTest, BusyModelsTendToTheirWeights) {
  // Both models always want one more batch of 10 bytes; a batch ends in the
  // order they started. The memory in flight settles at the weights' 3 : 1.
  DeviceMemoryBudget b = Make(100, {{.name = "embed", .weight = 3}, {.name = "rerank", .weight = 1}});
  std::vector<std::size_t> running;  // started batches, oldest first
  for (int step = 0; step < 400; ++step) {
    for (bool started = true; started;) {
      started = false;
      for (std::size_t m : {std::size_t{0}, std::size_t{1}}) {
        if (b.Allowance(m) >= 10) {
          b.Acquire(m, 10);
          running.push_back(m);
          started = true;
        } else {
          b.Wait(m, 10);
        }
      }
    }
    b.Release(running.front(), 10);
    running.erase(running.begin());
  }
  EXPECT_NEAR(static_cast<double>(b.in_flight(0)) / (b.in_flight(0) + b.in_flight(1)), 0.75, 0.11);
  EXPECT_LE(b.peak_in_flight_total(), 100);
}

TEST(DeviceMemoryBudgetTest, EqualUsageGoesToTheEarlierWaiter) {
  DeviceMemoryBudget b = Make(100, {{.name = "a"}, {.name = "b"}, {.name = "c"}});
  b.Acquire(2, 100);
  b.Wait(1, 60);
  b.Wait(0, 60);
  b.Release(2, 100);
  // b began to wait first: a must leave it 60 and gets 40.
  EXPECT_EQ(b.Allowance(0), 40);
  EXPECT_EQ(b.Allowance(1), 100);
  EXPECT_THAT(b.Satisfiable(), ElementsAre(1));
  b.Wait(1, 70);  // a new anchor keeps b's place in the order
  EXPECT_EQ(b.Allowance(0), 30);
  b.StopWaiting(1);
  EXPECT_EQ(b.Allowance(0), 100);
}

TEST(DeviceMemoryBudgetTest, CreateRefusesWhatCannotWork) {
  auto error = [](std::int64_t limit, std::vector<ModelMemoryShare> models) {
    absl::StatusOr<DeviceMemoryBudget> b = DeviceMemoryBudget::Create({limit, std::move(models)});
    EXPECT_FALSE(b.ok());
    return b.ok() ? std::string() : std::string(b.status().message());
  };
  EXPECT_THAT(error(0, {{.name = "a"}}), HasSubstr("limit must be >= 1"));
  EXPECT_THAT(error(10, {}), HasSubstr("at least one model"));
  EXPECT_THAT(error(10, {{.name = "a"}, {.name = "a"}}), HasSubstr("two models are named \"a\""));
  EXPECT_THAT(error(10, {{.name = ""}}), HasSubstr("needs a name"));
  EXPECT_THAT(error(10, {{.name = "a", .weight = 0}}), HasSubstr("weight must be a finite number > 0, got 0"));
  EXPECT_THAT(error(10, {{.name = "a", .guaranteed_bytes = -1}}), HasSubstr(">= 0"));
  EXPECT_THAT(error(10, {{.name = "a", .guaranteed_bytes = 6}, {.name = "b", .guaranteed_bytes = 5}}),
              HasSubstr("guaranteed memory adds up to more than the limit of 10 bytes"));
  EXPECT_THAT(error(100, {{.name = "embed", .largest_batch_bytes = 80},
                          {.name = "rerank", .guaranteed_bytes = 30, .largest_batch_bytes = 30}}),
              HasSubstr("do not fit the limit together: model embed's longest input alone needs 80 bytes, and the "
                        "limit of 100 bytes less the other models' guarantees leaves it 70"));
  EXPECT_EQ(GetErrorKind(DeviceMemoryBudget::Create({0, {{.name = "a"}}}).status()), ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace tokenbatch
