// `tokenbatch simulate`: the seed's experiment (or the user's workload) through
// every batching policy on a simulated device. A deterministic discrete-event
// simulation drives the same policy core the runtime uses; a GPU model from the
// model's shape and the device's datasheet, or the device a `calibrate --json`
// file measured (a CPU included), gives each batch a latency and a peak memory,
// and a batch over the device's memory runs out of memory and is bisected as
// the runtime does. The workload is admitted as `bench` admits it (truncation at
// the model's positions by default, workload::Admit), so `--save-workload` here
// and `bench --workload` run the same requests. Same flags and workload ->
// byte-identical stdout.
//
// With no arguments: the seed mix (5,000 requests, half ~1,500-character licence
// passages, half short fortunes), all at once, on an A10G 24 GB with the
// Qwen3-Embedding-0.6B shape and eager attention, budget 4,096.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/default_paths.h"
#include "cli/fail.h"
#include "cli/policy_run_flags.h"
#include "cli/simulate_two_models.h"
#include "tokenbatch/sim/progress.h"
#include "tokenbatch/sim/report.h"
#include "tokenbatch/sim/simulator.h"
#include "tokenbatch/workload/workload.h"
#ifdef TOKENBATCH_HAVE_TOKENIZER
#include "tokenbatch/tokenizer/tokenizer.h"
#endif

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"simulate"};

struct SimulateFlags : MixFlags, ReportFlags {
  std::string tokenizer;  // "" = the model's (see DefaultTokenizer)
  std::string arrival = std::string(workload::ArrivalKindName(workload::ArrivalOptions{}.kind));
  double rate = workload::ArrivalOptions{}.rate_per_s;
  std::size_t clients = workload::ArrivalOptions{}.clients;
  std::string device = "a10g";
  std::uint64_t device_memory = 0;  // bytes; 0 = the --device preset's
  std::string model = "qwen3-0.6b";
  std::string attention = std::string(sim::kAttentionNames.Name(sim::GpuModelOptions{}.attention));
  std::string calibration;
  std::size_t workers = 1;
  std::string intra_op = "fixed";  // fixed | adaptive (serve --intra-op)
  double intra_op_speedup = sim::IntraOpSpeedup{}.speedup;
  std::int64_t budget = SchedulerOptions{}.max_batch_tokens;
  bool short_alone = false;
  std::string second_model;  // "" = one model; else the shape of a second model on the same device
};

using sim::ProgressBar;

// The tokenizer `bench` would count with for the same model: a calibrated
// model directory's own tokenizer.json, the bundled BERT one for a calibrated
// TorchScript file (bench's default for --model) and for the minilm shape, and
// Qwen3's for the qwen3-0.6b shape.
std::string DefaultTokenizer(const SimulateFlags& flags, const std::optional<sim::Calibration>& calibration) {
  if (calibration) {
    const std::filesystem::path own = std::filesystem::path(calibration->model_path) / "tokenizer.json";
    std::error_code ec;
    if (!calibration->model_path.empty() && std::filesystem::is_regular_file(own, ec)) return own.string();
    return BertTokenizerPath();
  }
  return flags.model == "minilm" ? BertTokenizerPath() : DefaultTokenizerPath();
}

// Counts with flags.tokenizer. A tokenizer the user named must load; the default
// one may be missing from a stripped install, and the counts are then estimated
// (and the report says so).
workload::TokenCounter MakeCounter(const SimulateFlags& flags, bool tokenizer_given, std::string& method) {
#ifdef TOKENBATCH_HAVE_TOKENIZER
  auto loaded = tokenizer::Tokenizer::FromFile(flags.tokenizer);
  if (!loaded.ok() && tokenizer_given) Fail(kCommand, "--tokenizer: " + loaded.status().ToString());
  if (loaded.ok()) {
    method = "exact, " + flags.tokenizer;
    std::shared_ptr<tokenizer::Tokenizer> tok(std::move(*loaded));
    return [tok](std::string_view text) -> absl::StatusOr<std::int64_t> {
      absl::StatusOr<size_t> n = tok->Count(text);
      if (!n.ok()) return n.status();
      return static_cast<std::int64_t>(*n);
    };
  }
  fmt::print(stderr, "simulate: {}; estimating token counts instead\n", loaded.status().ToString());
#else
  (void)flags;
  if (tokenizer_given) Fail(kCommand, "--tokenizer: this build has no tokenizer");
#endif
  method = "ESTIMATED (no tokenizer): 1 per CJK character, 1 per 4 other bytes";
  return {};
}

