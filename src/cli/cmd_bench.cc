// `tokenbatch bench`: the seed's experiment, scaled down, on the real backend:
// real text, exact token ids from the model's tokenizer, an encoder on libtorch
// (CPU here: a Hugging Face directory with --model-id, or a TorchScript file),
// every policy run on the same workload in one process.
//
// Our policies and the token-budget baselines run through the real runtime
// (Batcher, one worker, the policy core inside). The fixed-count and
// sorted-window baselines are not core policies: a single-worker loop drives their
// BatchFormer on the steady clock, sleeping until the former's wake time, exactly
// as the Batcher's worker does for the core. Every request arrives at once (the
// seed's burst); latency is completion time minus that instant.
//
// Defaults: 100 requests (the seed's 5,000 scaled down 50×), the MiniLM-shaped
// model from scripts/gen_models.py with its BERT tokenizer, budget 4,096 padded
// tokens, one libtorch thread. The run is compute-bound (the time per padded
// token and the run's length on this machine are in docs/benchmarks.md). One
// thread because on a shared CPU a 2-thread forward waits on descheduled threads
// (docs/benchmarks.md, "Threads per forward").
#include <algorithm>
#include <chrono>
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
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/sim/batch_former.h"
#include "tokenbatch/sim/progress.h"
#include "tokenbatch/sim/report.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenbatch/workload/workload.h"

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"bench"};

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
  std::int64_t max_positions = 512;
  std::int64_t budget = 4096;
  std::string cost_model = "padded";
};

struct Request {
  EmbeddingInput input;
  bool is_long = false;
};

// What one policy run records; turned into a sim::PolicyResult for the reports.
struct Run {
  explicit Run(std::size_t requests) : latency_ms(requests, -1) {}
  Mutex mu;  // the Batcher's worker records batches and results while the main thread submits
  std::vector<double> latency_ms ABSL_GUARDED_BY(mu);  // per request; < 0: failed
  std::vector<sim::BatchRecord> batches ABSL_GUARDED_BY(mu);
  std::vector<double> fills ABSL_GUARDED_BY(mu);
  std::size_t oom ABSL_GUARDED_BY(mu) = 0;
  std::size_t done ABSL_GUARDED_BY(mu) = 0;
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
                         .size = shape.size, .max_tokens = shape.max_tokens, .sum_tokens = shape.sum_tokens,
                         .cost = shape.padded_tokens(), .latency_us = us,
                         .oom = !out.ok() && GetErrorKind(out.status()) == ErrorKind::kOutOfMemory});
  run.fills.push_back(Fill(p, shape));
  run.oom += run.batches.back().oom ? 1 : 0;
  return out;
}

void RunCore(const sim::PolicySpec& p, const backend::Encoder& encoder, const std::vector<Request>& requests,
             Run& run, sim::ProgressBar& bar) {
  BatcherOptions options{.scheduler = p.core, .num_workers = 1};
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
    });
    if (!id.ok()) Fail(kCommand, id.status().ToString());
  }
  (*batcher)->Shutdown(ShutdownMode::kDrain);
}

void RunBaseline(const sim::PolicySpec& p, const backend::Encoder& encoder,
                 const std::vector<Request>& requests, Run& run, sim::ProgressBar& bar) {
  auto former = sim::MakeFormer(p);
  if (!former.ok()) Fail(kCommand, former.status().ToString());
  const Clock::time_point t0 = Clock::now();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    absl::Status s = (*former)->Enqueue(i, static_cast<std::int64_t>(requests[i].input.input_ids.size()), t0);
    if (!s.ok()) Fail(kCommand, s.ToString());
  }
  while ((*former)->queued() > 0) {
    sim::FormerDecision d = (*former)->Next(Clock::now());
    if (d.batch.empty()) {
      if (d.wake_at) std::this_thread::sleep_until(*d.wake_at);
      continue;
    }
    std::vector<EmbeddingInput> inputs;
    for (RequestId id : d.batch) inputs.push_back(requests[id].input);
    const bool ok = RunBatch(encoder, p, inputs, t0, run).ok();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    MutexLock lock(&run.mu);
    for (RequestId id : d.batch) run.latency_ms[id] = ok ? ms : -1;
    run.done += d.batch.size();
    bar.Update(run.done, requests.size());
  }
}

