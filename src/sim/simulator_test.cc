#include "tokenbatch/sim/simulator.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "sim/toy_gpu_for_tests.h"
#include "tokenbatch/sim/report.h"
#include "tokenbatch/workload/workload.h"

namespace tokenbatch::sim {
namespace {

GpuModel Qwen3OnA10G() {
  return *GpuModel::Create(ModelShape::Qwen3Embedding0_6B(), *DevicePreset("a10g"), {});
}

PolicySpec Policy(const std::string& name, const CostModel& matching = CostModel::Padded()) {
  for (PolicySpec& p : SeedExperimentPolicies(4096, matching)) {
    if (p.name == name) return p;
  }
  ADD_FAILURE() << "no policy " << name;
  return {};
}

std::vector<SimRequest> FromWorkload(const std::vector<workload::WorkloadRequest>& w) {
  std::vector<SimRequest> out;
  for (const auto& r : w) {
    out.push_back({.tokens = r.tokens, .is_long = r.length_class == workload::LengthClass::kLong,
                   .arrival_us = r.arrival_us});
  }
  return out;
}

const PolicyResult* Find(const std::vector<PolicyResult>& results, const std::string& name) {
  for (const auto& r : results) {
    if (r.policy == name) return &r;
  }
  return nullptr;
}

std::vector<PolicyResult> RunAll(const GpuModel& gpu, const std::vector<SimRequest>& requests,
                                 const SimOptions& options = {}) {
  std::vector<PolicyResult> out;
  for (const PolicySpec& p : SeedExperimentPolicies(4096, gpu.MatchingTokenCostModel())) {
    auto r = Simulate(p, gpu, requests, options);
    EXPECT_TRUE(r.ok()) << p.name << ": " << r.status();
    if (r.ok()) out.push_back(std::move(*r));
  }
  return out;
}

TEST(Simulate, FixedCountTimelineByHand) {
  // Burst of 3, fixed count 2, max_wait 4 ms, one worker:
  //   t=0      [r0 r1] starts, runs L1 = Estimate({2, 4}) = 2,698 µs
  //   t=2.698  worker free; r2 alone waits for company until t=4 ms
  //   t=4      [r2] starts, runs L2 = Estimate({3}) = 1,070 µs
  const GpuModel gpu = ToyGpu();
  const std::vector<std::int64_t> first = {2, 4}, second = {3};
  const double l1 = gpu.Estimate(first).latency_us, l2 = gpu.Estimate(second).latency_us;
  ASSERT_DOUBLE_EQ(l1, 2698);
  ASSERT_DOUBLE_EQ(l2, 1070);
  const std::vector<SimRequest> requests = {{.tokens = 2}, {.tokens = 4}, {.tokens = 3}};
  PolicySpec fixed{.name = "fixed-2", .kind = FormerKind::kFixedCount, .batch_size = 2};
  auto r = Simulate(fixed, gpu, requests, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->batches, 2u);
  EXPECT_EQ(r->completed, 3u);
  ASSERT_EQ(r->short_latencies_ms.size(), 3u);
  EXPECT_DOUBLE_EQ(r->short_latencies_ms[0], 2.698);
  EXPECT_DOUBLE_EQ(r->short_latencies_ms[1], 2.698);
  EXPECT_DOUBLE_EQ(r->short_latencies_ms[2], 5.070);
  EXPECT_DOUBLE_EQ(r->makespan_s, 0.00507);
  EXPECT_DOUBLE_EQ(r->padding_efficiency, 9.0 / 11.0);  // (2+4+3) / (2·4 + 1·3)
  EXPECT_EQ(r->batch_records[1].start_ns, 4'000'000);
  EXPECT_DOUBLE_EQ(r->mean_batch_size, 1.5);
}

TEST(Simulate, ClosedLoopOneClientRunsRequestsAlone) {
  const GpuModel gpu = ToyGpu();
  const std::vector<SimRequest> requests = {{.tokens = 5}, {.tokens = 1}, {.tokens = 7}};
  auto r = Simulate(Policy("tei"), gpu, requests, {.clients = 1});  // max_wait 0: dispatch at once
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->batches, 3u);
  double total_us = 0;
  for (const SimRequest& q : requests) {
    const std::vector<std::int64_t> one = {q.tokens};
    total_us += gpu.Estimate(one).latency_us;
  }
  EXPECT_NEAR(r->makespan_s, total_us / 1e6, 1e-9);
  EXPECT_DOUBLE_EQ(r->padding_efficiency, 1.0);
}

TEST(Simulate, SameInputsGiveByteIdenticalOutput) {
  std::mt19937 rng(7);
  std::vector<SimRequest> requests;
  std::int64_t t = 0;
  for (int i = 0; i < 1500; ++i) {
    const bool is_long = rng() % 2 == 0;
    t += rng() % 3000;
    requests.push_back({.tokens = is_long ? 200 + static_cast<std::int64_t>(rng() % 600) : 3 + static_cast<std::int64_t>(rng() % 20),
                        .is_long = is_long, .arrival_us = t});
  }
  const GpuModel gpu = Qwen3OnA10G();
  const auto a = RunAll(gpu, requests), b = RunAll(gpu, requests);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(ResultsJson(a), ResultsJson(b));
  EXPECT_EQ(MarkdownTable(a), MarkdownTable(b));
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].completed, requests.size()) << a[i].policy;
    ASSERT_EQ(a[i].batch_records.size(), b[i].batch_records.size());
    for (std::size_t k = 0; k < a[i].batch_records.size(); ++k) {
      EXPECT_EQ(a[i].batch_records[k].start_ns, b[i].batch_records[k].start_ns);
    }
  }
  // And the policies really differ (the comparison is not vacuous).
  EXPECT_NE(Find(a, "fixed-32")->batches, Find(a, "ours-length-aware")->batches);
}

