// `tokenbatch calibrate`'s flags, what a grid run measured, and its report:
// the table on stdout and the JSON file `serve --calibration` reads
// (calibration_file.h reads it back).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/model_loader.h"
#include "tokenbatch/backend/calibration.h"

namespace tokenbatch::cli {

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

// What a grid run produced: enough to fit and recommend again later (--from-json).
struct Measured {
  nlohmann::json model = nlohmann::json::object();  // sidecar shape + path + hidden_size
  std::string device, pooling;
  int threads = 0;
  std::vector<backend::GridPoint> points;
  std::int64_t loaded_bytes = 0;  // VmRSS with the model loaded and warm, between forwards
  std::int64_t load_bytes = 0;    // VmRSS growth from loading and warming the model
  // backend::FingerprintJson of the model measured; null when a --from-json
  // source has none (serve then refuses the file it gives).
  nlohmann::json fingerprint;
};

// Megabytes (MiB) with one decimal, for the table and the progress line.
[[nodiscard]] std::string Mib(double bytes);

// Prints the grid, the fits and the recommendation (or why there is none) to stdout.
void PrintReport(const CalibrateArgs& args, const Measured& m, const backend::CalibrationResult& r,
                 const backend::RecommendOptions& options);

// The calibration file's JSON (the fields ParseCalibrationFile reads, and more).
[[nodiscard]] nlohmann::json ResultJson(const CalibrateArgs& args, const Measured& m,
                                        const backend::CalibrationResult& r, const backend::RecommendOptions& options);

}  // namespace tokenbatch::cli