// The workload with its arrival times: a --workload file keeps its own, a
// generated mix gets --arrival's.
LoadedWorkload LoadRequests(const SimulateFlags& flags, const workload::TokenCounter& count,
                            workload::ArrivalKind arrival) {
  LoadedWorkload w = LoadWorkload(kCommand, flags, count);
  if (flags.workload.empty()) {
    const absl::Status s = workload::AssignArrivals(
        {.kind = arrival, .rate_per_s = flags.rate, .clients = flags.clients, .seed = flags.seed}, w.requests);
    if (!s.ok()) Fail(kCommand, s.ToString());
  }
  return w;
}

// The simulated device: the --device datasheet running the --model shape, or
// the device and model --calibration measured (its latency, memory and limit).
struct SimulatedGpu {
  sim::ModelShape shape;
  sim::DeviceSpec device;
  std::optional<sim::Calibration> calibration;
  std::optional<sim::GpuModel> gpu;
};
// The model shape `name` names; fails naming `flag`.
sim::ModelShape Shape(const std::string& name, const std::string& flag) {
  if (name == "qwen3-0.6b") return sim::ModelShape::Qwen3Embedding0_6B();
  if (name == "minilm") return sim::ModelShape::MiniLML6();
  if (name == "xlm-roberta-base") return sim::ModelShape::XlmRobertaBase();
  Fail(kCommand, fmt::format("unknown {} '{}' (expected qwen3-0.6b, minilm or xlm-roberta-base)", flag, name));
}

SimulatedGpu MakeGpu(const SimulateFlags& flags) {
  SimulatedGpu out;
  out.shape = Shape(flags.model, "--model");
  out.device = OrFail(kCommand, sim::DevicePreset(flags.device), "--device");
  if (flags.device_memory > 0) {
    // A cap below the datasheet's, as `bench --cuda-memory-limit` caps a real GPU's allocator.
    if (flags.device_memory > static_cast<std::uint64_t>(out.device.memory_bytes)) {
      Fail(kCommand, fmt::format("--device-memory {} is more than the {} has ({} bytes)", flags.device_memory,
                                 out.device.name, out.device.memory_bytes));
    }
    out.device.memory_bytes = static_cast<std::int64_t>(flags.device_memory);
  }
  const sim::Attention attention = OrFail(kCommand, sim::ParseAttention(flags.attention), "--attention");
  sim::GpuModelOptions options{.attention = attention};
  if (!flags.calibration.empty()) {
    const sim::Calibration& c = out.calibration.emplace(
        OrFail(kCommand, sim::LoadCalibration(flags.calibration), "--calibration " + flags.calibration));
    out.device = sim::CalibratedDevice(c, out.device);
    if (!c.model_name.empty()) out.shape.name = c.model_name;
    if (c.layers > 0) out.shape.layers = c.layers;
    // bench truncates at the model's positions; an older file names only the
    // longest input it calibrated.
    out.shape.max_positions = c.max_positions > 0 ? c.max_positions : c.max_input_tokens;
    // The calibration's limit is what the whole process may use: nothing more
    // is set aside.
    if (c.memory_limit_bytes > 0) options.reserved_bytes = 0;
  }
  out.gpu.emplace(
      OrFail(kCommand, sim::GpuModel::Create(out.shape, out.device, options, out.calibration), "the GPU model"));
  if (flags.device_memory > 0 && out.gpu->activation_budget_bytes() <= 0) {
    Fail(kCommand, fmt::format("--device-memory {} leaves nothing for activations: the {} model's weights take {} "
                               "bytes of the {} usable",
                               flags.device_memory, out.shape.name, out.gpu->weight_bytes(),
                               out.gpu->usable_bytes()));
  }
  return out;
}

