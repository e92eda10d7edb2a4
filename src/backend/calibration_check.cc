#include "tokenbatch/backend/calibration_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

int64_t Tokens(const GridPoint& p) { return p.batch_size * p.seq_len; }

std::string Shape(const GridPoint& p) { return absl::StrCat("[", p.batch_size, ", ", p.seq_len, "]"); }

std::string Mib(double bytes) { return absl::StrFormat("%.1f MiB", bytes / (1 << 20)); }

// Whether max_input_tokens and max_batch_size let a batch of this shape form.
bool SizeAdmissible(const GridPoint& p, const BudgetLimits& limits) {
  return p.seq_len <= limits.max_input_tokens &&
         (limits.max_batch_size == 0 || p.batch_size <= limits.max_batch_size);
}

int64_t ForwardLimit(const BudgetLimits& limits) {
  return limits.forward_limit_bytes > 0 ? limits.forward_limit_bytes : limits.memory_budget_bytes;
}

// True unless every point lies on one line of the (B·L, B·L²) plane: then the
// columns 1, B·L, B·L² of the fit are linearly dependent and the per-token and
// attention coefficients cannot be told apart.
bool SeparatesTheTerms(std::span<const GridPoint> points) {
  if (points.size() < 3) return false;
  auto x = [](const GridPoint& p) { return static_cast<double>(Tokens(p)); };
  auto y = [](const GridPoint& p) { return static_cast<double>(Tokens(p)) * static_cast<double>(p.seq_len); };
  const GridPoint& a = points[0];
  size_t j = 1;
  while (j < points.size() && x(points[j]) == x(a) && y(points[j]) == y(a)) ++j;
  if (j == points.size()) return false;
  const GridPoint& b = points[j];
  for (const GridPoint& c : points) {
    const double cross = (x(b) - x(a)) * (y(c) - y(a)) - (y(b) - y(a)) * (x(c) - x(a));
    if (cross != 0) return true;
  }
  return false;
}

}  // namespace

int64_t PeakResolutionBytes(std::string_view device) {
  return device.substr(0, 4) == "cuda" ? kCudaPeakResolutionBytes : kCpuPeakResolutionBytes;
}

std::vector<GridPoint> MeasuredPeaks(std::span<const GridPoint> points, int64_t resolution_bytes) {
  std::vector<GridPoint> out;
  for (const GridPoint& p : points) {
    if (p.peak_bytes >= resolution_bytes) out.push_back(p);
  }
  return out;
}

absl::StatusOr<FitJudgement> JudgeFit(const QuadraticFit& fit, std::span<const GridPoint> points,
                                      std::span<const double> y, double max_error,
                                      const FitBounds& bounds, std::string_view what_view) {
  const std::string what(what_view);  // absl::StrCat here may predate std::string_view
  if (points.size() != y.size()) {
    return InvalidArgumentError(absl::StrCat(what, " fit: ", points.size(), " shapes but ", y.size(), " values"));
  }
  if (points.size() < 3) {
    return InvalidArgumentError(absl::StrCat(
        "only ", points.size(), " shapes have a measured ", what,
        " (a 3-coefficient fit needs 3): measure larger shapes (a larger --grid)"));
  }
  if (!SeparatesTheTerms(points)) {
    return InvalidArgumentError(absl::StrCat(
        "the shapes with a measured ", what, " all lie on one line of (B*L, B*L^2) (for example a "
        "single sequence length), so the fit cannot tell per-token cost from attention cost: add "
        "sequence lengths to --grid"));
  }
  int64_t max_tokens = 0;
  for (const GridPoint& p : points) max_tokens = std::max(max_tokens, Tokens(p));
  FitJudgement judgement;
  judgement.large_from_tokens =
      static_cast<int64_t>(std::ceil(bounds.large_shape_fraction * static_cast<double>(max_tokens)));
  for (size_t i = 0; i < points.size(); ++i) {
    if (Tokens(points[i]) < judgement.large_from_tokens) continue;
    ++judgement.large_shapes;
    const double error = std::abs(fit.At(points[i].batch_size, points[i].seq_len) - y[i]) / std::max(y[i], 1e-300);
    if (judgement.large_shapes == 1 || error > judgement.max_relative_error) {
      judgement.max_relative_error = error;
      judgement.worst = points[i];
    }
  }
  if (judgement.large_shapes < bounds.min_large_shapes) {
    return InvalidArgumentError(absl::StrCat(
        "only ", judgement.large_shapes, " shape(s) with a measured ", what, " have B*L >= ",
        judgement.large_from_tokens, " (the shapes that decide a budget); at least ",
        bounds.min_large_shapes, " are needed to judge the fit: add large shapes to --grid"));
  }
  if (!(judgement.max_relative_error <= max_error)) {
    return InvalidArgumentError(absl::StrFormat(
        "the %s fit misses the large shape %s by %.1f%% (bound %.0f%% on shapes with B*L >= %d): "
        "the measurements do not follow c0 + c1*B*L + c2*B*L^2 closely enough to budget from. "
        "Measure again with other work stopped, more --repeats, fewer --threads (1 gives the "
        "steadiest figures), or a larger --grid",
        what, Shape(judgement.worst), 100 * judgement.max_relative_error, 100 * max_error,
        judgement.large_from_tokens));
  }
  return judgement;
}