TEST(Simulate, BatchOverCapacityIsBisectedAsTheRuntimeDoes) {
  // 32 passages of 3,000 tokens: fixed-32 runs them as one batch whose eager
  // scores alone need 32·16·3000²·8 B = 36.9 GB on a 24 GB card. The failed call
  // costs its first layer (1/28 of the forward); each half of 16 (18.4 GB of
  // scores) fits and runs.
  const std::vector<SimRequest> requests(32, SimRequest{.tokens = 3000, .is_long = true});
  const GpuModel gpu = Qwen3OnA10G();
  auto fixed = Simulate(Policy("fixed-32"), gpu, requests, {});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->oom_events, 1u);
  EXPECT_EQ(fixed->requests_lost, 0u);
  EXPECT_EQ(fixed->completed, 32u);
  EXPECT_GT(fixed->peak_memory_bytes, 24'000'000'000);
  ASSERT_EQ(fixed->batch_records.size(), 1u);
  EXPECT_TRUE(fixed->batch_records[0].oom);
  const std::vector<std::int64_t> all(32, 3000), half(16, 3000);
  const double expected_us = gpu.Estimate(all).latency_us / 28 + 2 * gpu.Estimate(half).latency_us;
  EXPECT_NEAR(fixed->batch_records[0].latency_us, expected_us, 1e-6 * expected_us);
  // Ours under the padded budget of 4,096 runs them one by one.
  auto ours = Simulate(Policy("ours-length-aware"), gpu, requests, {});
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(ours->oom_events, 0u);
  EXPECT_EQ(ours->requests_lost, 0u);
  EXPECT_EQ(ours->completed, 32u);
  EXPECT_EQ(ours->batches, 32u);
}

TEST(Simulate, OnlyARequestThatDoesNotFitAloneIsLost) {
  // 14,000 tokens alone need 16·14000²·8 B = 25 GB of scores: lost; the
  // 10-token request of its batch is answered after the bisection.
  const std::vector<SimRequest> requests{{.tokens = 14000, .is_long = true}, {.tokens = 10}};
  auto fixed = Simulate(Policy("fixed-32"), Qwen3OnA10G(), requests, {});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->oom_events, 2u);  // the pair, then the long request alone
  EXPECT_EQ(fixed->requests_lost, 1u);
  EXPECT_EQ(fixed->completed, 1u);
  EXPECT_EQ(fixed->latency_short.count, 1u);
  EXPECT_EQ(fixed->latency_long.count, 0u);
}

