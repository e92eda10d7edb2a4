// `tokenbatch bench`: the seed's experiment, scaled down, on the real backend:
// real text, exact token ids from the model's tokenizer, an encoder on libtorch
// (CPU here: a Hugging Face directory with --model-id, or a TorchScript file),
// every policy run on the same workload in one process.
//
// Our policies and the token-budget baselines run through the real runtime
// (Batcher with --workers workers, the policy core inside). The fixed-count and
// sorted-window baselines are not core policies: --workers threads drive their
// BatchFormer on the steady clock, each sleeping until the former's wake time
// as the Batcher's workers do for the core, and running each batch as the
// runtime does (RunIsolated: bisection after a failure). Every request arrives
// at once (the seed's burst); latency is completion time minus that instant.
// The workload goes through the same admission as `simulate`'s
// (workload::Admit: truncation at the model's max_positions by default).
//
// Defaults: 100 requests (the seed's 5,000 scaled down 50×), the MiniLM-shaped
// model from scripts/gen_models.py with its BERT tokenizer, budget 4,096 padded
// tokens, one worker, one libtorch thread. The run is compute-bound (the time per padded
// token and the run's length on this machine are in docs/benchmarks.md). One
// thread because on a shared CPU a 2-thread forward waits on descheduled threads
// (docs/benchmarks.md, "Threads per forward").
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/model_loader.h"
#include "cli/policy_run_flags.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/runtime/batcher.h"
#include "tokenbatch/runtime/isolation.h"
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/sim/batch_former.h"
#include "tokenbatch/sim/progress.h"
#include "tokenbatch/sim/report.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenbatch/workload/workload.h"

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"bench"};
// The positions of scripts/gen_models.py's TorchScript models (their sidecars).
constexpr std::int64_t kTorchScriptPositions = 512;

using backend::Embedding;
using backend::EmbeddingInput;
using Clock = std::chrono::steady_clock;

struct BenchFlags : MixFlags, ReportFlags {
  BenchFlags() {
    requests = 100;  // scaled down: the real backend runs on CPU
    model.threads = 1;  // see the overview
  }
  // --model-id DIR, or --model FILE (default: the MiniLM-shaped TorchScript model).
  ModelFlags model;
  std::string tokenizer;  // "" = the model directory's, else the bundled BERT one
  int workers = 1;
  std::int64_t budget = 4096;
  std::string cost_model;  // "" = the backend's: sum for a packed --model-id, else padded
};

struct Request {
  EmbeddingInput input;
  bool is_long = false;
};

// Run::latency_ms of a request the Batcher refused at submit.
constexpr double kRejected = -2;

// What one policy run records; turned into a sim::PolicyResult for the reports.
struct Run {
  Run(std::size_t requests, const CostModel& budget_model) : budget_model(budget_model), latency_ms(requests, -1) {}
  const CostModel budget_model;  // gives each BatchRecord::cost, compared with the budget
  Mutex mu;  // the Batcher's worker records batches and results while the main thread submits
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
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::vector<Embedding>> out = encoder.Embed(inputs);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  MutexLock lock(&run.mu);
  run.batches.push_back({.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start - t0).count(),
                         .size = shape.size,
                         .max_tokens = shape.max_tokens,
                         .sum_tokens = shape.sum_tokens,
                         .cost = run.budget_model.Cost(shape),
                         .latency_us = us,
                         .oom = !out.ok() && GetErrorKind(out.status()) == ErrorKind::kOutOfMemory});
  run.fills.push_back(Fill(p, shape));
  run.oom += run.batches.back().oom ? 1 : 0;
  return out;
}

