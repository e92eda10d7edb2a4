// `tokenbatch bench`: the seed's experiment, scaled down, on the real backend:
// real text, exact token ids from the model's tokenizer, an encoder on libtorch
// (CPU here: a Hugging Face directory with --model-id, or a TorchScript file),
// every policy run on the same workload in one process.
//
// How each policy runs (the real Batcher for the core policies, driver threads
// for the baselines, the burst queued whole) is in bench_policy_run.h. The
// workload goes through the same admission as `simulate`'s (workload::Admit:
// truncation at the model's max_positions by default), its texts counted with
// the model's tokenizer.
//
// Defaults: 100 requests (the seed's 5,000 scaled down 50×), the MiniLM-shaped
// model from scripts/gen_models.py with its BERT tokenizer, budget 4,096 padded
// tokens, one worker, one libtorch thread. The run is compute-bound (the time per padded
// token and the run's length on this machine are in docs/benchmarks.md). One
// thread because on a shared CPU a 2-thread forward waits on descheduled threads
// (docs/benchmarks.md, "Threads per forward").
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/bench_policy_run.h"
#include "cli/commands.h"
#include "cli/default_paths.h"
#include "cli/enum_flag.h"
#include "cli/fail.h"
#include "cli/model_loader.h"
#include "cli/policy_run_flags.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/hf/hf_encoder.h"
#include "tokenbatch/sim/report.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenbatch/workload/workload.h"

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand = kBenchCommand;

using backend::EmbeddingInput;

struct BenchFlags : MixFlags, ReportFlags {
  BenchFlags() {
    requests = 100;  // scaled down: the real backend runs on CPU
    model.threads = 1;  // see the overview
  }
  // --model-id DIR, or --model FILE (default: the MiniLM-shaped TorchScript model).
  ModelFlags model;
  std::string tokenizer;  // "" = the model directory's, else the bundled BERT one
  int workers = 1;
  std::string intra_op = "fixed";  // fixed | adaptive (serve --intra-op)
  std::int64_t budget = 4096;
  std::string cost_model;  // "" = the backend's: sum for a packed --model-id, else padded
};