TEST(Simulate, AnOutOfMemoryCutsACorePolicysBudget) {
  // A padded budget of 200,000 tokens admits 64 passages of 2,000 tokens, whose
  // scores alone need 64·16·2000²·8 B = 32.8 GB on a 24 GB card. The OOM halves
  // the budget from that batch's cost (AimdBudget: 128,000 -> 64,000), so the
  // next batch holds 32; each success then adds 200,000/32 back, and the budget
  // probes upwards until the next OOM.
  PolicySpec tei = Policy("tei");
  tei.core.max_batch_tokens = 200000;
  const std::vector<SimRequest> requests(256, SimRequest{.tokens = 2000, .is_long = true});
  auto r = Simulate(tei, Qwen3OnA10G(), requests, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->requests_lost, 0u);
  EXPECT_EQ(r->completed, 256u);
  ASSERT_GE(r->batch_records.size(), 3u);
  EXPECT_TRUE(r->batch_records[0].oom);
  EXPECT_EQ(r->batch_records[0].size, 64);  // max_batch_size
  EXPECT_FALSE(r->batch_records[1].oom);
  EXPECT_EQ(r->batch_records[1].size, 32);
  EXPECT_EQ(r->batch_records[2].size, 35);  // 64,000 + 6,250 padded tokens
  std::size_t oom_batches = 0;
  for (const BatchRecord& b : r->batch_records) oom_batches += b.oom ? 1 : 0;
  EXPECT_LT(2 * oom_batches, r->batch_records.size());
}

TEST(Simulate, WorkersSharingOneMemoryAddTheirActivations) {
  // Two batches of 16 × 3,000 tokens run at once on two workers. Each fits the
  // card alone; on one shared memory the second one does not fit beside the
  // first and is bisected, its halves running beside the first batch.
  PolicySpec fixed = Policy("fixed-32");
  fixed.batch_size = 16;
  const std::vector<SimRequest> requests(32, SimRequest{.tokens = 3000, .is_long = true});
  const GpuModel gpu = Qwen3OnA10G();
  const std::vector<std::int64_t> sixteen(16, 3000);
  const std::int64_t one = gpu.Estimate(sixteen).peak_bytes - gpu.weight_bytes();
  auto separate = Simulate(fixed, gpu, requests, {.workers = 2});
  ASSERT_TRUE(separate.ok());
  EXPECT_EQ(separate->oom_events, 0u);
  EXPECT_EQ(separate->peak_forward_bytes, one);
  auto shared = Simulate(fixed, gpu, requests, {.workers = 2, .shared_memory = true});
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->completed, 32u);
  ASSERT_EQ(shared->batch_records.size(), 2u);
  EXPECT_FALSE(shared->batch_records[0].oom);
  EXPECT_TRUE(shared->batch_records[1].oom);
  // Its pieces ran beside the first batch: more memory than either batch alone,
  // never more than the card.
  EXPECT_GT(shared->peak_forward_bytes, one);
  EXPECT_LE(shared->peak_forward_bytes + gpu.weight_bytes(), gpu.usable_bytes());
  EXPECT_GT(shared->makespan_s, separate->makespan_s);
}

TEST(Simulate, SeedMixRanking) {
  // The seed mix on real text (token counts estimated here: the tests do not need
  // the tokenizer), all at once, Qwen3-0.6B shape on an A10G.
  auto w = workload::GenerateMix({.requests = 2000}, {});
  ASSERT_TRUE(w.ok()) << w.status();
  const auto results = RunAll(Qwen3OnA10G(), FromWorkload(*w));
  const PolicyResult* ours = Find(results, "ours-length-aware");
  const PolicyResult* seed = Find(results, "seed-greedy");
  const PolicyResult* fixed = Find(results, "fixed-32");
  ASSERT_TRUE(ours && seed && fixed);
  EXPECT_GE(ours->padding_efficiency, 0.95);
  EXPECT_LT(seed->padding_efficiency, 0.65);
  EXPECT_LT(fixed->padding_efficiency, 0.65);
  EXPECT_EQ(ours->batches_over_budget, 0u);
  EXPECT_GT(seed->batches_over_budget, 0u);
  EXPECT_GT(ours->requests_per_s, 1.5 * fixed->requests_per_s);
  EXPECT_GT(ours->requests_per_s, 1.5 * seed->requests_per_s);
  EXPECT_EQ(ours->completed, 2000u);
}