MeasuredRange RangeOf(const QuadraticFit& memory, std::span<const GridPoint> measured) {
  MeasuredRange range;
  for (const GridPoint& p : measured) {
    range.max_tokens = std::max(range.max_tokens, Tokens(p));
    range.max_seq_len = std::max(range.max_seq_len, p.seq_len);
    range.max_fitted_bytes = std::max(range.max_fitted_bytes, memory.At(p.batch_size, p.seq_len));
  }
  return range;
}

absl::StatusOr<Recommendation> LimitToMeasurements(const Recommendation& recommendation,
                                                   const QuadraticFit& memory,
                                                   std::span<const GridPoint> measured,
                                                   const BudgetLimits& limits, bool allow_extrapolation,
                                                   std::vector<std::string>* notes) {
  const MeasuredRange range = RangeOf(memory, measured);
  if (!allow_extrapolation && limits.max_input_tokens > range.max_seq_len) {
    return InvalidArgumentError(absl::StrCat(
        "max_input_tokens ", limits.max_input_tokens, " is longer than the longest measured sequence (",
        range.max_seq_len, " tokens): add ", limits.max_input_tokens,
        " to --grid's lengths, lower --max-input-tokens, or pass --extrapolate"));
  }
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  int64_t token_cap = allow_extrapolation ? kUnbounded : range.max_tokens;
  double byte_cap = allow_extrapolation ? std::numeric_limits<double>::infinity() : range.max_fitted_bytes;
  std::string token_why = absl::StrCat("the largest measured shape has ", range.max_tokens,
                                       " tokens (--extrapolate goes beyond it)");
  std::string byte_why = absl::StrCat("the largest measured shape is fitted at ",
                                      static_cast<int64_t>(range.max_fitted_bytes), " bytes");
  for (const GridPoint& p : measured) {
    if (!SizeAdmissible(p, limits) || p.peak_bytes <= ForwardLimit(limits)) continue;
    const std::string why = absl::StrCat("the measured shape ", Shape(p), " used ", Mib(p.peak_bytes),
                                         ", more than the ", Mib(ForwardLimit(limits)), " the limit leaves");
    if (Tokens(p) - 1 < token_cap) {
      token_cap = Tokens(p) - 1;
      token_why = why;
    }
    const double fitted = memory.At(p.batch_size, p.seq_len);
    if (std::ceil(fitted) - 1 < byte_cap) {
      byte_cap = std::max(0.0, std::ceil(fitted) - 1);
      byte_why = why;
    }
  }
  Recommendation out = recommendation;
  auto lower = [&](int64_t& budget, int64_t cap, const char* name, const std::string& why) {
    if (budget <= cap) return;
    if (notes != nullptr) {
      notes->push_back(absl::StrCat(name, " budget lowered from ", budget, " to ", cap, ": ", why));
    }
    budget = cap;
  };
  lower(out.sum_tokens, token_cap, "sum", token_why);
  lower(out.padded_tokens, token_cap, "padded", token_why);
  const int64_t byte_cap_int =
      byte_cap >= static_cast<double>(kUnbounded) ? kUnbounded : static_cast<int64_t>(byte_cap);
  lower(out.memory_bytes, byte_cap_int, "memory", byte_why);
  return out;
}

