// `tokenbatch calibrate`: measure a TorchScript encoder over a grid of batch shapes
// on this device, fit the `memory` cost model (c0 + c1·B·L + c2·B·L² bytes) and a
// latency model (a + b·B·L + c·B·L² µs), and recommend max_batch_tokens for a
// memory limit under each cost model (sum, padded, memory). Prints a table; writes
// JSON the server can load with --json. Progress goes to stderr.
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
#include "cli/commands.h"
#include "tokenbatch/backend/calibration.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::cli {
namespace {

using backend::GridPoint;
using backend::QuadraticFit;

struct CalibrateArgs {
  std::string model;
  std::string sidecar;  // default: the model path with .json
  std::string device = "cpu";
  std::string pooling = "cls";
  int threads = 0;
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
};

[[noreturn]] void Fail(const std::string& message) {
  std::cerr << "calibrate: " << message << "\n";
  throw CLI::RuntimeError(1);
}

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
      if (used != item.size() || v < 1) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      Fail(fmt::format("bad --grid value \"{}\": expected positive integers", item));
    }
  }
  if (out.empty()) Fail("empty list in --grid");
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
  if (args.model.empty()) Fail("pass --model (or --from-json to re-fit a saved calibration)");
  // The model's shape from the sidecar gen_models.py writes (optional for other models).
  Measured m;
  const std::string sidecar =
      !args.sidecar.empty() ? args.sidecar
                            : std::filesystem::path(args.model).replace_extension(".json").string();
  if (std::filesystem::exists(sidecar)) {
    std::ifstream in(sidecar);
    try {
      m.model = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      Fail(fmt::format("cannot parse {}: {}", sidecar, e.what()));
    }
  }
  const std::int64_t vocab = args.vocab_size > 0 ? args.vocab_size : m.model.value("vocab", 0);
  const std::int64_t max_positions = m.model.value("max_positions", std::int64_t{0});
  if (vocab <= 0) Fail("unknown vocabulary size: pass --vocab-size or provide " + sidecar);

  backend::EncoderOptions options;
  options.model_path = args.model;
  options.device = args.device;
  options.num_threads = args.threads;
  options.vocab_size = vocab;
  options.max_positions = max_positions;
  absl::StatusOr<backend::Pooling> pooling = backend::ParsePooling(args.pooling);
  if (!pooling.ok()) Fail(Text(pooling.status()));
  options.pooling = *pooling;

  backend::GridOptions grid;
  if (!args.grid.empty()) {
    const size_t colon = args.grid.find(':');
    if (colon == std::string::npos) Fail("--grid must look like 1,2,4:16,64,256 (B list:L list)");
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
  if (backend::PlanGrid(grid).size() < 3) {
    Fail("the grid has fewer than 3 shapes within --max-shape-tokens; a 3-coefficient fit needs 3");
  }

  absl::StatusOr<std::int64_t> rss_before = backend::ReadProcStatusBytes("VmRSS");
  if (!rss_before.ok()) Fail(Text(rss_before.status()));
  absl::StatusOr<std::unique_ptr<backend::TorchEncoder>> encoder = backend::TorchEncoder::Load(options);
  if (!encoder.ok()) Fail(Text(encoder.status()));
  std::cerr << fmt::format("calibrate: {} on {}, hidden {}, {} shapes\n", args.model, args.device,
                           (*encoder)->hidden_size(), backend::PlanGrid(grid).size());
  absl::StatusOr<std::vector<GridPoint>> points =
      backend::RunCalibrationGrid(**encoder, grid, DrawProgress);
  if (!points.ok()) Fail(Text(points.status()));
  absl::StatusOr<std::int64_t> rss_loaded = backend::ReadProcStatusBytes("VmRSS");
  if (!rss_loaded.ok()) Fail(Text(rss_loaded.status()));

  m.model["path"] = args.model;
  m.model["hidden_size"] = (*encoder)->hidden_size();
  m.device = args.device;
  m.pooling = args.pooling;
  m.threads = args.threads;
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
    if (!in) Fail("cannot open " + path);
    const nlohmann::json j = nlohmann::json::parse(in);
    m.model = j.at("model");
    m.device = j.at("device").get<std::string>();
    m.pooling = j.at("pooling").get<std::string>();
    m.threads = j.at("threads").get<int>();
    m.loaded_bytes = j.at("loaded_process_bytes").get<std::int64_t>();
    m.load_bytes = j.at("model_load_bytes").get<std::int64_t>();
    for (const nlohmann::json& p : j.at("grid")) {
      m.points.push_back(GridPoint{p.at("batch_size").get<std::int64_t>(),
                                   p.at("seq_len").get<std::int64_t>(),
                                   p.at("latency_us").get<double>(),
                                   p.at("peak_bytes").get<std::int64_t>()});
    }
  } catch (const nlohmann::json::exception& e) {
    Fail(fmt::format("{} is not a calibration written by this command: {}", path, e.what()));
  }
  return m;
}