void Bench(BenchFlags flags) {
  if (flags.model.model_id.empty() && flags.model.model.empty()) {
    flags.model.model = ModelsDir() + "/minilm.pt";
  }
  // A TorchScript file's positions from its sidecar (a directory carries its own).
  const std::int64_t torchscript_positions =
      flags.model.model.empty() ? 0 : OrFail(kCommand, SidecarMaxPositions(flags.model.model), "--model");
  if (flags.workers < 1) Fail(kCommand, "--workers must be >= 1");
  std::optional<IntraOpOptions> intra_op;
  if (flags.intra_op == "adaptive") {
    // As serve's: one worker per core of --threads, each forward's threads set by
    // the runtime (the encoder is loaded below with no count of its own).
    if (flags.model.device != "cpu") Fail(kCommand, "--intra-op adaptive needs --device cpu");
    if (flags.model.threads < 1) Fail(kCommand, "--intra-op adaptive needs --threads N >= 1 (the cores to share)");
    if (flags.workers != 1 && flags.workers != flags.model.threads) {
      Fail(kCommand, fmt::format("--intra-op adaptive runs one worker per core ({}): drop --workers {}",
                                 flags.model.threads, flags.workers));
    }
    intra_op = IntraOpOptions{.cores = flags.model.threads};
    flags.workers = flags.model.threads;
  }
  ModelFlags load = flags.model;
  if (intra_op) load.threads = 0;
  absl::StatusOr<LoadedModel> encoder = LoadModel(load, 0, torchscript_positions, "mean");
  if (!encoder.ok()) Fail(kCommand, encoder.status().ToString() + " (run scripts/prepare_assets.sh)");
  if (flags.tokenizer.empty()) flags.tokenizer = !encoder->tokenizer.empty() ? encoder->tokenizer : BertTokenizerPath();
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
  LoadedWorkload loaded = LoadWorkload(kCommand, flags, count);
  // A workload file's counts may come from another tokenizer (or an estimate):
  // admit and run what this model's tokenizer gives. Arrival times are not
  // replayed: bench submits every request at once.
  std::size_t recounted = 0, timed = 0;
  for (workload::WorkloadRequest& w : loaded.requests) {
    if (w.text.empty()) Fail(kCommand, "bench needs the text of every request (the workload has a token-only line)");
    const std::int64_t n = OrFail(kCommand, count(w.text), "counting the workload's tokens");
    recounted += n != w.tokens ? 1 : 0;
    timed += w.arrival_us != 0 ? 1 : 0;
    w.tokens = n;
  }
  if (recounted > 0) {
    fmt::print(stderr, "bench: {} requests of the workload were counted differently by {}; they run with its counts\n",
               recounted, flags.tokenizer);
  }
  if (timed > 0) {
    fmt::print(stderr, "bench: the workload's arrival times are not replayed: every request arrives at once\n");
  }
  const AdmittedLoad admitted = SaveAndAdmit(kCommand, flags, loaded, encoder->max_positions);
  std::vector<BenchRequest> requests;
  std::size_t n_long = 0;
  for (const workload::WorkloadRequest& w : admitted.requests) {
    auto enc = (*tok)->EncodeTruncated(w.text, static_cast<size_t>(w.tokens), {.with_offsets = false});
    if (!enc.ok()) Fail(kCommand, enc.status().ToString());
    if (static_cast<std::int64_t>(enc->ids.size()) != w.tokens) {
      Fail(kCommand,
           fmt::format("request {}: the tokenizer counts {} tokens and encodes {}", w.id, w.tokens, enc->ids.size()));
    }
    BenchRequest r;
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
  const BenchRunOptions run_options{.workers = flags.workers,
                                    .intra_op = intra_op,
                                    .budget_model = *cost_model,
                                    .budget = flags.budget,
                                    .rejected_at_admission = admitted.rejected,
                                    .progress = flags.progress};
  for (const sim::PolicySpec& p : policies) results.push_back(RunBenchPolicy(p, model, requests, run_options));

  if (flags.json) {
    fmt::print("{}", sim::ResultsJson(results));
  } else {
    fmt::print("# tokenbatch bench (real backend, wall clock: numbers vary between runs)\n\n");
    fmt::print(
        "- workload: {}, {} requests ({} short, {} long{}), all arriving at once; SCALED DOWN: the seed "
        "experiment has 5,000 requests\n",
        loaded.source, loaded.requests.size(), requests.size() - n_long, n_long, admitted.note);
    fmt::print("- backend: libtorch {}, {} worker(s) of {} thread(s){}, model {}{}, tokenizer {}\n", flags.model.device,
               flags.workers, intra_op ? "1 or " + std::to_string(flags.model.threads) : std::to_string(flags.model.threads),
               intra_op ? " (intra-op adaptive)" : "", encoder->path,
               flags.model.model_id.empty()
                   ? ""
                   : fmt::format(" ({} execution, {}, attention {})", flags.model.execution, flags.model.dtype,
                                 encoder->encoder->info().attention),
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
  cmd->add_option("--quantize", f->model.quantize, "--model-id: none, or int8 (dynamic int8 linear layers)")
      ->capture_default_str()
      ->check(NamesValidator(hf::kQuantizationNames));
  cmd->add_option("--execution", f->model.execution, "--model-id: packed or padded")->capture_default_str();
  cmd->add_option("--attn-implementation", f->model.attention, "--model-id: auto, sdpa or eager")
      ->capture_default_str()
      ->check(NamesValidator(hf::kAttentionImplementationNames));
  cmd->add_option("--tokenizer", f->tokenizer,
                  "the model's tokenizer.json (default: the directory's; the bundled BERT one with --model)");
  cmd->add_option("--threads", f->model.threads, "libtorch intra-op threads per worker")->capture_default_str();
  cmd->add_option("--workers", f->workers, "model instances running batches concurrently")->capture_default_str();
  cmd->add_option("--intra-op", f->intra_op,
                  "fixed: every forward on --threads; adaptive: one worker per core of --threads, a lone batch on "
                  "all of them, one each when more are queued (serve --intra-op)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fixed", "adaptive"}));
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