void RunCore(const sim::PolicySpec& p, const backend::Encoder& encoder, const std::vector<Request>& requests,
             int workers, Run& run, sim::ProgressBar& bar) {
  // defer_start: the burst is queued whole before the first batch is chosen,
  // as the simulator's arrivals at one instant are.
  BatcherOptions options{.scheduler = p.core, .num_workers = workers, .defer_start = true};
  options.scheduler.max_queue_size = 0;
  const Clock::time_point t0 = Clock::now();
  using B = Batcher<EmbeddingInput, Embedding>;
  auto batcher = B::Create(options, [&](std::span<const EmbeddingInput> in) {
    return RunBatch(encoder, p, in, t0, run);
  });
  if (!batcher.ok()) Fail(kCommand, batcher.status().ToString());
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
    if (!id.ok()) Fail(kCommand, id.status().ToString());
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
void BaselineWorker(const sim::PolicySpec& p, const backend::Encoder& encoder, const std::vector<Request>& requests,
                    Clock::time_point t0, BaselineQueue& queue, Run& run, sim::ProgressBar& bar) {
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

void RunBaseline(const sim::PolicySpec& p, const backend::Encoder& encoder, const std::vector<Request>& requests,
                 int workers, Run& run, sim::ProgressBar& bar) {
  BaselineQueue queue;
  const Clock::time_point t0 = Clock::now();
  {
    MutexLock lock(&queue.mu);
    queue.former = OrFail(kCommand, sim::MakeFormer(p), p.name);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      absl::Status s = queue.former->Enqueue(i, static_cast<std::int64_t>(requests[i].input.input_ids.size()), t0);
      if (!s.ok()) Fail(kCommand, s.ToString());
    }
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] { BaselineWorker(p, encoder, requests, t0, queue, run, bar); });
  }
  for (std::thread& t : threads) t.join();
}

