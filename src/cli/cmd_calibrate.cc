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
#include "cli/calibrate_report.h"
#include "backend/calibration_file.h"
#include "backend/model_fingerprint.h"
#include "cli/commands.h"
#include "cli/enum_flag.h"
#include "cli/fail.h"
#include "cli/model_loader.h"
#include "tokenbatch/backend/calibration.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/hf/hf_encoder.h"

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"calibrate"};

using backend::GridPoint;
using backend::QuadraticFit;


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
    m.model["quantize"] = args.model.quantize;
    m.model["execution"] = args.model.execution;
    // The kernel decides the memory of a shape (eager holds the scores).
    m.model["attention"] = loaded->encoder->info().attention;
  }
  const backend::Encoder& encoder = *loaded->encoder;
  m.fingerprint = backend::FingerprintJson(
      backend::FingerprintOf(encoder.info(), encoder.hidden_size(), args.model.threads));

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
    m.points = backend::ParseCalibrationGrid(j.at("grid"));
    if (j.contains("fingerprint")) m.fingerprint = j.at("fingerprint");
    if (m.fingerprint.is_null()) {
      std::cerr << "calibrate: " << path << " records no fingerprint of the model it measured; serve --calibration "
                << "refuses what this writes: calibrate the model itself\n";
    }
  } catch (const CLI::Error&) {  // a Fail above: already said why
    throw;
  } catch (const std::exception& e) {  // nlohmann's, and ParseCalibrationGrid's range errors
    Fail(kCommand, fmt::format("{} is not a calibration written by this command: {}", path, e.what()));
  }
  return m;
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
  cmd->add_option("--quantize", args->model.quantize, "--model-id: none, or int8 (dynamic int8 linear layers)")
      ->capture_default_str()
      ->check(NamesValidator(hf::kQuantizationNames));
  cmd->add_option("--execution", args->model.execution, "--model-id: packed or padded")->capture_default_str();
  cmd->add_option("--attn-implementation", args->model.attention, "--model-id: auto, sdpa or eager")
      ->capture_default_str()
      ->check(NamesValidator(hf::kAttentionImplementationNames));
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
