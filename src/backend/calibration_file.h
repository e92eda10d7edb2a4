// A calibration file written by `tokenbatch calibrate`, read back and checked
// before anything trusts it (`serve --calibration`, `calibrate --from-json`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/backend/calibration_check.h"
#include "tokenbatch/backend/calibration_model.h"
#include "backend/model_fingerprint.h"

namespace tokenbatch::backend {

// The fields of a calibration file that its checks need. Files written before
// the checks existed lack peak_resolution_bytes and extrapolated: the resolution
// is then the device's (backend::PeakResolutionBytes) and extrapolated is false.
struct CalibrationFile {
  std::string device;                     // "cpu", "cuda:0", ...
  std::vector<backend::GridPoint> grid;   // every measured shape, as written
  std::int64_t peak_resolution_bytes = 0;
  backend::QuadraticFit memory;           // memory_model: c0, c1, c2 (bytes)
  backend::QuadraticFit latency;          // latency_model_us: a, b, c (µs)
  backend::BudgetLimits limits;           // memory_budget_bytes, max_input_tokens, max_batch_size, forward_bytes
  std::optional<backend::Recommendation> recommendation;  // recommended_max_batch_tokens, if any
  bool extrapolated = false;
  std::string refused;  // why calibrate recommended nothing, if it did not
  std::int64_t memory_limit_bytes = 0;    // --memory-limit
  double headroom = 0;                    // --headroom
  std::int64_t loaded_process_bytes = 0;  // the process with the model loaded
  // What was measured (model_fingerprint.h); unset in a file written before
  // calibrate recorded it, or by hand without one.
  std::optional<backend::ModelFingerprint> fingerprint;
};

// The grid array of a calibration file (batch_size, seq_len, latency_us,
// peak_bytes per shape). Throws nlohmann::json::exception on a missing field and
// std::out_of_range on a value that is not an integer in range (B and L in
// [1, 2^20], peak >= 0) or a latency that is not finite and >= 0.
[[nodiscard]] std::vector<backend::GridPoint> ParseCalibrationGrid(const nlohmann::json& grid);

// Reads a parsed calibration file. Errors: InvalidArgumentError naming the first
// missing, ill-typed or out-of-range field (coefficients must be finite and >= 0,
// max_input_tokens in [1, 2^20], max_batch_size in [0, 2^20], budgets >= 0, and
// peak_resolution_bytes no finer than the device's probe).
[[nodiscard]] absl::StatusOr<CalibrationFile> ParseCalibrationFile(const nlohmann::json& file);

// The checks `calibrate` applies before it recommends (calibration_check.h), run
// again on the file from its grid: the memory fit on the measured peaks and the
// latency fit on every shape must be within `bounds` on the large shapes; the
// memory for forwards must follow from the limit, headroom and loaded process,
// and the memory budget must be shrunk by the fit's shortfall on the large
// shapes; the recommendation must be within the memory budget and the measured
// range. Errors: InvalidArgumentError saying which check failed and why.
[[nodiscard]] absl::Status CheckCalibrationFile(const CalibrationFile& file,
                                                const backend::FitBounds& bounds = {});

// Reads, parses and checks the calibration file at `path` (ParseCalibrationFile,
// then CheckCalibrationFile), so that nothing sizes batches from a file that
// `calibrate` would not have recommended from. Blocks on the file read.
// Errors: InvalidArgumentError starting with `path` and saying why: unreadable,
// not a JSON object, a bad field, or a failed check ("... is refused: ...").
[[nodiscard]] absl::StatusOr<CalibrationFile> ReadCalibrationFile(const std::string& path);

}  // namespace tokenbatch::backend
