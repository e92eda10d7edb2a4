// Runtime overhead per request: Submit -> resolved future, with a no-op backend.
//
// Each iteration submits kRequests requests from P producer threads (the seed's
// mix: half 20-token queries, half 400-token passages), waits for every future,
// and counts them as items, so items_per_second gives requests/s and the reported
// ns_per_request = 1e9 / items_per_second. Budget, batch size and max_wait are
// the seed's (4096 tokens, 64, 4 ms). An iteration's last batch is usually
// partial and, when the worker has caught up with the producers, waits out
// max_wait: the batching window, not overhead, yet it counts here. 4 ms over the
// 20,000 requests of an iteration is up to 0.2 µs per request; it is what makes
// 1-producer fifo runs bimodal (docs/benchmarks.md). More requests per iteration
// would amortise it but deepen the queue, which slows length_aware instead.
// Run with bench/compare_overhead.py, which also runs the seed's Python scheduler
// on the same workload and prints the ratio.
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tokenbatch/runtime/batcher.h"
#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch {
namespace {

constexpr int kRequests = 20000;

using NoopBatcher = Batcher<std::uint32_t, std::uint32_t>;

absl::StatusOr<std::vector<std::uint32_t>> NoopBackend(std::span<const std::uint32_t> batch) {
  return std::vector<std::uint32_t>(batch.begin(), batch.end());
}

// The seed's limits: sum cost, 4096 tokens, 64 per batch, fixed 4 ms window
// (what bench/compare_overhead.py runs the seed's Python scheduler with).
std::unique_ptr<NoopBatcher> MakeBatcher(PackingPolicy policy) {
  BatcherOptions o;
  o.scheduler.cost_model = CostModel::Sum();
  o.scheduler.policy = policy;
  o.scheduler.max_batch_tokens = 4096;
  o.scheduler.max_batch_size = 64;
  o.scheduler.max_wait = std::chrono::milliseconds(4);
  o.scheduler.adaptive_wait = false;
  o.scheduler.max_queue_size = 0;
  return std::move(*NoopBatcher::Create(o, NoopBackend));
}

void BM_SubmitToResolvedFuture(benchmark::State& state) {
  const int producers = static_cast<int>(state.range(0));
  auto batcher = MakeBatcher(static_cast<PackingPolicy>(state.range(1)));
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        const int n = kRequests / producers;
        std::vector<NoopBatcher::Future> futures;
        futures.reserve(n);
        for (int i = 0; i < n; ++i) {
          const std::uint32_t tokens = (i + p) % 2 ? 20 : 400;
          futures.push_back(std::move(batcher->Submit(std::uint32_t(i), tokens)->result));
        }
        for (auto& f : futures) benchmark::DoNotOptimize(f.get());
      });
    }
    for (auto& t : threads) t.join();
  }
  state.SetItemsProcessed(state.iterations() * kRequests);
  const MetricsSnapshot m = batcher->metrics();
  state.counters["mean_batch_size"] = m.batch_size.mean();
}

// The same with the callback form (what an asynchronous server uses): no
// ResultPromise/ResultFuture per request.
void BM_SubmitWithCallback(benchmark::State& state) {
  const int producers = static_cast<int>(state.range(0));
  auto batcher = MakeBatcher(static_cast<PackingPolicy>(state.range(1)));
  for (auto _ : state) {
    Mutex mu;
    std::condition_variable cv;
    std::atomic<int> remaining = kRequests;
    // Only the last callback takes the lock, so the benchmark measures the
    // Batcher and not a lock of its own per request.
    auto done = [&](NoopBatcher::Result r) {
      benchmark::DoNotOptimize(r);
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        MutexLock lock(&mu);
        cv.notify_one();
      }
    };
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (int i = 0; i < kRequests / producers; ++i) {
          const std::uint32_t tokens = (i + p) % 2 ? 20 : 400;
          (void)batcher->Submit(std::uint32_t(i), tokens, {}, done);
        }
      });
    }
    for (auto& t : threads) t.join();
    MutexLock lock(&mu);
    while (remaining.load(std::memory_order_acquire) > 0) mu.Wait(cv);
  }
  state.SetItemsProcessed(state.iterations() * kRequests);
}

// 1 and 2 producers x fifo and length_aware, wall time in ms.
void ProducerPolicyGrid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"producers", "policy"});
  for (PackingPolicy policy : {PackingPolicy::kFifo, PackingPolicy::kLengthAware}) {
    for (int producers : {1, 2}) b->Args({producers, static_cast<int>(policy)});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_SubmitWithCallback)
    ->Apply(ProducerPolicyGrid);

BENCHMARK(BM_SubmitToResolvedFuture)
    ->Apply(ProducerPolicyGrid);

}  // namespace
}  // namespace tokenbatch

BENCHMARK_MAIN();
