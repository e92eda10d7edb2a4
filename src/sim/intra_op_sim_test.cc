// The simulator with SimOptions::intra_op: each batch's threads follow the
// load as the runtime's IntraOpWidth decides, its latency scales by Amdahl's
// law, and the two widths together carry what one-thread workers carry under
// load while a lone request runs at the wide speed.
#include <vector>

#include <gtest/gtest.h>

#include "sim/toy_gpu_for_tests.h"
#include "tokenbatch/sim/simulator.h"

namespace tokenbatch::sim {
namespace {

SimOptions TwoCores(Duration hold, std::size_t clients = 0) {
  return {.workers = 2,
          .clients = clients,
          .intra_op = IntraOpOptions{.cores = 2, .narrow_hold = hold},
          .intra_op_speedup = {.speedup = 1.6, .model_threads = 1}};
}

TEST(SimulateIntraOp, WidthsAndTheirLatenciesByHand) {
  // Burst of 3, fixed count 2, max_wait 4 ms, no hold:
  //   t=0  [r0 r1] leaves r2 queued: one thread, the model's L1 = 2,698 µs
  //   t=4  [r2] alone on an idle CPU: both threads, L2 = 1,070 µs / 1.6
  const GpuModel gpu = ToyGpu();
  const std::vector<std::int64_t> first = {2, 4}, second = {3};
  const double l1 = gpu.Estimate(first).latency_us, l2 = gpu.Estimate(second).latency_us;
  const std::vector<SimRequest> requests = {{.tokens = 2}, {.tokens = 4}, {.tokens = 3}};
  PolicySpec fixed{.name = "fixed-2", .kind = FormerKind::kFixedCount, .batch_size = 2};
  auto r = Simulate(fixed, gpu, requests, TwoCores(Duration::zero()));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->batch_records.size(), 2u);
  EXPECT_EQ(r->batch_records[0].threads, 1);
  EXPECT_DOUBLE_EQ(r->batch_records[0].latency_us, l1);
  EXPECT_EQ(r->batch_records[1].threads, 2);
  EXPECT_NEAR(r->batch_records[1].latency_us, l2 / 1.6, 1e-9);
  EXPECT_NEAR(r->makespan_s, (4000 + l2 / 1.6) / 1e6, 1e-12);
}

TEST(SimulateIntraOp, ModelLatenciesMeasuredOnEveryCoreAreSlowerOnOne) {
  const GpuModel gpu = ToyGpu();
  const std::vector<SimRequest> requests = {{.tokens = 2}, {.tokens = 4}, {.tokens = 3}};
  PolicySpec fixed{.name = "fixed-2", .kind = FormerKind::kFixedCount, .batch_size = 2};
  SimOptions options = TwoCores(Duration::zero());
  options.intra_op_speedup.model_threads = 2;
  auto r = Simulate(fixed, gpu, requests, options);
  ASSERT_TRUE(r.ok()) << r.status();
  // [r0 r1] (narrow: r2 is queued) now runs 1.6 times the model's 2,698 µs,
  // so at 4 ms [r2] starts beside it, narrow too.
  const std::vector<std::int64_t> first = {2, 4}, second = {3};
  EXPECT_NEAR(r->batch_records[0].latency_us, gpu.Estimate(first).latency_us * 1.6, 1e-9);
  EXPECT_EQ(r->batch_records[1].threads, 1);
  EXPECT_NEAR(r->batch_records[1].latency_us, gpu.Estimate(second).latency_us * 1.6, 1e-9);
}

// Closed loop, one policy (fixed count 4, dispatch at once): under 16 clients
// the adaptive widths carry what two one-thread workers carry; with one client
// every batch runs wide, 1.6 times as fast as one thread.
TEST(SimulateIntraOp, CarriesTheNarrowThroughputAndTheWideLatency) {
  const GpuModel gpu = ToyGpu();
  std::vector<SimRequest> requests(400);
  for (std::size_t i = 0; i < requests.size(); ++i) requests[i].tokens = 2 + static_cast<std::int64_t>(i % 7);
  PolicySpec fixed{.name = "fixed-4", .kind = FormerKind::kFixedCount, .batch_size = 4, .max_wait = {}};
  for (const std::size_t clients : {std::size_t{16}, std::size_t{1}}) {
    auto narrow = Simulate(fixed, gpu, requests, {.workers = 2, .clients = clients});
    auto adaptive = Simulate(fixed, gpu, requests, TwoCores(std::chrono::milliseconds(100), clients));
    ASSERT_TRUE(narrow.ok() && adaptive.ok());
    ASSERT_EQ(adaptive->completed, requests.size());
    if (clients > 1) {
      EXPECT_GE(adaptive->requests_per_s, 0.97 * narrow->requests_per_s) << clients << " clients";
    } else {
      EXPECT_NEAR(adaptive->requests_per_s, 1.6 * narrow->requests_per_s, 1e-4 * narrow->requests_per_s);
      for (const BatchRecord& b : adaptive->batch_records) EXPECT_EQ(b.threads, 2);
    }
  }
}

TEST(SimulateIntraOp, RefusesOptionsItCannotModel) {
  const GpuModel gpu = ToyGpu();
  const std::vector<SimRequest> requests = {{.tokens = 2}};
  PolicySpec fixed{.name = "fixed-2", .kind = FormerKind::kFixedCount, .batch_size = 2};
  SimOptions options = TwoCores(Duration::zero());
  options.workers = 1;
  EXPECT_EQ(Simulate(fixed, gpu, requests, options).status().code(), absl::StatusCode::kInvalidArgument);
  options = TwoCores(Duration::zero());
  options.intra_op_speedup.speedup = 0.5;
  EXPECT_EQ(Simulate(fixed, gpu, requests, options).status().code(), absl::StatusCode::kInvalidArgument);
  options = TwoCores(Duration::zero());
  options.intra_op_speedup.model_threads = 3;
  EXPECT_EQ(Simulate(fixed, gpu, requests, options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tokenbatch::sim