// Every policy through the simulation; with --short-alone, each also on the
// short requests alone (same arrival times).
std::vector<sim::PolicyResult> RunPolicies(const SimulateFlags& flags, const std::vector<sim::PolicySpec>& policies,
                                           const sim::GpuModel& gpu, const std::vector<sim::SimRequest>& requests,
                                           const sim::SimOptions& options) {
  std::vector<sim::SimRequest> short_only;
  if (flags.short_alone) {
    std::copy_if(requests.begin(), requests.end(), std::back_inserter(short_only),
                 [](const sim::SimRequest& r) { return !r.is_long; });
  }
  std::vector<sim::PolicyResult> results;
  for (const sim::PolicySpec& p : policies) {
    ProgressBar bar(p.name, flags.progress);
    auto r = sim::Simulate(p, gpu, requests, options,
                           [&bar](std::size_t done, std::size_t total) { bar.Update(done, total); });
    if (!r.ok()) Fail(kCommand, r.status().ToString());
    if (!short_only.empty() && short_only.size() < requests.size()) {
      r->latency_short_alone = OrFail(kCommand, sim::Simulate(p, gpu, short_only, options), p.name).latency_short;
    }
    results.push_back(std::move(*r));
  }
  return results;
}

void PrintReport(const SimulateFlags& flags, const LoadedWorkload& loaded, const AdmittedLoad& admitted,
                 const std::string& count_method, const SimulatedGpu& sim_gpu, const sim::SimOptions& options,
                 const CostModel& matching, const std::vector<sim::PolicyResult>& results) {
  std::int64_t short_tokens = 0, long_tokens = 0;
  std::size_t n_long = 0;
  for (const auto& r : admitted.requests) {
    const bool is_long = r.length_class == workload::LengthClass::kLong;
    (is_long ? long_tokens : short_tokens) += r.tokens;
    n_long += is_long ? 1 : 0;
  }
  const std::size_t n_short = admitted.requests.size() - n_long;
  const sim::GpuModel& gpu = *sim_gpu.gpu;
  fmt::print("# tokenbatch simulate (deterministic discrete-event simulation)\n\n");
  fmt::print(
      "- workload: {}, {} requests ({} short, mean {:.1f} tokens; {} long, mean {:.1f} tokens{}), arrivals {}{}\n",
      loaded.source, loaded.requests.size(), n_short, n_short ? static_cast<double>(short_tokens) / n_short : 0.0,
      n_long, n_long ? static_cast<double>(long_tokens) / n_long : 0.0, admitted.note, flags.arrival,
      options.clients ? fmt::format(" ({} clients)", options.clients) : "");
  fmt::print("- token counts: {}\n", count_method);
  if (const auto& c = sim_gpu.calibration) {
    fmt::print("- device: simulated {} ({}{:.1f} GiB usable), {} worker(s)\n", sim_gpu.device.name,
               c->threads > 0 ? fmt::format("{} thread(s) per forward, ", c->threads) : "",
               static_cast<double>(gpu.usable_bytes()) / (1 << 30), flags.workers);
    fmt::print("- model: {}{}, {} execution, latency and memory measured by calibrate, model loaded {:.2f} GiB\n",
               sim_gpu.shape.name, c->model_path.empty() ? "" : " (" + c->model_path + ")",
               c->packed() ? "packed" : "padded", static_cast<double>(gpu.weight_bytes()) / (1 << 30));
  } else {
    fmt::print("- device: simulated {} ({} TFLOP/s, {} GB/s, {:.1f} GiB usable), {} worker(s)\n", sim_gpu.device.name,
               sim_gpu.device.peak_tflops, sim_gpu.device.bandwidth_gb_s,
               static_cast<double>(gpu.usable_bytes()) / (1 << 30), flags.workers);
    fmt::print("- model: {} shape, {} attention, weights {:.2f} GiB\n", sim_gpu.shape.name, flags.attention,
               static_cast<double>(gpu.weight_bytes()) / (1 << 30));
  }
  fmt::print("- budget: {} ({} cost for the token-budget policies, except seed-greedy: sum); "
             "'over budget' = batches whose {} cost exceeds it\n\n",
             flags.budget, matching.name(), matching.name());
  fmt::print("{}", sim::MarkdownTable(results));
  if (const std::string table = sim::ShortAloneTable(results); !table.empty()) {
    fmt::print("\nShort requests under the mix vs the same short requests alone (same arrival times):\n\n{}", table);
  }
}