TEST(Simulate, LongTailedMixFixedCountOomsWhereOursDoesNot) {
  auto w = workload::GenerateMix({.kind = workload::MixKind::kLongTailed, .requests = 2000}, {});
  ASSERT_TRUE(w.ok()) << w.status();
  const auto results = RunAll(Qwen3OnA10G(), FromWorkload(*w));
  const PolicyResult* ours = Find(results, "ours-length-aware");
  const PolicyResult* fixed = Find(results, "fixed-32");
  ASSERT_TRUE(ours && fixed);
  EXPECT_GT(fixed->oom_events, 0u);
  // Bisection answers every request that fits alone, at the cost of the failed
  // calls and the smaller batches they leave.
  std::size_t oom_batches = 0;
  for (const BatchRecord& b : fixed->batch_records) oom_batches += b.oom ? 1 : 0;
  EXPECT_GT(oom_batches, 0u);
  EXPECT_GE(fixed->oom_events, oom_batches);
  EXPECT_EQ(fixed->completed + fixed->requests_lost + fixed->requests_rejected, 2000u);
  EXPECT_EQ(ours->oom_events, 0u);
  EXPECT_EQ(ours->requests_lost, 0u);
  EXPECT_EQ(ours->completed + ours->requests_rejected, 2000u);
}

// The short requests of `requests` alone, same arrival times.
std::vector<SimRequest> ShortOnly(const std::vector<SimRequest>& requests) {
  std::vector<SimRequest> out;
  for (const SimRequest& r : requests) {
    if (!r.is_long) out.push_back(r);
  }
  return out;
}

TEST(Simulate, ShortRequestsAreNotHeldBehindPassages) {
  // The target: short p99 under the mix within 2× of the same short
  // requests alone. Burst of the seed mix: the default length-aware policy (a
  // virtual-deadline anchor) serves every query before the passages; with the
  // oldest-first anchor (slack 0) they queue behind them.
  auto w = workload::GenerateMix({.requests = 2000}, {});
  ASSERT_TRUE(w.ok()) << w.status();
  const std::vector<SimRequest> mixed = FromWorkload(*w), alone = ShortOnly(mixed);
  const GpuModel gpu = Qwen3OnA10G();
  PolicySpec ours = Policy("ours-length-aware");
  auto m = Simulate(ours, gpu, mixed, {});
  auto a = Simulate(ours, gpu, alone, {});
  ASSERT_TRUE(m.ok() && a.ok());
  EXPECT_LE(m->latency_short.p99, 2 * a->latency_short.p99);
  ours.core.anchor_slack_per_token = Duration::zero();
  auto fifo_anchor = Simulate(ours, gpu, mixed, {});
  ASSERT_TRUE(fifo_anchor.ok());
  EXPECT_GT(fifo_anchor->latency_short.p99, 5 * a->latency_short.p99);

  // Poisson at 60/s (about half the modelled capacity): the padding-efficiency
  // floor keeps passages out of the queries' batches; without it a query rides a
  // full batch of passages.
  std::vector<workload::WorkloadRequest> timed = *w;
  ASSERT_TRUE(workload::AssignArrivals({.kind = workload::ArrivalKind::kPoisson, .rate_per_s = 60}, timed).ok());
  const std::vector<SimRequest> poisson = FromWorkload(timed);
  ours = Policy("ours-length-aware");
  auto floored = Simulate(ours, gpu, poisson, {});
  ours.core.length_aware_min_padding_efficiency = 0;
  auto unfloored = Simulate(ours, gpu, poisson, {});
  ASSERT_TRUE(floored.ok() && unfloored.ok());
  EXPECT_LT(2 * floored->latency_short.p99, unfloored->latency_short.p99)
      << floored->latency_short.p99 << " vs " << unfloored->latency_short.p99;
  EXPECT_GT(floored->padding_efficiency, unfloored->padding_efficiency);
}

TEST(Simulate, RejectsBadInput) {
  const GpuModel gpu = ToyGpu();
  EXPECT_FALSE(Simulate(Policy("tei"), gpu, {}, {}).ok());
  const std::vector<SimRequest> bad = {{.tokens = 0}};
  EXPECT_FALSE(Simulate(Policy("tei"), gpu, bad, {}).ok());
  const std::vector<SimRequest> ok = {{.tokens = 1}};
  EXPECT_FALSE(Simulate(Policy("tei"), gpu, ok, {.workers = 0}).ok());
}

}  // namespace
}  // namespace tokenbatch::sim
