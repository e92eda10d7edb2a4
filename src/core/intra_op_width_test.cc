// IntraOpWidth on a manual clock: every core for a lone batch, one per batch
// under load, no start without a free core, and how long a sign of load lasts.
#include "tokenbatch/core/intra_op_width.h"

#include <gtest/gtest.h>

#include <chrono>

#include "core/test_clock.h"

namespace tokenbatch {
namespace {

using std::chrono::milliseconds;

IntraOpWidth Make(int cores, Duration hold = milliseconds(100)) {
  absl::StatusOr<IntraOpWidth> w = IntraOpWidth::Create({.cores = cores, .narrow_hold = hold});
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

TEST(IntraOpWidthTest, RefusesNoCoresAndANegativeHold) {
  EXPECT_EQ(IntraOpWidth::Create({.cores = 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(IntraOpWidth::Create({.cores = 2, .narrow_hold = milliseconds(-1)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IntraOpWidthTest, ALoneBatchGetsEveryCoreAndRunsAlone) {
  testing::ManualClock clock;
  IntraOpWidth w = Make(4);
  EXPECT_EQ(w.Predict(clock.now()), 4);
  EXPECT_EQ(w.Start(clock.now(), /*more_queued=*/false), 4);
  EXPECT_EQ(w.cores_in_use(), 4);
  EXPECT_FALSE(w.CanStart());
  w.Finish(4);
  EXPECT_TRUE(w.CanStart());
  EXPECT_EQ(w.cores_in_use(), 0);
}

TEST(IntraOpWidthTest, AWorkerThatMayNotRunWideGetsOneThreadOnIdleCores) {
  testing::ManualClock clock;
  IntraOpWidth w = Make(4);
  EXPECT_EQ(w.Predict(clock.now()), 4);
  EXPECT_EQ(w.Start(clock.now(), /*more_queued=*/false, /*may_run_wide=*/false), 1);
  EXPECT_EQ(w.cores_in_use(), 1);
  EXPECT_TRUE(w.CanStart());
  w.Finish(1);
  // Not a sign of load: the next lone batch on a worker that may run wide is wide.
  EXPECT_EQ(w.Start(clock.now(), /*more_queued=*/false), 4);
}

TEST(IntraOpWidthTest, WorkLeftQueuedMakesEachBatchOneThread) {
  testing::ManualClock clock;
  IntraOpWidth w = Make(2);
  EXPECT_EQ(w.Start(clock.now(), /*more_queued=*/true), 1);
  ASSERT_TRUE(w.CanStart());
  // Beside a running forward a batch is narrow even with nothing queued behind it.
  EXPECT_EQ(w.Predict(clock.now()), 1);
  EXPECT_EQ(w.Start(clock.now(), /*more_queued=*/false), 1);
  EXPECT_FALSE(w.CanStart());
  w.Finish(1);
  w.Finish(1);
  EXPECT_EQ(w.cores_in_use(), 0);
}

TEST(IntraOpWidthTest, ASignOfLoadKeepsBatchesNarrowForTheHold) {
  testing::ManualClock clock;
  IntraOpWidth w = Make(2, milliseconds(100));
  EXPECT_EQ(w.Start(clock.now(), false), 2);
  w.OnWaitingForCore(clock.now());  // a second batch is ready behind the wide one
  w.Finish(2);
  clock.Advance(milliseconds(99));
  EXPECT_EQ(w.Predict(clock.now()), 1);
  EXPECT_EQ(w.Start(clock.now(), false), 1);
  w.Finish(1);
  clock.Advance(milliseconds(1));  // the hold has passed: a lone batch is wide again
  EXPECT_EQ(w.Predict(clock.now()), 2);
  EXPECT_EQ(w.Start(clock.now(), false), 2);
}

TEST(IntraOpWidthTest, ALaterSignExtendsTheHoldAndAnEarlierOneDoesNotShortenIt) {
  testing::ManualClock clock;
  IntraOpWidth w = Make(2, milliseconds(100));
  const TimePoint t0 = clock.now();
  w.OnWaitingForCore(t0 + milliseconds(50));
  w.OnWaitingForCore(t0);  // reported late, by a worker that read the clock earlier
  EXPECT_EQ(w.Predict(t0 + milliseconds(149)), 1);
  EXPECT_EQ(w.Predict(t0 + milliseconds(150)), 2);
}

TEST(IntraOpWidthTest, ZeroHoldLooksOnlyAtTheInstant) {
  testing::ManualClock clock;
  IntraOpWidth w = Make(2, Duration::zero());
  EXPECT_EQ(w.Start(clock.now(), /*more_queued=*/true), 1);
  w.Finish(1);
  EXPECT_EQ(w.Start(clock.now(), /*more_queued=*/false), 2);
}

TEST(IntraOpWidthTest, OneCoreIsAlwaysOneThread) {
  testing::ManualClock clock;
  IntraOpWidth w = Make(1);
  EXPECT_EQ(w.Start(clock.now(), false), 1);
  EXPECT_FALSE(w.CanStart());
  w.Finish(1);
  EXPECT_EQ(w.Start(clock.now(), true), 1);
}

}  // namespace
}  // namespace tokenbatch