void Run(SimulateFlags flags) {
  const SimulatedGpu sim_gpu = MakeGpu(flags);
  const bool tokenizer_given = !flags.tokenizer.empty();
  if (!tokenizer_given) flags.tokenizer = DefaultTokenizer(flags, sim_gpu.calibration);
  std::string count_method;
  const workload::TokenCounter count = MakeCounter(flags, tokenizer_given, count_method);
  const workload::ArrivalKind arrival = OrFail(kCommand, workload::ParseArrivalKind(flags.arrival), "--arrival");
  const LoadedWorkload loaded = LoadRequests(flags, count, arrival);
  const AdmittedLoad admitted = SaveAndAdmit(kCommand, flags, loaded, sim_gpu.shape.max_positions);
  const CostModel matching = sim_gpu.gpu->MatchingTokenCostModel();
  const std::vector<sim::PolicySpec> policies = SelectPolicies(flags.budget, matching, flags);
  if (policies.empty()) {
    Fail(kCommand, "--policies matched none of fixed-32, seed-greedy, tei, infinity, ours-bucketed, ours-length-aware");
  }
  std::vector<sim::SimRequest> requests;
  for (const auto& r : admitted.requests) {
    requests.push_back(
        {.tokens = r.tokens, .is_long = r.length_class == workload::LengthClass::kLong, .arrival_us = r.arrival_us});
  }
  if (!flags.second_model.empty()) {
    if (sim_gpu.calibration) Fail(kCommand, "--second-model simulates datasheet shapes: drop --calibration");
    const sim::GpuModel second = OrFail(
        kCommand,
        sim::GpuModel::Create(Shape(flags.second_model, "--second-model"), sim_gpu.device,
                              sim::GpuModelOptions{.attention = sim_gpu.gpu->options().attention}),
        "the second model");
    // The second model reranks: each request is a (query, passage) pair, the
    // passage plus a 16-token query, cut at the model's positions.
    std::vector<sim::SimRequest> pairs;
    for (const sim::SimRequest& r : requests) {
      pairs.push_back({.tokens = std::min<std::int64_t>(r.tokens + 16, second.model().max_positions),
                       .is_long = r.is_long,
                       .arrival_us = r.arrival_us});
    }
    RunTwoModels(*sim_gpu.gpu, requests, second, pairs);
    return;
  }
  sim::SimOptions options{.workers = flags.workers,
                          .clients = arrival == workload::ArrivalKind::kClosed ? flags.clients : 0,
                          // A CPU's workers are threads of one process; a GPU
                          // preset's workers are GPUs of their own.
                          .shared_memory = sim_gpu.calibration && sim_gpu.calibration->on_cpu(),
                          .over_budget_limit = flags.budget,
                          .over_budget_model = matching};
  if (flags.intra_op == "adaptive") {
    // --workers are the cores; the calibration's forwards ran on its `threads`.
    const int cores = static_cast<int>(flags.workers);
    const int measured = sim_gpu.calibration && sim_gpu.calibration->threads > 0 ? sim_gpu.calibration->threads : 1;
    if (measured != 1 && measured != cores) {
      Fail(kCommand, fmt::format("--intra-op adaptive needs a calibration measured on 1 or {} threads (--workers), "
                                 "and --calibration's ran on {}",
                                 cores, measured));
    }
    options.intra_op = IntraOpOptions{.cores = cores};
    options.intra_op_speedup = {.speedup = flags.intra_op_speedup, .model_threads = std::max(1, measured)};
  }
  std::vector<sim::PolicyResult> results = RunPolicies(flags, policies, *sim_gpu.gpu, requests, options);
  for (sim::PolicyResult& r : results) {
    r.requests += admitted.rejected;
    r.requests_rejected += admitted.rejected;
  }
  if (flags.json) {
    fmt::print("{}", sim::ResultsJson(results));
  } else {
    PrintReport(flags, loaded, admitted, count_method, sim_gpu, options, matching, results);
  }
  SaveBatches(kCommand, flags, results);
  if (!flags.plots.empty()) {
    absl::Status s = sim::WritePlots(flags.plots, results, std::string(matching.name()) + " tokens", true);
    if (!s.ok()) Fail(kCommand, s.ToString());
    fmt::print(stderr, "simulate: plots in {}/latency_cdf.png and {}/batch_cost.png\n", flags.plots, flags.plots);
  }
}

}  // namespace

