#include "cli/calibration_file.h"

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::cli {

std::vector<backend::GridPoint> ParseCalibrationGrid(const nlohmann::json& grid) {
  std::vector<backend::GridPoint> points;
  for (const nlohmann::json& p : grid) {
    points.push_back(backend::GridPoint{p.at("batch_size").get<std::int64_t>(), p.at("seq_len").get<std::int64_t>(),
                                        p.at("latency_us").get<double>(), p.at("peak_bytes").get<std::int64_t>()});
  }
  return points;
}

absl::StatusOr<CalibrationFile> ParseCalibrationFile(const nlohmann::json& file) {
  CalibrationFile f;
  try {
    f.device = file.at("device").get<std::string>();
    f.grid = ParseCalibrationGrid(file.at("grid"));
    f.peak_resolution_bytes = file.contains("peak_resolution_bytes")
                                  ? file.at("peak_resolution_bytes").get<std::int64_t>()
                                  : backend::PeakResolutionBytes(f.device);
    const nlohmann::json& mem = file.at("memory_model");
    f.memory = backend::QuadraticFit{mem.at("c0").get<double>(), mem.at("c1").get<double>(),
                                     mem.at("c2").get<double>()};
    const nlohmann::json& lat = file.at("latency_model_us");
    f.latency = backend::QuadraticFit{lat.at("a").get<double>(), lat.at("b").get<double>(), lat.at("c").get<double>()};
    f.limits.memory_budget_bytes = file.at("memory_budget_bytes").get<std::int64_t>();
    f.limits.max_input_tokens = file.at("max_input_tokens").get<std::int64_t>();
    f.limits.max_batch_size = file.at("max_batch_size").get<std::int64_t>();
    f.limits.forward_limit_bytes = file.at("forward_bytes").get<std::int64_t>();
    if (file.contains("recommended_max_batch_tokens")) {
      const nlohmann::json& rec = file.at("recommended_max_batch_tokens");
      f.recommendation = backend::Recommendation{rec.at("sum").get<std::int64_t>(),
                                                 rec.at("padded").get<std::int64_t>(),
                                                 rec.at("memory").get<std::int64_t>()};
    }
    f.extrapolated = file.value("extrapolated", false);
    f.refused = file.value("refused", std::string());
  } catch (const nlohmann::json::exception& e) {
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
  absl::StatusOr<backend::FitJudgement> memory =
      backend::JudgeFit(file.memory, measured, bytes, bounds.max_memory_error, bounds, "memory");
  if (!memory.ok()) return memory.status();
  absl::StatusOr<backend::FitJudgement> latency =
      backend::JudgeFit(file.latency, file.grid, micros, bounds.max_latency_error, bounds, "latency");
  if (!latency.ok()) return latency.status();
  return backend::CheckRecommendation(*file.recommendation, file.memory, measured, file.limits, file.extrapolated);
}

}  // namespace tokenbatch::cli
