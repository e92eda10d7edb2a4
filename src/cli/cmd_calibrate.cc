// `tokenbatch calibrate`: measure a TorchScript encoder over a grid of batch shapes
// on this device, fit the `memory` cost model (c0 + c1·B·L + c2·B·L² bytes) and a
// latency model (a + b·B·L + c·B·L² µs), and recommend max_batch_tokens for a
// memory limit under each cost model (sum, padded, memory), never beyond what it
// measured (backend::RecommendFromGrid; calibration_check.h): otherwise it prints
// why, writes the JSON without a recommendation, and exits 1. Prints a table;
// writes JSON the server can load with --json. Progress goes to stderr.
//
//   tokenbatch calibrate --model build/cache/models/minilm.pt --memory-limit 6GiB
//       --json build/calibration-minilm.json
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "backend/peak_memory.h"
#include "cli/calibration_file.h"
#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/model_loader.h"
#include "tokenbatch/backend/calibration.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"calibrate"};

using backend::GridPoint;
using backend::QuadraticFit;

struct CalibrateArgs {
  ModelFlags model;     // --model-id DIR or --model FILE, device, dtype, pooling, threads
  std::string sidecar;  // default: the model path with .json
  std::uint64_t memory_limit = 0;
  double headroom = 0.10;
  std::string grid;  // "B,B,...:L,L,..."
  std::int64_t max_shape_tokens = 16384;
  int warmup = 1;
  int repeats = 3;
  std::int64_t vocab_size = 0;
  std::int64_t max_input_tokens = 0;
  std::int64_t max_batch_size = 0;
  std::string json_out;
  std::string from_json;  // re-fit this saved calibration instead of measuring
  bool extrapolate = false;  // allow budgets beyond the measured shapes
};

// "INVALID_ARGUMENT: message", without the error-kind payload ToString() appends.
std::string Text(const absl::Status& status) {
  return absl::StatusCodeToString(status.code()) + ": " + std::string(status.message());
}

std::vector<std::int64_t> ParseList(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 1 || v > (1 << 20)) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      Fail(kCommand, fmt::format("bad --grid value \"{}\": expected integers from 1 to 1048576", item));
    }
  }
  if (out.empty()) Fail(kCommand, "empty list in --grid");
  return out;
}

std::string Mib(double bytes) { return fmt::format("{:.1f}", bytes / (1 << 20)); }

// "[#####.....] 12/30" plus the last shape; \r-redrawn on a terminal, one line each otherwise.
void DrawProgress(size_t done, size_t total, const GridPoint& p) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / std::max<size_t>(total, 1));
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  const bool tty = isatty(STDERR_FILENO) != 0;
  std::cerr << (tty ? "\r" : "")
            << fmt::format("[{}] {:>3}/{} B={:<4} L={:<5} {:>10.1f} ms {:>9} MiB", bar, done, total,
                           p.batch_size, p.seq_len, p.latency_us / 1000, Mib(p.peak_bytes))
            << (tty && done < total ? "" : "\n") << std::flush;
}

nlohmann::json FitJson(const QuadraticFit& f, const char* a, const char* b, const char* c) {
  return {{a, f.c0}, {b, f.c1}, {c, f.c2}};
}

// What a grid run produced: enough to fit and recommend again later (--from-json).
struct Measured {
  nlohmann::json model = nlohmann::json::object();  // sidecar shape + path + hidden_size
  std::string device, pooling;
  int threads = 0;
  std::vector<GridPoint> points;
  std::int64_t loaded_bytes = 0;  // VmRSS with the model loaded and warm, between forwards
  std::int64_t load_bytes = 0;    // VmRSS growth from loading and warming the model
};

