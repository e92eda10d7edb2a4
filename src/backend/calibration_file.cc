#include "backend/calibration_file.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

// Largest lengths and batch sizes a file may name (the checks scan lengths).
constexpr std::int64_t kMaxLength = std::int64_t{1} << 20;

// An integer field within [lo, hi]; throws (as nlohmann does) otherwise, so that a
// float such as 1e30 never reaches a narrowing conversion.
std::int64_t Int(const nlohmann::json& j, const char* key, std::int64_t lo, std::int64_t hi) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    throw std::out_of_range(absl::StrCat("\"", key, "\" must be an integer in [", lo, ", ", hi, "], got ", v.dump()));
  }
  return v.get<std::int64_t>();
}

// A finite, non-negative number field.
double NonNegative(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    throw std::out_of_range(absl::StrCat("\"", key, "\" must be a finite number >= 0, got ", v.dump()));
  }
  return v.get<double>();
}

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

}  // namespace

std::vector<backend::GridPoint> ParseCalibrationGrid(const nlohmann::json& grid) {
  std::vector<backend::GridPoint> points;
  for (const nlohmann::json& p : grid) {
    points.push_back(backend::GridPoint{Int(p, "batch_size", 1, kMaxLength), Int(p, "seq_len", 1, kMaxLength),
                                        NonNegative(p, "latency_us"), Int(p, "peak_bytes", 0, kInt64Max)});
  }
  return points;
}

absl::StatusOr<CalibrationFile> ParseCalibrationFile(const nlohmann::json& file) {
  CalibrationFile f;
  try {
    f.device = file.at("device").get<std::string>();
    f.grid = ParseCalibrationGrid(file.at("grid"));
    // A file may not claim a finer resolution than its probe has.
    f.peak_resolution_bytes = file.contains("peak_resolution_bytes")
                                  ? Int(file, "peak_resolution_bytes", backend::PeakResolutionBytes(f.device), kInt64Max)
                                  : backend::PeakResolutionBytes(f.device);
    const nlohmann::json& mem = file.at("memory_model");
    f.memory = backend::QuadraticFit{NonNegative(mem, "c0"), NonNegative(mem, "c1"), NonNegative(mem, "c2")};
    const nlohmann::json& lat = file.at("latency_model_us");
    f.latency = backend::QuadraticFit{NonNegative(lat, "a"), NonNegative(lat, "b"), NonNegative(lat, "c")};
    f.limits.memory_budget_bytes = Int(file, "memory_budget_bytes", 0, kInt64Max);
    f.limits.max_input_tokens = Int(file, "max_input_tokens", 1, kMaxLength);
    f.limits.max_batch_size = Int(file, "max_batch_size", 0, kMaxLength);
    f.limits.forward_limit_bytes = Int(file, "forward_bytes", 0, kInt64Max);
    if (file.contains("recommended_max_batch_tokens")) {
      const nlohmann::json& rec = file.at("recommended_max_batch_tokens");
      f.recommendation = backend::Recommendation{Int(rec, "sum", 0, kInt64Max), Int(rec, "padded", 0, kInt64Max),
                                                 Int(rec, "memory", 0, kInt64Max)};
    }
    f.extrapolated = file.value("extrapolated", false);
    f.memory_limit_bytes = Int(file, "memory_limit_bytes", 1, kInt64Max);
    f.headroom = NonNegative(file, "headroom");
    f.loaded_process_bytes = Int(file, "loaded_process_bytes", 0, kInt64Max);
    f.refused = file.value("refused", std::string());
    if (file.contains("fingerprint") && !file.at("fingerprint").is_null()) {
      absl::StatusOr<backend::ModelFingerprint> fingerprint = backend::ParseFingerprint(file.at("fingerprint"));
      if (!fingerprint.ok()) return fingerprint.status();
      f.fingerprint = *fingerprint;
    }
  } catch (const std::exception& e) {  // nlohmann's, and Int's and NonNegative's range errors
    return InvalidArgumentError(absl::StrCat("not a calibration written by `tokenbatch calibrate`: ", e.what()));
  }
  return f;
}

absl::Status CheckCalibrationFile(const CalibrationFile& file, const backend::FitBounds& bounds) {
  if (!file.refused.empty()) {
    return InvalidArgumentError(absl::StrCat("calibrate recommended nothing: ", file.refused));
  }
  if (!file.recommendation) return InvalidArgumentError("it has no recommended_max_batch_tokens");
  const std::vector<backend::GridPoint> measured = backend::MeasuredPeaks(file.grid, file.peak_resolution_bytes);
  std::vector<double> bytes, micros;
  for (const backend::GridPoint& p : measured) bytes.push_back(static_cast<double>(p.peak_bytes));
  for (const backend::GridPoint& p : file.grid) micros.push_back(p.latency_us);
  backend::FitJudgement judgement;
  if (absl::Status s = backend::JudgeFit(file.memory, measured, bytes, bounds.max_memory_error, bounds, "memory",
                                        &judgement);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = backend::JudgeFit(file.latency, file.grid, micros, bounds.max_latency_error, bounds,
                                        "latency", nullptr);
      !s.ok()) {
    return s;
  }
  // The memory for forwards and the budget, as RecommendFromGrid derives them (to
  // a byte of rounding): a hand-edited or older file may not claim more.
  const double forward = static_cast<double>(file.memory_limit_bytes) * (1.0 - file.headroom) -
                         static_cast<double>(file.loaded_process_bytes);
  if (static_cast<double>(file.limits.forward_limit_bytes) > forward + 1) {
    return InvalidArgumentError(absl::StrCat("forward_bytes ", file.limits.forward_limit_bytes, " is more than the ",
                                             static_cast<std::int64_t>(forward),
                                             " its memory limit, headroom and loaded process leave"));
  }
  const double shortfall = backend::LargeShapeShortfall(file.memory, measured, judgement.large_from_tokens);
  const double budget = static_cast<double>(file.limits.forward_limit_bytes) * (1.0 - shortfall);
  if (static_cast<double>(file.limits.memory_budget_bytes) > budget + 1) {
    return InvalidArgumentError(absl::StrCat(
        "memory_budget_bytes ", file.limits.memory_budget_bytes, " is more than the forward memory shrunk by the fit's ",
        absl::StrFormat("%.1f%%", 100 * shortfall), " shortfall on the large shapes (",
        static_cast<std::int64_t>(budget), ")"));
  }
  return backend::CheckRecommendation(*file.recommendation, file.memory, measured, file.limits, file.extrapolated);
}

absl::StatusOr<CalibrationFile> ReadCalibrationFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgumentError(absl::StrCat(path, " cannot be read"));
  const nlohmann::json calib = nlohmann::json::parse(in, nullptr, false);
  if (calib.is_discarded() || !calib.is_object()) {
    return InvalidArgumentError(absl::StrCat(path, " is not a calibration file (not a JSON object)"));
  }
  absl::StatusOr<CalibrationFile> file = ParseCalibrationFile(calib);
  const absl::Status status = file.ok() ? CheckCalibrationFile(*file) : file.status();
  if (!status.ok()) return InvalidArgumentError(absl::StrCat(path, " is refused: ", status.message()));
  return file;
}

}  // namespace tokenbatch::backend
