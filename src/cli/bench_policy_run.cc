#include "cli/bench_policy_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <thread>
#include <vector>

#include "cli/fail.h"
#include "tokenbatch/runtime/batcher.h"
#include "tokenbatch/runtime/isolation.h"
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/sim/batch_former.h"
#include "tokenbatch/sim/progress.h"

namespace tokenbatch::cli {
namespace {

using backend::Embedding;
using backend::EmbeddingInput;
using Clock = std::chrono::steady_clock;

// Run::latency_ms of a request the Batcher refused at submit.
constexpr double kRejected = -2;

// What one policy run records; turned into a sim::PolicyResult for the reports.
struct Run {
  Run(std::size_t requests, const CostModel& budget_model, bool per_batch_peak)
      : budget_model(budget_model), per_batch_peak(per_batch_peak), latency_ms(requests, -1) {}
  const CostModel budget_model;  // gives each BatchRecord::cost, compared with the budget
  // Each batch's own device peak (BatchRecord::peak_bytes): CUDA with one worker,
  // where resetting the allocator's peak before a forward races with no other.
  const bool per_batch_peak;
  Mutex mu;                      // the Batcher's worker records batches and results while the main thread submits
  std::vector<double> latency_ms ABSL_GUARDED_BY(mu);  // per request; kRejected, or < 0: failed
  std::vector<sim::BatchRecord> batches ABSL_GUARDED_BY(mu);
  std::vector<double> fills ABSL_GUARDED_BY(mu);
  std::size_t oom ABSL_GUARDED_BY(mu) = 0;
  std::size_t done ABSL_GUARDED_BY(mu) = 0;
  std::condition_variable all_done;  // notified when `done` reaches the request count
};

double Fill(const sim::PolicySpec& p, const BatchShape& shape) {
  if (p.kind != sim::FormerKind::kCore) return static_cast<double>(shape.size) / static_cast<double>(p.batch_size);
  return static_cast<double>(p.core.cost_model.Cost(shape)) / static_cast<double>(p.core.max_batch_tokens);
}

// Runs one batch on the encoder and records its shape and time.
absl::StatusOr<std::vector<Embedding>> RunBatch(const backend::Encoder& encoder, const sim::PolicySpec& p,
                                                std::span<const EmbeddingInput> inputs, Clock::time_point t0,
                                                Run& run) {
  BatchShape shape;
  for (const EmbeddingInput& in : inputs) shape = shape.With(static_cast<std::int64_t>(in.input_ids.size()));
  if (run.per_batch_peak) {
    if (absl::Status s = encoder.ResetPeakMemory(); !s.ok()) Fail(kBenchCommand, s.ToString());
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::vector<Embedding>> out = encoder.Embed(inputs);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  std::int64_t peak = 0;
  if (run.per_batch_peak) {
    absl::StatusOr<std::int64_t> read = encoder.PeakMemoryBytes();
    peak = read.ok() ? *read : 0;
  }
  MutexLock lock(&run.mu);
  run.batches.push_back({.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start - t0).count(),
                         .size = shape.size,
                         .max_tokens = shape.max_tokens,
                         .sum_tokens = shape.sum_tokens,
                         .cost = run.budget_model.Cost(shape),
                         .latency_us = us,
                         .peak_bytes = peak,
                         .oom = !out.ok() && GetErrorKind(out.status()) == ErrorKind::kOutOfMemory});
  run.fills.push_back(Fill(p, shape));
  run.oom += run.batches.back().oom ? 1 : 0;
  return out;
}

void RunCore(const sim::PolicySpec& p, const backend::Encoder& encoder, const std::vector<BenchRequest>& requests,
             const BenchRunOptions& bench, Run& run, sim::ProgressBar& bar) {
  // defer_start: the burst is queued whole before the first batch is chosen,
  // as the simulator's arrivals at one instant are.
  BatcherOptions options{.scheduler = p.core, .num_workers = bench.workers, .defer_start = true};
  if (bench.intra_op) {
    options.intra_op = bench.intra_op;
    options.set_forward_threads = backend::SetForwardThreads;
  }
  options.scheduler.max_queue_size = 0;
  const Clock::time_point t0 = Clock::now();
  using B = Batcher<EmbeddingInput, Embedding>;
  auto batcher =
      B::Create(options, [&](std::span<const EmbeddingInput> in) { return RunBatch(encoder, p, in, t0, run); });
  if (!batcher.ok()) Fail(kBenchCommand, batcher.status().ToString());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EmbeddingInput input = requests[i].input;
    const auto tokens = static_cast<std::int64_t>(input.input_ids.size());
    auto id = (*batcher)->Submit(std::move(input), tokens, {}, [&, i](B::Result r) {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      MutexLock lock(&run.mu);
      run.latency_ms[i] = r.ok() ? ms : -1;
      bar.Update(++run.done, requests.size());
      if (run.done == requests.size()) run.all_done.notify_all();
    });
    if (!id.ok() && GetErrorKind(id.status()) == ErrorKind::kOversize) {
      // Refused at submit (its own cost is over the budget), as simulate counts it.
      MutexLock lock(&run.mu);
      run.latency_ms[i] = kRejected;
      bar.Update(++run.done, requests.size());
      continue;
    }
    if (!id.ok()) Fail(kBenchCommand, id.status().ToString());
  }
  (*batcher)->Start();
  // Shut down only once everything is answered: a drain dispatches without
  // waiting (ShutdownMode::kDrain), which would hide the policy's own waits.
  {
    MutexLock lock(&run.mu);
    while (run.done < requests.size()) run.mu.Wait(run.all_done);
  }
  (*batcher)->Shutdown(ShutdownMode::kDrain);
}

// The former and what the baseline's worker threads share.
struct BaselineQueue {
  Mutex mu;
  std::unique_ptr<sim::BatchFormer> former ABSL_GUARDED_BY(mu);
};

// One worker thread of a baseline: asks the former for a batch, runs it as the
// runtime does (RunIsolated), records every request's latency.
void BaselineWorker(const sim::PolicySpec& p, const backend::Encoder& encoder,
                    const std::vector<BenchRequest>& requests, Clock::time_point t0, BaselineQueue& queue, Run& run,
                    sim::ProgressBar& bar) {
  while (true) {
    sim::FormerDecision d;
    {
      MutexLock lock(&queue.mu);
      if (queue.former->queued() == 0) return;
      d = queue.former->Next(Clock::now());
    }
    if (d.batch.empty()) {
      if (d.wake_at) std::this_thread::sleep_until(*d.wake_at);
      continue;
    }
    std::vector<EmbeddingInput> inputs;
    for (RequestId id : d.batch) inputs.push_back(requests[id].input);
    std::vector<absl::StatusOr<Embedding>> results(inputs.size());
    IsolationReport report;
    auto backend = [&](std::span<const EmbeddingInput> in) { return RunBatch(encoder, p, in, t0, run); };
    RunIsolated<Embedding>(
        backend, std::span<const EmbeddingInput>(inputs), std::span<absl::StatusOr<Embedding>>(results),
        [](std::size_t, std::size_t) {}, report);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    MutexLock lock(&run.mu);
    for (std::size_t k = 0; k < d.batch.size(); ++k) run.latency_ms[d.batch[k]] = results[k].ok() ? ms : -1;
    run.done += d.batch.size();
    bar.Update(run.done, requests.size());
  }
}

void RunBaseline(const sim::PolicySpec& p, const backend::Encoder& encoder, const std::vector<BenchRequest>& requests,
                 int workers, Run& run, sim::ProgressBar& bar) {
  BaselineQueue queue;
  const Clock::time_point t0 = Clock::now();
  {
    MutexLock lock(&queue.mu);
    queue.former = OrFail(kBenchCommand, sim::MakeFormer(p), p.name);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      absl::Status s = queue.former->Enqueue(i, static_cast<std::int64_t>(requests[i].input.input_ids.size()), t0);
      if (!s.ok()) Fail(kBenchCommand, s.ToString());
    }
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] { BaselineWorker(p, encoder, requests, t0, queue, run, bar); });
  }
  for (std::thread& t : threads) t.join();
}

