// `tokenbatch calibrate`'s report: the table and the JSON (see calibrate_report.h).
#include "cli/calibrate_report.h"

#include <iostream>

#include <fmt/core.h>

namespace tokenbatch::cli {
namespace {

using backend::GridPoint;
using backend::QuadraticFit;

nlohmann::json FitJson(const QuadraticFit& f, const char* a, const char* b, const char* c) {
  return {{a, f.c0}, {b, f.c1}, {c, f.c2}};
}

// The peak column: MiB, or "< R" for a reading below the probe's resolution.
std::string PeakCell(const GridPoint& p, std::int64_t resolution) {
  return p.peak_bytes >= resolution ? Mib(p.peak_bytes) : "<" + Mib(resolution);
}

}  // namespace

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
      {"fingerprint", m.fingerprint},
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

std::string Mib(double bytes) { return fmt::format("{:.1f}", bytes / (1 << 20)); }

}  // namespace tokenbatch::cli