Measured Measure(const CalibrateArgs& args) {
  if (args.model.model.empty() && args.model.model_id.empty()) {
    Fail(kCommand, "pass --model-id DIR or --model FILE (or --from-json to re-fit a saved calibration)");
  }
  // A TorchScript file's shape from the sidecar gen_models.py writes (optional for
  // other models); a model directory carries its own.
  Measured m;
  std::int64_t vocab = args.vocab_size;
  std::int64_t max_positions = 0;
  if (!args.model.model.empty()) {
    const std::string sidecar = !args.sidecar.empty()
                                    ? args.sidecar
                                    : std::filesystem::path(args.model.model).replace_extension(".json").string();
    if (std::filesystem::exists(sidecar)) {
      std::ifstream in(sidecar);
      try {
        m.model = nlohmann::json::parse(in);
      } catch (const std::exception& e) {
        Fail(kCommand, fmt::format("cannot parse {}: {}", sidecar, e.what()));
      }
    }
    if (vocab <= 0) vocab = m.model.value("vocab", 0);
    max_positions = m.model.value("max_positions", std::int64_t{0});
    if (vocab <= 0) Fail(kCommand, "unknown vocabulary size: pass --vocab-size or provide " + sidecar);
  }

  absl::StatusOr<std::int64_t> rss_before = backend::ReadProcStatusBytes("VmRSS");
  if (!rss_before.ok()) Fail(kCommand, Text(rss_before.status()));
  absl::StatusOr<LoadedModel> loaded = LoadModel(args.model, vocab, max_positions, "cls");
  if (!loaded.ok()) Fail(kCommand, Text(loaded.status()));
  if (!args.model.model_id.empty()) {
    if (args.vocab_size <= 0 || args.vocab_size > loaded->vocab_size) vocab = loaded->vocab_size;
    max_positions = loaded->max_positions;
    m.model["vocab"] = loaded->vocab_size;
    m.model["max_positions"] = loaded->max_positions;
    m.model["dtype"] = args.model.dtype;
    m.model["execution"] = args.model.execution;
  }
  const backend::Encoder& encoder = *loaded->encoder;

  backend::GridOptions grid;
  if (!args.grid.empty()) {
    const size_t colon = args.grid.find(':');
    if (colon == std::string::npos) Fail(kCommand, "--grid must look like 1,2,4:16,64,256 (B list:L list)");
    grid.batch_sizes = ParseList(args.grid.substr(0, colon));
    grid.seq_lens = ParseList(args.grid.substr(colon + 1));
  }
  if (max_positions > 0) {
    std::erase_if(grid.seq_lens, [&](std::int64_t l) { return l > max_positions; });
  }
  grid.max_tokens_per_shape = args.max_shape_tokens;
  grid.warmup = args.warmup;
  grid.repeats = args.repeats;
  grid.vocab_size = vocab;
  const int min_points = backend::FitBounds{}.min_points;
  if (backend::PlanGrid(grid).size() < static_cast<std::size_t>(min_points)) {
    Fail(kCommand,
         fmt::format("the grid has fewer than {} shapes within --max-shape-tokens; a 3-coefficient fit is judged "
                     "on at least {}",
                     min_points, min_points));
  }

  std::cerr << fmt::format("calibrate: {} on {}, hidden {}, {} shapes\n", loaded->path, args.model.device,
                           encoder.hidden_size(), backend::PlanGrid(grid).size());
  absl::StatusOr<std::vector<GridPoint>> points = backend::RunCalibrationGrid(encoder, grid, DrawProgress);
  if (!points.ok()) Fail(kCommand, Text(points.status()));
  absl::StatusOr<std::int64_t> rss_loaded = backend::ReadProcStatusBytes("VmRSS");
  if (!rss_loaded.ok()) Fail(kCommand, Text(rss_loaded.status()));

  m.model["path"] = loaded->path;
  m.model["hidden_size"] = encoder.hidden_size();
  m.device = args.model.device;
  m.pooling = loaded->pooling;
  m.threads = args.model.threads;
  m.points = std::move(*points);
  m.loaded_bytes = *rss_loaded;
  m.load_bytes = *rss_loaded - *rss_before;
  return m;
}