sim::PolicyResult Summarise(const sim::PolicySpec& p, const std::vector<Request>& requests, Run& run,
                            std::int64_t budget, std::int64_t peak_bytes) {
  MutexLock lock(&run.mu);  // every thread that wrote it has finished; taken for the annotations
  sim::PolicyResult r;
  r.policy = p.name;
  r.requests = requests.size();
  double tokens = 0, makespan_ms = 0, real = 0, padded = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const double ms = run.latency_ms[i];
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
  return r;
}

void Bench(BenchFlags flags) {
  if (flags.model.model_id.empty() && flags.model.model.empty()) {
    flags.model.model = std::string(TOKENBATCH_MODEL_DIR) + "/minilm.pt";
  }
  absl::StatusOr<LoadedModel> encoder = LoadModel(flags.model, 0, flags.max_positions, "mean");
  if (!encoder.ok()) Fail(kCommand, encoder.status().ToString() + " (run scripts/prepare_assets.sh)");
  if (encoder->max_positions > 0) flags.max_positions = std::min(flags.max_positions, encoder->max_positions);
  if (flags.tokenizer.empty()) flags.tokenizer = !encoder->tokenizer.empty() ? encoder->tokenizer : TOKENBATCH_BERT_TOKENIZER;
  const backend::Encoder& model = *encoder->encoder;
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
  const std::vector<workload::WorkloadRequest>& texts = loaded.requests;
  const std::string& source = loaded.source;
  std::vector<Request> requests;
  std::size_t truncated = 0, n_long = 0;
  for (const workload::WorkloadRequest& w : texts) {
    if (w.text.empty()) Fail(kCommand, "bench needs the text of every request (the workload has a token-only line)");
    auto enc = (*tok)->EncodeTruncated(w.text, static_cast<size_t>(flags.max_positions), {.with_offsets = false});
    if (!enc.ok()) Fail(kCommand, enc.status().ToString());
    truncated += w.tokens > flags.max_positions ? 1 : 0;
    Request r;
    r.input.input_ids.assign(enc->ids.begin(), enc->ids.end());
    r.is_long = w.length_class == workload::LengthClass::kLong;
    n_long += r.is_long ? 1 : 0;
    requests.push_back(std::move(r));
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
    Run run(requests.size());
    sim::ProgressBar bar(p.name, flags.progress);
    if (absl::Status s = model.ResetPeakMemory(); !s.ok()) Fail(kCommand, s.ToString());
    if (p.kind == sim::FormerKind::kCore) {
      RunCore(p, model, requests, run, bar);
    } else {
      RunBaseline(p, model, requests, run, bar);
    }
    auto peak = model.PeakMemoryBytes();
    results.push_back(Summarise(p, requests, run, flags.budget, peak.ok() ? *peak : 0));
  }

  if (flags.json) {
    fmt::print("{}", sim::ResultsJson(results));
  } else {
    fmt::print("# tokenbatch bench (real backend, wall clock: numbers vary between runs)\n\n");
    fmt::print("- workload: {}, {} requests ({} short, {} long){}, all arriving at once; SCALED DOWN: the seed "
               "experiment has 5,000 requests\n",
               source, requests.size(), requests.size() - n_long, n_long,
               truncated ? fmt::format(", {} truncated to {} tokens", truncated, flags.max_positions) : "");
    fmt::print("- backend: libtorch {}, {} threads, model {}{}, tokenizer {}\n", flags.model.device,
               flags.model.threads, encoder->path,
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
  cmd->add_option("--max-positions", f->max_positions,
                  "longest request in tokens, longer ones truncated (at most the model's)")
      ->capture_default_str();
  cmd->add_option("--threads", f->model.threads, "libtorch intra-op threads")->capture_default_str();
  cmd->add_option("--device", f->model.device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--cuda-memory-limit", f->model.cuda_memory_limit,
                  "--model-id on CUDA: cap the allocator at this many bytes (e.g. 24GB), as a smaller GPU")
      ->transform(CLI::AsSizeValue(true));
  cmd->add_option("--max-batch-tokens", f->budget, "budget per batch, in the cost model's tokens")
      ->capture_default_str();
  cmd->add_option("--cost-model", f->cost_model, "the budget's cost model: padded (B x Lmax) or sum")
      ->capture_default_str();
  AddReportFlags(cmd, *f);
  cmd->callback([f] { Bench(*f); });
}

}  // namespace tokenbatch::cli