sim::PolicyResult Summarise(const sim::PolicySpec& p, const std::vector<Request>& requests, Run& run,
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

void Bench(BenchFlags flags) {
  if (flags.model.model_id.empty() && flags.model.model.empty()) {
    flags.model.model = std::string(TOKENBATCH_MODEL_DIR) + "/minilm.pt";
  }
  absl::StatusOr<LoadedModel> encoder = LoadModel(flags.model, 0, kTorchScriptPositions, "mean");
  if (!encoder.ok()) Fail(kCommand, encoder.status().ToString() + " (run scripts/prepare_assets.sh)");
  if (flags.workers < 1) Fail(kCommand, "--workers must be >= 1");
  if (flags.tokenizer.empty()) flags.tokenizer = !encoder->tokenizer.empty() ? encoder->tokenizer : TOKENBATCH_BERT_TOKENIZER;
  const backend::Encoder& model = *encoder->encoder;
  if (flags.cost_model.empty()) {
    // What the forward pays: padding costs a packed directory nothing (serve's
    // default for it too).
    flags.cost_model = !flags.model.model_id.empty() && flags.model.execution == "packed" ? "sum" : "padded";
  }
  absl::StatusOr<CostModel> cost_model = CostModel::Parse(flags.cost_model);
  if (!cost_model.ok() || cost_model->name() == "memory") Fail(kCommand, "--cost-model must be sum or padded");
  auto tok = tokenizer::Tokenizer::FromFile(flags.tokenizer);
  if (!tok.ok()) Fail(kCommand, tok.status().ToString());
  const workload::TokenCounter count = [&](std::string_view text) -> absl::StatusOr<std::int64_t> {
    absl::StatusOr<size_t> n = (*tok)->Count(text);
    if (!n.ok()) return n.status();
    return static_cast<std::int64_t>(*n);
  };
  const LoadedWorkload loaded = LoadWorkload(kCommand, flags, count);
  const AdmittedLoad admitted = SaveAndAdmit(kCommand, flags, loaded, encoder->max_positions);
  std::vector<Request> requests;
  std::size_t n_long = 0, recounted = 0;
  for (const workload::WorkloadRequest& w : admitted.requests) {
    if (w.text.empty()) Fail(kCommand, "bench needs the text of every request (the workload has a token-only line)");
    auto enc = (*tok)->EncodeTruncated(w.text, static_cast<size_t>(w.tokens), {.with_offsets = false});
    if (!enc.ok()) Fail(kCommand, enc.status().ToString());
    // A workload file's counts from another tokenizer: run what the model gets.
    recounted += static_cast<std::int64_t>(enc->ids.size()) != w.tokens ? 1 : 0;
    Request r;
    r.input.input_ids.assign(enc->ids.begin(), enc->ids.end());
    r.is_long = w.length_class == workload::LengthClass::kLong;
    n_long += r.is_long ? 1 : 0;
    requests.push_back(std::move(r));
  }
  if (recounted > 0) {
    fmt::print(stderr,
               "bench: {} requests of the workload have token counts that {} does not give; they run with "
               "its counts\n",
               recounted, flags.tokenizer);
  }

  std::vector<sim::PolicySpec> policies = SelectPolicies(flags.budget, *cost_model, flags);
  if (policies.empty()) Fail(kCommand, "--policies matched none of the policy names");

  // Warm-up: TorchScript's profiling executor optimises a graph on its first runs;
  // keep that out of every policy's numbers alike.
  for (int k = 0; k < 3; ++k) {
    std::vector<EmbeddingInput> warm(8, requests[static_cast<std::size_t>(k) % requests.size()].input);
    if (auto w = model.Embed(warm); !w.ok()) Fail(kCommand, w.status().ToString());
  }

  std::vector<sim::PolicyResult> results;
  for (const sim::PolicySpec& p : policies) {
    Run run(requests.size(), *cost_model);
    sim::ProgressBar bar(p.name, flags.progress);
    if (absl::Status s = model.ResetPeakMemory(); !s.ok()) Fail(kCommand, s.ToString());
    if (p.kind == sim::FormerKind::kCore) {
      RunCore(p, model, requests, flags.workers, run, bar);
    } else {
      RunBaseline(p, model, requests, flags.workers, run, bar);
    }
    auto peak = model.PeakMemoryBytes();
    results.push_back(Summarise(p, requests, run, flags.budget, peak.ok() ? *peak : 0, admitted.rejected));
  }

  if (flags.json) {
    fmt::print("{}", sim::ResultsJson(results));
  } else {
    fmt::print("# tokenbatch bench (real backend, wall clock: numbers vary between runs)\n\n");
    fmt::print(
        "- workload: {}, {} requests ({} short, {} long{}), all arriving at once; SCALED DOWN: the seed "
        "experiment has 5,000 requests\n",
        loaded.source, loaded.requests.size(), requests.size() - n_long, n_long, admitted.note);
    fmt::print("- backend: libtorch {}, {} worker(s) of {} thread(s), model {}{}, tokenizer {}\n", flags.model.device,
               flags.workers, flags.model.threads, encoder->path,
               flags.model.model_id.empty()
                   ? ""
                   : fmt::format(" ({} execution, {})", flags.model.execution, flags.model.dtype),
               flags.tokenizer);
    fmt::print("- budget: {} {} tokens (seed-greedy: sum); peak memory = process RSS high-water mark above "
               "its level before the run\n\n",
               flags.budget, cost_model->name());
    fmt::print("{}", sim::MarkdownTable(results));
  }
  SaveBatches(kCommand, flags, results);
  if (!flags.plots.empty()) {
    if (absl::Status s = sim::WritePlots(flags.plots, results, std::string(cost_model->name()) + " tokens", true);
        !s.ok()) {
      Fail(kCommand, s.ToString());
    }
  }
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand("bench", "Compare batching policies on the real libtorch backend (scaled down)");
  cmd->add_option("--workload", f->workload, "JSON Lines workload (needs \"text\")");
  AddMixFlags(cmd, *f);
  CLI::Option* model_id =
      cmd->add_option("--model-id", f->model.model_id, "Hugging Face / sentence-transformers model directory");
  cmd->add_option("--model", f->model.model, "TorchScript encoder (default: the MiniLM-shaped one, gen_models.py)")
      ->excludes(model_id);
  cmd->add_option("--dtype", f->model.dtype, "--model-id: float32, float16 or bfloat16")->capture_default_str();
  cmd->add_option("--execution", f->model.execution, "--model-id: packed or padded")->capture_default_str();
  cmd->add_option("--tokenizer", f->tokenizer,
                  "the model's tokenizer.json (default: the directory's; the bundled BERT one with --model)");
  cmd->add_option("--threads", f->model.threads, "libtorch intra-op threads per worker")->capture_default_str();
  cmd->add_option("--workers", f->workers, "model instances running batches concurrently")->capture_default_str();
  cmd->add_option("--device", f->model.device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--cuda-memory-limit", f->model.cuda_memory_limit,
                  "--model-id on CUDA: cap the allocator at this many bytes (e.g. 24GB), as a smaller GPU")
      ->transform(CLI::AsSizeValue(true));
  cmd->add_option("--max-batch-tokens", f->budget, "budget per batch, in the cost model's tokens")
      ->capture_default_str();
  cmd->add_option("--cost-model", f->cost_model,
                  "the budget's cost model: padded (B x Lmax) or sum (default: sum for a packed --model-id, "
                  "padded otherwise)");
  AddReportFlags(cmd, *f);
  cmd->callback([f] { Bench(*f); });
}

}  // namespace tokenbatch::cli