// Reads the measurements back from a JSON file this command wrote.
Measured FromJson(const std::string& path) {
  Measured m;
  try {
    std::ifstream in(path);
    if (!in) Fail(kCommand, "cannot open " + path);
    const nlohmann::json j = nlohmann::json::parse(in);
    m.model = j.at("model");
    m.device = j.at("device").get<std::string>();
    m.pooling = j.at("pooling").get<std::string>();
    m.threads = j.at("threads").get<int>();
    m.loaded_bytes = j.at("loaded_process_bytes").get<std::int64_t>();
    m.load_bytes = j.at("model_load_bytes").get<std::int64_t>();
    m.points = ParseCalibrationGrid(j.at("grid"));
  } catch (const CLI::Error&) {  // a Fail above: already said why
    throw;
  } catch (const std::exception& e) {  // nlohmann's, and ParseCalibrationGrid's range errors
    Fail(kCommand, fmt::format("{} is not a calibration written by this command: {}", path, e.what()));
  }
  return m;
}

// The peak column: MiB, or "< R" for a reading below the probe's resolution.
std::string PeakCell(const GridPoint& p, std::int64_t resolution) {
  return p.peak_bytes >= resolution ? Mib(p.peak_bytes) : "<" + Mib(resolution);
}

void PrintReport(const CalibrateArgs& args, const Measured& m, const backend::CalibrationResult& r,
                 const backend::RecommendOptions& options) {
  const std::int64_t resolution = options.peak_resolution_bytes;
  std::cout << fmt::format("{:>5} {:>6} {:>8} {:>12} {:>12} {:>12} {:>12}\n", "B", "L", "B*L",
                           "latency_ms", "fit_ms", "peak_MiB", "fit_MiB");
  for (const GridPoint& p : m.points) {
    std::cout << fmt::format("{:>5} {:>6} {:>8} {:>12.2f} {:>12.2f} {:>12} {:>12}\n", p.batch_size,
                             p.seq_len, p.batch_size * p.seq_len, p.latency_us / 1000,
                             r.latency.At(p.batch_size, p.seq_len) / 1000, PeakCell(p, resolution),
                             Mib(r.memory.At(p.batch_size, p.seq_len)));
  }
  const std::size_t unmeasured = m.points.size() - r.measured.size();
  if (unmeasured > 0) {
    std::cout << fmt::format(
        "\n{} of {} shapes read below the peak-memory probe's resolution ({} MiB): not measured, "
        "left out of the memory fit\n",
        unmeasured, m.points.size(), Mib(resolution));
  }
  if (r.measured.size() < static_cast<std::size_t>(options.bounds.min_points)) {
    std::cout << "\nmemory  no fit: too few measured peaks\n";
  } else {
    std::cout << fmt::format(
        "\nmemory  bytes = {:.6g} + {:.6g}*B*L + {:.6g}*B*L^2   (max rel err {:.1f}% on {} large shapes "
        "(B*L >= {}), {:.1f}% on all measured)\n",
        r.memory.c0, r.memory.c1, r.memory.c2, 100 * r.memory_judgement.max_relative_error,
        r.memory_judgement.large_shapes, r.memory_judgement.large_from_tokens,
        100 * r.memory.max_relative_error);
  }
  std::cout << fmt::format(
      "latency us    = {:.6g} + {:.6g}*B*L + {:.6g}*B*L^2   (max rel err {:.1f}% on {} large shapes, "
      "{:.1f}% on all)\n",
      r.latency.c0, r.latency.c1, r.latency.c2, 100 * r.latency_judgement.max_relative_error,
      r.latency_judgement.large_shapes, 100 * r.latency.max_relative_error);
  if (!r.refusal.empty()) return;
  std::cout << fmt::format(
      "\nmemory limit {} MiB, {:.0f}% headroom, loaded process {} MiB -> {} MiB for forwards,\n"
      "x (1 - {:.3f} fit shortfall on large shapes) -> budget {} MiB; max_input_tokens {}, "
      "max_batch_size {}\n",
      Mib(args.memory_limit), args.headroom * 100, Mib(m.loaded_bytes), Mib(r.forward_bytes), r.shortfall,
      Mib(r.limits.memory_budget_bytes), r.limits.max_input_tokens,
      args.max_batch_size == 0 ? std::string("unbounded") : std::to_string(args.max_batch_size));
  for (const std::string& note : r.notes) std::cout << "  " << note << "\n";
  std::cout << fmt::format("recommended max_batch_tokens:  sum {}  padded {}  memory {} (bytes){}\n",
                           r.recommendation.sum_tokens, r.recommendation.padded_tokens,
                           r.recommendation.memory_bytes, args.extrapolate ? "  (extrapolation allowed)" : "");
}