void Run(const CalibrateArgs& args) {
  const Measured m = args.from_json.empty() ? Measure(args) : FromJson(args.from_json);
  const std::vector<GridPoint>& points = m.points;
  const std::int64_t max_positions = m.model.value("max_positions", std::int64_t{0});
  const std::int64_t max_input =
      args.max_input_tokens > 0 ? args.max_input_tokens : (max_positions > 0 ? max_positions : 512);

  std::vector<double> bytes, micros;
  for (const GridPoint& p : points) {
    bytes.push_back(static_cast<double>(p.peak_bytes));
    micros.push_back(p.latency_us);
  }
  absl::StatusOr<QuadraticFit> mem = backend::FitQuadraticCost(points, bytes);
  absl::StatusOr<QuadraticFit> lat = backend::FitQuadraticCost(points, micros);
  if (!mem.ok()) Fail(Text(mem.status()));
  if (!lat.ok()) Fail(Text(lat.status()));

  // The forward may use what the limit leaves after the loaded process and headroom,
  // shrunk by the fit's worst relative shortfall among the shapes that matter for a
  // budget (peak >= 10% of the largest; tiny shapes are allocator noise), so that
  // the fitted model does not promise less than those shapes used.
  double max_peak = 0, shortfall = 0;
  for (const GridPoint& p : points) max_peak = std::max(max_peak, static_cast<double>(p.peak_bytes));
  for (const GridPoint& p : points) {
    if (p.peak_bytes < 0.1 * max_peak) continue;
    const double y = static_cast<double>(p.peak_bytes);
    shortfall = std::max(shortfall, (y - mem->At(p.batch_size, p.seq_len)) / y);
  }
  const double usable = static_cast<double>(args.memory_limit) * (1.0 - args.headroom) -
                        static_cast<double>(m.loaded_bytes);
  if (usable <= 0) {
    Fail(fmt::format("memory limit {} MiB leaves nothing after the loaded model ({} MiB) and {:.0f}% "
                     "headroom",
                     Mib(args.memory_limit), Mib(m.loaded_bytes), args.headroom * 100));
  }
  const double budget = usable / (1.0 + shortfall);
  backend::BudgetLimits limits{static_cast<std::int64_t>(budget), max_input, args.max_batch_size};
  absl::StatusOr<backend::Recommendation> rec = backend::RecommendBudgets(*mem, limits);
  if (!rec.ok()) Fail(Text(rec.status()));

  std::cout << fmt::format("{:>5} {:>6} {:>8} {:>12} {:>12} {:>12} {:>12}\n", "B", "L", "B*L",
                           "latency_ms", "fit_ms", "peak_MiB", "fit_MiB");
  for (const GridPoint& p : points) {
    std::cout << fmt::format("{:>5} {:>6} {:>8} {:>12.2f} {:>12.2f} {:>12} {:>12}\n", p.batch_size,
                             p.seq_len, p.batch_size * p.seq_len, p.latency_us / 1000,
                             lat->At(p.batch_size, p.seq_len) / 1000, Mib(p.peak_bytes),
                             Mib(mem->At(p.batch_size, p.seq_len)));
  }
  std::cout << fmt::format(
      "\nmemory  bytes = {:.6g} + {:.6g}*B*L + {:.6g}*B*L^2   (max rel err {:.1f}%, rms {:.1f}%, "
      "max under {:.1f}%)\n",
      mem->c0, mem->c1, mem->c2, 100 * mem->max_relative_error, 100 * mem->rms_relative_error,
      100 * mem->max_underestimate);
  std::cout << fmt::format(
      "latency us    = {:.6g} + {:.6g}*B*L + {:.6g}*B*L^2   (max rel err {:.1f}%, rms {:.1f}%)\n",
      lat->c0, lat->c1, lat->c2, 100 * lat->max_relative_error, 100 * lat->rms_relative_error);
  std::cout << fmt::format(
      "\nmemory limit {} MiB, {:.0f}% headroom, loaded process {} MiB -> {} MiB for forwards,\n"
      "/ (1 + {:.3f} fit shortfall on large shapes) -> budget {} MiB; max_input_tokens {}, "
      "max_batch_size {}\n",
      Mib(args.memory_limit), args.headroom * 100, Mib(m.loaded_bytes), Mib(usable), shortfall,
      Mib(budget), max_input,
      args.max_batch_size == 0 ? std::string("unbounded") : std::to_string(args.max_batch_size));
  std::cout << fmt::format(
      "recommended max_batch_tokens:  sum {}  padded {}  memory {} (bytes)\n", rec->sum_tokens,
      rec->padded_tokens, rec->memory_bytes);

  if (!args.json_out.empty()) {
    nlohmann::json out = {
        {"model", m.model},
        {"device", m.device},
        {"threads", m.threads},
        {"pooling", m.pooling},
        {"memory_model", FitJson(*mem, "c0", "c1", "c2")},
        {"latency_model_us", FitJson(*lat, "a", "b", "c")},
        {"fit",
         {{"memory", {{"max_relative_error", mem->max_relative_error},
                      {"rms_relative_error", mem->rms_relative_error}}},
          {"latency", {{"max_relative_error", lat->max_relative_error},
                       {"rms_relative_error", lat->rms_relative_error}}},
          {"method", "relative least squares with c >= 0; x1 = B*L, x2 = B*L^2"}}},
        {"peak_memory_method",
         m.device == "cpu"
             ? "VmHWM - VmRSS around each forward (malloc_trim, then /proc/self/clear_refs 5)"
             : "CUDA caching allocator peak allocated bytes minus allocated at reset"},
        {"memory_limit_bytes", args.memory_limit},
        {"headroom", args.headroom},
        {"loaded_process_bytes", m.loaded_bytes},
        {"model_load_bytes", m.load_bytes},
        {"forward_bytes", static_cast<std::int64_t>(usable)},
        {"large_shape_fit_shortfall", shortfall},
        {"memory_budget_bytes", limits.memory_budget_bytes},
        {"max_input_tokens", max_input},
        {"max_batch_size", args.max_batch_size},
        {"recommended_max_batch_tokens",
         {{"sum", rec->sum_tokens}, {"padded", rec->padded_tokens}, {"memory", rec->memory_bytes}}},
        {"grid", nlohmann::json::array()},
    };
    for (const GridPoint& p : points) {
      out["grid"].push_back({{"batch_size", p.batch_size},
                             {"seq_len", p.seq_len},
                             {"latency_us", p.latency_us},
                             {"peak_bytes", p.peak_bytes}});
    }
    std::ofstream file(args.json_out);
    file << out.dump(2) << "\n";
    if (!file) Fail("cannot write " + args.json_out);
    std::cerr << "calibrate: wrote " << args.json_out << "\n";
  }
}

}  // namespace

void AddCalibrateCommand(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure latency and peak memory of a TorchScript encoder over batch shapes, fit the "
      "memory and latency cost models, and recommend max_batch_tokens for a memory limit");
  cmd->add_option("--model", args->model, "TorchScript encoder (.pt) to measure")
      ->check(CLI::ExistingFile);
  cmd->add_option("--from-json", args->from_json,
                  "re-fit and re-recommend from a calibration JSON written earlier (no model run)")
      ->check(CLI::ExistingFile)
      ->excludes("--model");
  cmd->add_option("--sidecar", args->sidecar,
                  "model shape JSON (default: the model path with .json, as gen_models.py writes)");
  cmd->add_option("--memory-limit", args->memory_limit,
                  "memory the serving process may use, e.g. 6GiB, 8GB, 2000000000")
      ->required()
      ->transform(CLI::AsSizeValue(true));
  cmd->add_option("--headroom", args->headroom, "fraction of the limit kept free")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--device", args->device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--pooling", args->pooling, "cls, mean or last")->capture_default_str();
  cmd->add_option("--threads", args->threads,
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
  cmd->callback([args] { Run(*args); });
}

}  // namespace tokenbatch::cli