absl::Status CheckRecommendation(const Recommendation& recommendation, const QuadraticFit& memory,
                                 std::span<const GridPoint> measured, const BudgetLimits& limits,
                                 bool extrapolated) {
  const MeasuredRange range = RangeOf(memory, measured);
  if (!extrapolated && limits.max_input_tokens > range.max_seq_len) {
    return InvalidArgumentError(absl::StrCat("max_input_tokens ", limits.max_input_tokens,
                                             " is longer than the longest measured sequence (",
                                             range.max_seq_len, " tokens), and the calibration does "
                                             "not say it extrapolates"));
  }
  // The fit's own rounding: a budget found by search may sit a hair over in double.
  const double budget = static_cast<double>(limits.memory_budget_bytes) * (1 + 1e-9) + 1;
  for (const auto& [name, tokens, padded] :
       {std::tuple{"sum", recommendation.sum_tokens, false}, std::tuple{"padded", recommendation.padded_tokens, true}}) {
    if (tokens <= 0) continue;
    const double worst = WorstCaseBytes(memory, tokens, padded, limits);
    if (worst > budget) {
      return InvalidArgumentError(absl::StrCat("the ", name, " budget ", tokens, " admits a batch predicted at ",
                                               Mib(worst), ", above the memory budget of ",
                                               Mib(static_cast<double>(limits.memory_budget_bytes))));
    }
    if (!extrapolated && tokens > range.max_tokens) {
      return InvalidArgumentError(absl::StrCat("the ", name, " budget ", tokens,
                                               " is above the largest measured shape (", range.max_tokens,
                                               " tokens), and the calibration does not say it extrapolates"));
    }
    for (const GridPoint& p : measured) {
      if (SizeAdmissible(p, limits) && Tokens(p) <= tokens && p.peak_bytes > ForwardLimit(limits)) {
        return InvalidArgumentError(absl::StrCat("the ", name, " budget ", tokens, " admits the measured shape ",
                                                 Shape(p), ", which used ", Mib(p.peak_bytes), ", more than the ",
                                                 Mib(ForwardLimit(limits)), " the limit leaves"));
      }
    }
  }
  const int64_t bytes = recommendation.memory_bytes;
  if (bytes > 0) {
    if (static_cast<double>(bytes) > budget) {
      return InvalidArgumentError(absl::StrCat("the memory budget of ", bytes, " bytes is above the ",
                                               limits.memory_budget_bytes, " bytes the limit allows"));
    }
    if (!extrapolated && static_cast<double>(bytes) > range.max_fitted_bytes + 1) {
      return InvalidArgumentError(absl::StrCat("the memory budget of ", bytes,
                                               " bytes is above the largest measured shape's fitted ",
                                               static_cast<int64_t>(range.max_fitted_bytes),
                                               " bytes, and the calibration does not say it extrapolates"));
    }
    for (const GridPoint& p : measured) {
      if (SizeAdmissible(p, limits) && memory.At(p.batch_size, p.seq_len) <= static_cast<double>(bytes) &&
          p.peak_bytes > ForwardLimit(limits)) {
        return InvalidArgumentError(absl::StrCat("the memory budget of ", bytes, " bytes admits the measured shape ",
                                                 Shape(p), ", which used ", Mib(p.peak_bytes), ", more than the ",
                                                 Mib(ForwardLimit(limits)), " the limit leaves"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tokenbatch::backend