nlohmann::json ResultJson(const CalibrateArgs& args, const Measured& m, const backend::CalibrationResult& r,
                          const backend::RecommendOptions& options) {
  const std::int64_t resolution = options.peak_resolution_bytes;
  auto judgement = [](const QuadraticFit& f, const backend::FitJudgement& j) {
    return nlohmann::json{{"max_relative_error", f.max_relative_error},
                          {"rms_relative_error", f.rms_relative_error},
                          {"large_shapes_from_tokens", j.large_from_tokens},
                          {"large_shapes", j.large_shapes},
                          {"large_shape_max_relative_error", j.max_relative_error}};
  };
  const backend::FitBounds& bounds = options.bounds;
  nlohmann::json out = {
      {"model", m.model},
      {"device", m.device},
      {"threads", m.threads},
      {"pooling", m.pooling},
      {"memory_model", FitJson(r.memory, "c0", "c1", "c2")},
      {"latency_model_us", FitJson(r.latency, "a", "b", "c")},
      {"fit",
       {{"memory", judgement(r.memory, r.memory_judgement)},
        {"latency", judgement(r.latency, r.latency_judgement)},
        {"bounds", {{"large_shape_fraction", bounds.large_shape_fraction},
                    {"min_large_shapes", bounds.min_large_shapes},
                    {"max_memory_error", bounds.max_memory_error},
                    {"max_latency_error", bounds.max_latency_error}}},
        {"method", "relative least squares with c >= 0; x1 = B*L, x2 = B*L^2; memory on the measured "
                   "peaks only"}}},
      {"peak_memory_method",
       m.device == "cpu"
           ? "VmHWM - VmRSS around each forward (malloc_trim, then /proc/self/clear_refs 5)"
           : "CUDA caching allocator peak allocated bytes minus allocated at reset"},
      {"peak_resolution_bytes", resolution},
      {"memory_limit_bytes", args.memory_limit},
      {"headroom", args.headroom},
      {"loaded_process_bytes", m.loaded_bytes},
      {"model_load_bytes", m.load_bytes},
      {"forward_bytes", static_cast<std::int64_t>(r.forward_bytes)},
      {"large_shape_fit_shortfall", r.shortfall},
      {"memory_budget_bytes", r.limits.memory_budget_bytes},
      {"max_input_tokens", r.limits.max_input_tokens},
      {"max_batch_size", args.max_batch_size},
      {"extrapolated", args.extrapolate},
      {"grid", nlohmann::json::array()},
  };
  if (r.refusal.empty()) {
    out["recommended_max_batch_tokens"] = {{"sum", r.recommendation.sum_tokens},
                                           {"padded", r.recommendation.padded_tokens},
                                           {"memory", r.recommendation.memory_bytes}};
    out["recommendation_notes"] = r.notes;
  } else {
    out["refused"] = r.refusal;
  }
  for (const GridPoint& p : m.points) {
    out["grid"].push_back({{"batch_size", p.batch_size},
                           {"seq_len", p.seq_len},
                           {"latency_us", p.latency_us},
                           {"peak_bytes", p.peak_bytes},
                           {"peak_measured", p.peak_bytes >= resolution}});
  }
  return out;
}

