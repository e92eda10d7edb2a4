// RecommendFromGrid: from a measured grid to a recommendation that stays within
// what was measured (calibration.h, calibration_check.h).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tokenbatch/backend/calibration.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

// Largest max_input_tokens and max_batch_size accepted (budget scans are O(length)).
constexpr int64_t kMaxLength = int64_t{1} << 20;

std::string Mib(double bytes) { return absl::StrFormat("%.1f MiB", bytes / (1 << 20)); }

absl::Status CheckOptions(const RecommendOptions& o) {
  if (o.memory_limit_bytes <= 0 || !(o.headroom >= 0 && o.headroom < 1) || o.loaded_process_bytes < 0 ||
      o.max_input_tokens < 1 || o.max_input_tokens > kMaxLength || o.max_batch_size < 0 ||
      o.max_batch_size > kMaxLength || o.peak_resolution_bytes < 1) {
    return InvalidArgumentError(absl::StrCat(
        "bad recommendation options: memory_limit_bytes ", o.memory_limit_bytes, " (> 0), headroom ",
        o.headroom, " ([0, 1)), loaded_process_bytes ", o.loaded_process_bytes, " (>= 0), max_input_tokens ",
        o.max_input_tokens, " (1..", kMaxLength, "), max_batch_size ", o.max_batch_size, " (0..", kMaxLength,
        "), peak_resolution_bytes ",
        o.peak_resolution_bytes, " (>= 1)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CalibrationResult> RecommendFromGrid(std::span<const GridPoint> points,
                                                    const RecommendOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  CalibrationResult r;
  r.limits.max_input_tokens = options.max_input_tokens;  // used below, and reported even when refusing
  r.limits.max_batch_size = options.max_batch_size;
  r.forward_bytes = static_cast<double>(options.memory_limit_bytes) * (1.0 - options.headroom) -
                    static_cast<double>(options.loaded_process_bytes);
  if (r.forward_bytes <= 0) {
    return InvalidArgumentError(absl::StrFormat(
        "memory limit %s leaves nothing after the loaded model (%s) and %.0f%% headroom",
        Mib(static_cast<double>(options.memory_limit_bytes)),
        Mib(static_cast<double>(options.loaded_process_bytes)), options.headroom * 100));
  }
  std::vector<double> micros;
  for (const GridPoint& p : points) micros.push_back(p.latency_us);
  absl::StatusOr<QuadraticFit> latency = FitQuadraticCost(points, micros);
  if (!latency.ok()) return latency.status();
  r.latency = *latency;
  const absl::Status latency_verdict = JudgeFit(r.latency, points, micros, options.bounds.max_latency_error,
                                                options.bounds, "latency", &r.latency_judgement);

  auto refuse = [&](std::string why) {
    r.refusal = std::move(why);
    r.recommendation = Recommendation{};
    return r;
  };
  r.measured = MeasuredPeaks(points, options.peak_resolution_bytes);
  if (r.measured.size() < static_cast<size_t>(options.bounds.min_points)) {
    return refuse(absl::StrCat("only ", r.measured.size(), " of ", points.size(),
                               " shapes used at least the peak-memory probe's resolution of ",
                               Mib(static_cast<double>(options.peak_resolution_bytes)),
                               " (a smaller reading is not a measurement), and a fit needs ",
                               options.bounds.min_points, ": add larger shapes to --grid"));
  }
  std::vector<double> bytes;
  for (const GridPoint& p : r.measured) bytes.push_back(static_cast<double>(p.peak_bytes));
  absl::StatusOr<QuadraticFit> memory = FitQuadraticCost(r.measured, bytes);
  if (!memory.ok()) return memory.status();
  r.memory = *memory;

  // Both fits are judged (latency above) before either refuses, so that the report shows both.
  const absl::Status memory_verdict = JudgeFit(r.memory, r.measured, bytes, options.bounds.max_memory_error,
                                               options.bounds, "memory", &r.memory_judgement);
  if (!memory_verdict.ok()) return refuse(std::string(memory_verdict.message()));
  if (!latency_verdict.ok()) return refuse(std::string(latency_verdict.message()));

  // The fit may predict y·(1 - s) for a large shape that used y (s: its worst
  // relative shortfall there), so a batch predicted at F·(1 - s) may really use F.
  r.shortfall = LargeShapeShortfall(r.memory, r.measured, r.memory_judgement.large_from_tokens);
  double budget = r.forward_bytes * (1.0 - r.shortfall);
  // A measured shape that used more than the limit leaves must not be admitted, nor
  // its neighbours that the fit underestimates alike: the budget goes below its
  // fitted bytes scaled by what it really used.
  for (size_t i = 0; i < r.measured.size(); ++i) {
    const GridPoint& p = r.measured[i];
    if (!Formable(p, r.limits) || bytes[i] <= r.forward_bytes) continue;
    const double scaled = r.forward_bytes * r.memory.At(p.batch_size, p.seq_len) / bytes[i];
    if (scaled < budget) {
      budget = scaled;
      r.notes.push_back(absl::StrCat("memory budget lowered to ", Mib(scaled), ": the measured shape [",
                                     p.batch_size, ", ", p.seq_len, "] used ", Mib(bytes[i]), ", more than the ",
                                     Mib(r.forward_bytes), " the limit leaves"));
    }
  }
  r.limits.memory_budget_bytes = static_cast<int64_t>(std::max(budget, 0.0));
  r.limits.forward_limit_bytes = static_cast<int64_t>(r.forward_bytes);
  absl::StatusOr<Recommendation> fitted = RecommendBudgets(r.memory, r.limits);
  if (!fitted.ok()) return fitted.status();
  r.fitted = *fitted;
  absl::StatusOr<Recommendation> limited = LimitToMeasurements(
      r.fitted, r.memory, r.measured, r.limits, options.allow_extrapolation, &r.notes);
  if (!limited.ok()) return refuse(std::string(limited.status().message()));
  r.recommendation = *limited;
  if (r.recommendation.sum_tokens == 0 || r.recommendation.padded_tokens == 0 || r.recommendation.memory_bytes == 0) {
    return refuse(absl::StrCat("not even a one-token batch fits the memory budget of ",
                               Mib(static_cast<double>(r.limits.memory_budget_bytes)),
                               " for forwards: raise --memory-limit or lower --headroom"));
  }
  if (absl::Status s = CheckRecommendation(r.recommendation, r.memory, r.measured, r.limits,
                                           options.allow_extrapolation);
      !s.ok()) {
    return absl::InternalError(absl::StrCat("the recommendation fails its own check: ", s.message()));
  }
  return r;
}

}  // namespace tokenbatch::backend