sim::PolicyResult Summarise(const sim::PolicySpec& p, const std::vector<BenchRequest>& requests, Run& run,
                            std::int64_t budget, std::int64_t peak_bytes, std::size_t rejected) {
  MutexLock lock(&run.mu);  // every thread that wrote it has finished; taken for the annotations
  sim::PolicyResult r;
  r.policy = p.name;
  r.requests = requests.size();
  double tokens = 0, makespan_ms = 0, real = 0, padded = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const double ms = run.latency_ms[i];
    if (ms == kRejected) {
      ++r.requests_rejected;
      continue;
    }
    if (ms < 0) {
      ++r.requests_lost;
      continue;
    }
    ++r.completed;
    tokens += static_cast<double>(requests[i].input.input_ids.size());
    makespan_ms = std::max(makespan_ms, ms);
    (requests[i].is_long ? r.long_latencies_ms : r.short_latencies_ms).push_back(ms);
  }
  std::sort(r.short_latencies_ms.begin(), r.short_latencies_ms.end());
  std::sort(r.long_latencies_ms.begin(), r.long_latencies_ms.end());
  auto summary = [](const std::vector<double>& v) {
    sim::LatencySummary s;
    s.count = v.size();
    if (v.empty()) return s;
    auto rank = [&](double q) {
      const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
      return v[std::clamp<std::size_t>(k, 1, v.size()) - 1];
    };
    s.p50 = rank(0.5), s.p95 = rank(0.95), s.p99 = rank(0.99);
    return s;
  };
  r.latency_short = summary(r.short_latencies_ms);
  r.latency_long = summary(r.long_latencies_ms);
  r.makespan_s = makespan_ms / 1000;
  if (r.makespan_s > 0) {
    r.requests_per_s = static_cast<double>(r.completed) / r.makespan_s;
    r.tokens_per_s = tokens / r.makespan_s;
  }
  r.batch_records = run.batches;
  r.batches = run.batches.size();
  double size = 0, fill = 0;
  for (std::size_t k = 0; k < run.batches.size(); ++k) {
    const sim::BatchRecord& b = run.batches[k];
    real += static_cast<double>(b.sum_tokens);
    padded += static_cast<double>(b.size * b.max_tokens);
    size += static_cast<double>(b.size);
    fill += run.fills[k];
    r.batches_over_budget += b.cost > budget ? 1 : 0;
  }
  r.padding_efficiency = padded > 0 ? real / padded : 1;
  if (r.batches) {
    r.mean_batch_size = size / static_cast<double>(r.batches);
    r.mean_fill = fill / static_cast<double>(r.batches);
  }
  r.oom_events = run.oom;
  r.peak_memory_bytes = peak_bytes;
  r.peak_forward_bytes = peak_bytes;
  r.requests += rejected;
  r.requests_rejected += rejected;
  return r;
}

}  // namespace

sim::PolicyResult RunBenchPolicy(const sim::PolicySpec& p, const backend::Encoder& encoder,
                                 const std::vector<BenchRequest>& requests, const BenchRunOptions& options) {
  Run run(requests.size(), options.budget_model, encoder.on_cuda() && options.workers == 1);
  sim::ProgressBar bar(p.name, options.progress);
  if (absl::Status s = encoder.ResetPeakMemory(); !s.ok()) Fail(kBenchCommand, s.ToString());
  if (p.kind == sim::FormerKind::kCore) {
    RunCore(p, encoder, requests, options, run, bar);
  } else {
    RunBaseline(p, encoder, requests, options.workers, run, bar);
  }
  std::int64_t peak = 0;
  if (run.per_batch_peak) {
    MutexLock lock(&run.mu);
    for (const sim::BatchRecord& b : run.batches) peak = std::max(peak, b.peak_bytes);
  } else {
    absl::StatusOr<std::int64_t> read = encoder.PeakMemoryBytes();
    peak = read.ok() ? *read : 0;
  }
  return Summarise(p, requests, run, options.budget, peak, options.rejected_at_admission);
}

}  // namespace tokenbatch::cli