void AddSimulateCommand(CLI::App& app) {
  auto f = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Compare batching policies on a simulated GPU (deterministic discrete-event simulation)");
  cmd->add_option("--workload", f->workload, "JSON Lines workload (id, text, tokens, class, arrival_us)");
  AddMixFlags(cmd, *f);
  cmd->add_option("--tokenizer", f->tokenizer,
                  "tokenizer.json for exact token counts (default: the calibrated model's, as bench uses, or "
                  "the --model shape's)");
  cmd->add_option("--arrival", f->arrival, "burst (all at t=0), poisson (--rate) or closed (--clients)")
      ->check(NamesValidator(workload::kArrivalKindNames));
  cmd->add_option("--rate", f->rate, "poisson: requests per second");
  cmd->add_option("--clients", f->clients, "closed: concurrent clients");
  CLI::Option* device = cmd->add_option("--device", f->device, "a10g, rtx4090, l4, h100, h200");
  CLI::Option* device_memory =
      cmd->add_option("--device-memory", f->device_memory,
                      "cap the --device's memory at this many bytes (e.g. 24GB: decimal units, as the presets' datasheet sizes), "
                      "as bench --cuda-memory-limit caps a GPU; 0 = the datasheet's")
          ->transform(CLI::AsSizeValue(true));
  CLI::Option* model = cmd->add_option("--model", f->model, "model shape: qwen3-0.6b or minilm");
  CLI::Option* attention = cmd->add_option("--attention", f->attention, "eager (padded, L² scores) or flash (varlen)")
                               ->check(NamesValidator(sim::kAttentionNames));
  cmd->add_option("--calibration", f->calibration,
                  "`tokenbatch calibrate --json` file: simulate the device and model it measured (replaces "
                  "--device, --model and --attention)")
      ->excludes(device)
      ->excludes(device_memory)
      ->excludes(model)
      ->excludes(attention);
  cmd->add_option("--workers", f->workers,
                  "model instances (GPUs; with a CPU --calibration, forwards sharing the process's memory)");
  cmd->add_option("--intra-op", f->intra_op,
                  "fixed, or adaptive: --workers are a CPU's cores, and each batch runs on all of them alone and on "
                  "one under load, as serve --intra-op adaptive")
      ->check(CLI::IsMember({"fixed", "adaptive"}))
      ->capture_default_str();
  cmd->add_option("--intra-op-speedup", f->intra_op_speedup,
                  "--intra-op adaptive: how many times as fast a forward runs on all --workers cores as on one "
                  "(measure it: bench/peers/compare_servers.sh at one connection, --workers 1 --threads 1 against "
                  "--threads N)")
      ->capture_default_str();
  cmd->add_option("--max-batch-tokens", f->budget, "budget per batch in the backend's cost unit");
  cmd->add_flag("--short-alone", f->short_alone,
                "also run the short requests alone (same arrivals) and compare their latency");
  cmd->add_option("--second-model", f->second_model,
                  "a second model on the same device (xlm-roberta-base: bge-reranker-base's shape; qwen3-0.6b; "
                  "minilm), reranking (query, passage) pairs of the same workload at the same arrivals: compares "
                  "per-model batching (Infinity's; ours with a budget per model) with one shared memory budget "
                  "(serve --device-memory)")
      ->excludes("--calibration");
  AddReportFlags(cmd, *f);
  cmd->callback([f] { Run(*f); });
}

}  // namespace tokenbatch::cli