void Run(const CalibrateArgs& args) {
  const Measured m = args.from_json.empty() ? Measure(args) : FromJson(args.from_json);
  const std::int64_t max_positions = m.model.value("max_positions", std::int64_t{0});
  backend::RecommendOptions options;
  options.memory_limit_bytes = static_cast<std::int64_t>(args.memory_limit);
  options.headroom = args.headroom;
  options.loaded_process_bytes = m.loaded_bytes;
  options.max_input_tokens =
      args.max_input_tokens > 0 ? args.max_input_tokens : (max_positions > 0 ? max_positions : 512);
  options.max_batch_size = args.max_batch_size;
  options.peak_resolution_bytes = backend::PeakResolutionBytes(m.device);
  options.allow_extrapolation = args.extrapolate;
  absl::StatusOr<backend::CalibrationResult> r = backend::RecommendFromGrid(m.points, options);
  if (!r.ok()) Fail(kCommand, Text(r.status()));
  PrintReport(args, m, *r, options);
  if (!args.json_out.empty()) {
    std::ofstream file(args.json_out);
    file << ResultJson(args, m, *r, options).dump(2) << "\n";
    if (!file) Fail(kCommand, "cannot write " + args.json_out);
    std::cerr << "calibrate: wrote " << args.json_out << (r->refusal.empty() ? "" : " (without a recommendation)")
              << "\n";
  }
  if (!r->refusal.empty()) Fail(kCommand, "no recommendation: " + r->refusal);
}

}  // namespace

void AddCalibrateCommand(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure latency and peak memory of a TorchScript encoder over batch shapes, fit the "
      "memory and latency cost models, and recommend max_batch_tokens for a memory limit");
  CLI::Option* model_id = cmd->add_option("--model-id", args->model.model_id,
                                          "Hugging Face / sentence-transformers model directory to measure");
  CLI::Option* model = cmd->add_option("--model", args->model.model, "TorchScript encoder (.pt) to measure")
                           ->check(CLI::ExistingFile)
                           ->excludes(model_id);
  cmd->add_option("--dtype", args->model.dtype, "--model-id: float32, float16 or bfloat16")->capture_default_str();
  cmd->add_option("--execution", args->model.execution, "--model-id: packed or padded")->capture_default_str();
  cmd->add_option("--from-json", args->from_json,
                  "re-fit and re-recommend from a calibration JSON written earlier (no model run)")
      ->check(CLI::ExistingFile)
      ->excludes(model)
      ->excludes(model_id);
  cmd->add_option("--sidecar", args->sidecar,
                  "model shape JSON (default: the model path with .json, as gen_models.py writes)");
  cmd->add_option("--memory-limit", args->memory_limit,
                  "memory the serving process may use, e.g. 6GiB, 8GB, 2000000000")
      ->required()
      ->transform(CLI::AsSizeValue(true));
  cmd->add_option("--headroom", args->headroom, "fraction of the limit kept free")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--device", args->model.device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--cuda-memory-limit", args->model.cuda_memory_limit,
                  "--model-id on CUDA: cap the allocator at this many bytes (e.g. 24GB), as a smaller GPU")
      ->transform(CLI::AsSizeValue(true));
  cmd->add_option("--pooling", args->model.pooling,
                  "cls, mean or last (default: the directory's Pooling module; cls for --model)");
  cmd->add_option("--threads", args->model.threads,
                  "CPU threads per forward, libtorch's and OpenBLAS's (0 = all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--grid", args->grid,
                  "batch sizes and sequence lengths, B list:L list (default 1,2,4,8,16,32:16,32,"
                  "64,128,256,512)");
  cmd->add_option("--max-shape-tokens", args->max_shape_tokens, "skip shapes with B*L above this")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", args->warmup, "untimed runs per shape")->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", args->repeats, "timed runs per shape (median kept)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--vocab-size", args->vocab_size, "ids are drawn below this (default: sidecar)");
  cmd->add_option("--max-input-tokens", args->max_input_tokens,
                  "longest request the server admits (default: the model's max_positions, or 512)");
  cmd->add_option("--max-batch-size", args->max_batch_size,
                  "most requests per batch, bounds the worst-case padding (0 = unbounded)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", args->json_out, "write the calibration as JSON here");
  cmd->add_flag("--extrapolate", args->extrapolate,
                "allow budgets above the largest measured B*L, and --max-input-tokens above the longest "
                "measured length (recorded in the JSON; off: such budgets are lowered or refused)");
  cmd->callback([args] { Run(*args); });
}

}  // namespace tokenbatch::cli
