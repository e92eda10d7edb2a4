#include "tokenbatch/backend/calibration_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 62;  // saturation for admitted-token counts

int64_t Tokens(const GridPoint& p) { return p.batch_size * p.seq_len; }

std::string Shape(const GridPoint& p) { return absl::StrCat("[", p.batch_size, ", ", p.seq_len, "]"); }

std::string Mib(double bytes) { return absl::StrFormat("%.1f MiB", bytes / (1 << 20)); }

const char* Name(BudgetKind kind) {
  return kind == BudgetKind::kSum ? "sum" : kind == BudgetKind::kPadded ? "padded" : "memory";
}

int64_t ForwardLimit(const BudgetLimits& limits) {
  return limits.forward_limit_bytes > 0 ? limits.forward_limit_bytes : limits.memory_budget_bytes;
}

// True unless every point lies on one line of the (B·L, B·L²) plane: then the
// columns 1, B·L, B·L² of the fit are linearly dependent and the per-token and
// attention coefficients cannot be told apart.
bool SeparatesTheTerms(std::span<const GridPoint> points) {
  auto x = [](const GridPoint& p) { return static_cast<double>(Tokens(p)); };
  auto y = [](const GridPoint& p) { return static_cast<double>(Tokens(p)) * static_cast<double>(p.seq_len); };
  if (points.empty()) return false;
  const GridPoint& a = points[0];
  size_t j = 1;
  while (j < points.size() && x(points[j]) == x(a) && y(points[j]) == y(a)) ++j;
  if (j == points.size()) return false;
  const GridPoint& b = points[j];
  for (const GridPoint& c : points) {
    if ((x(b) - x(a)) * (y(c) - y(a)) - (y(b) - y(a)) * (x(c) - x(a)) != 0) return true;
  }
  return false;
}

// The largest budget in [0, budget] whose admitted batches stay within max_tokens.
int64_t LargestWithin(BudgetKind kind, int64_t budget, int64_t max_tokens, const QuadraticFit& memory,
                      const BudgetLimits& limits) {
  if (LargestAdmittedTokens(kind, budget, memory, limits) <= max_tokens) return budget;
  int64_t lo = 0, hi = budget;  // admitted(lo) <= max_tokens < admitted(hi); non-decreasing in the budget
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (LargestAdmittedTokens(kind, mid, memory, limits) <= max_tokens ? lo : hi) = mid;
  }
  return lo;
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

absl::Status JudgeFit(const QuadraticFit& fit, std::span<const GridPoint> points, std::span<const double> y,
                      double max_error, const FitBounds& bounds, std::string_view what_view,
                      FitJudgement* judgement) {
  const std::string what(what_view);  // absl::StrCat here may predate std::string_view
  FitJudgement local;
  FitJudgement& j = judgement != nullptr ? *judgement : local;
  j = FitJudgement{};
  if (points.size() != y.size()) {
    return InvalidArgumentError(absl::StrCat(what, " fit: ", points.size(), " shapes but ", y.size(), " values"));
  }
  // The figures first, so that a refusal below can still be reported with them.
  int64_t max_tokens = 0;
  for (const GridPoint& p : points) max_tokens = std::max(max_tokens, Tokens(p));
  j.large_from_tokens =
      static_cast<int64_t>(std::ceil(bounds.large_shape_fraction * static_cast<double>(max_tokens)));
  for (size_t i = 0; i < points.size(); ++i) {
    if (Tokens(points[i]) < j.large_from_tokens) continue;
    ++j.large_shapes;
    const double error = std::abs(fit.At(points[i].batch_size, points[i].seq_len) - y[i]) / std::max(y[i], 1e-300);
    if (j.large_shapes == 1 || !(error <= j.max_relative_error)) {
      j.max_relative_error = error;
      j.worst = points[i];
    }
  }
  if (points.size() < static_cast<size_t>(bounds.min_points)) {
    return InvalidArgumentError(absl::StrCat(
        "only ", points.size(), " shapes have a measured ", what, "; at least ", bounds.min_points,
        " are needed to judge a 3-coefficient fit (3 fit exactly whatever their noise): add shapes to --grid"));
  }
  if (!SeparatesTheTerms(points)) {
    return InvalidArgumentError(absl::StrCat(
        "the shapes with a measured ", what, " all lie on one line of (B*L, B*L^2) (for example a "
        "single sequence length), so the fit cannot tell per-token cost from attention cost: add "
        "sequence lengths to --grid"));
  }
  if (j.large_shapes < bounds.min_large_shapes) {
    return InvalidArgumentError(absl::StrCat(
        "only ", j.large_shapes, " shape(s) with a measured ", what, " have B*L >= ", j.large_from_tokens,
        " (the shapes that decide a budget); at least ", bounds.min_large_shapes,
        " are needed to judge the fit: add large shapes to --grid"));
  }
  if (!(j.max_relative_error <= max_error)) {
    return InvalidArgumentError(absl::StrFormat(
        "the %s fit misses the large shape %s by %.1f%% (bound %.0f%% on shapes with B*L >= %d): "
        "the measurements do not follow c0 + c1*B*L + c2*B*L^2 closely enough to budget from. "
        "Measure again with other work stopped, more --repeats, fewer --threads (1 gives the "
        "steadiest figures), or a larger --grid",
        what, Shape(j.worst), 100 * j.max_relative_error, 100 * max_error, j.large_from_tokens));
  }
  return absl::OkStatus();
}

double LargeShapeShortfall(const QuadraticFit& memory, std::span<const GridPoint> measured,
                           int64_t large_from_tokens) {
  double shortfall = 0;
  for (const GridPoint& p : measured) {
    if (Tokens(p) < large_from_tokens || p.peak_bytes <= 0) continue;
    const double y = static_cast<double>(p.peak_bytes);
    shortfall = std::max(shortfall, (y - memory.At(p.batch_size, p.seq_len)) / y);
  }
  return shortfall;
}

bool Admits(BudgetKind kind, int64_t budget, const GridPoint& shape, const QuadraticFit& memory,
            const BudgetLimits& limits) {
  return budget > 0 && Formable(shape, limits) &&
         static_cast<double>(shape.batch_size) <= MostRows(kind, budget, shape.seq_len, memory, limits);
}

int64_t LargestAdmittedTokens(BudgetKind kind, int64_t budget, const QuadraticFit& memory,
                              const BudgetLimits& limits) {
  if (budget <= 0) return 0;
  const int64_t longest = kind == BudgetKind::kMemory ? limits.max_input_tokens
                                                      : std::min(budget, limits.max_input_tokens);
  double largest = 0;
  for (int64_t l = 1; l <= longest; ++l) {
    const double rows = MostRows(kind, budget, l, memory, limits);
    if (rows >= 1) largest = std::max(largest, rows * static_cast<double>(l));
  }
  return largest >= static_cast<double>(kMaxTokens) ? kMaxTokens : static_cast<int64_t>(largest);
}

MeasuredRange RangeOf(std::span<const GridPoint> measured) {
  MeasuredRange range;
  for (const GridPoint& p : measured) {
    range.max_tokens = std::max(range.max_tokens, Tokens(p));
    range.max_seq_len = std::max(range.max_seq_len, p.seq_len);
  }
  return range;
}

absl::StatusOr<Recommendation> LimitToMeasurements(const Recommendation& recommendation,
                                                   const QuadraticFit& memory,
                                                   std::span<const GridPoint> measured,
                                                   const BudgetLimits& limits, bool allow_extrapolation,
                                                   std::vector<std::string>* notes) {
  Recommendation out = recommendation;
  if (allow_extrapolation) return out;
  const MeasuredRange range = RangeOf(measured);
  if (limits.max_input_tokens > range.max_seq_len) {
    return InvalidArgumentError(absl::StrCat(
        "max_input_tokens ", limits.max_input_tokens, " is longer than the longest measured sequence (",
        range.max_seq_len, " tokens): add ", limits.max_input_tokens,
        " to --grid's lengths, lower --max-input-tokens, or pass --extrapolate"));
  }
  for (auto [kind, budget] : {std::tuple{BudgetKind::kSum, &out.sum_tokens},
                              std::tuple{BudgetKind::kPadded, &out.padded_tokens},
                              std::tuple{BudgetKind::kMemory, &out.memory_bytes}}) {
    const int64_t within = LargestWithin(kind, *budget, range.max_tokens, memory, limits);
    if (within == *budget) continue;
    if (notes != nullptr) {
      notes->push_back(absl::StrCat(Name(kind), " budget lowered from ", *budget, " to ", within,
                                    ": it admitted batches of more than the ", range.max_tokens,
                                    " tokens (B*L) of the largest measured shape (--extrapolate allows them)"));
    }
    *budget = within;
  }
  return out;
}

absl::Status CheckRecommendation(const Recommendation& recommendation, const QuadraticFit& memory,
                                 std::span<const GridPoint> measured, const BudgetLimits& limits,
                                 bool extrapolated) {
  const MeasuredRange range = RangeOf(measured);
  if (!extrapolated && limits.max_input_tokens > range.max_seq_len) {
    return InvalidArgumentError(absl::StrCat("max_input_tokens ", limits.max_input_tokens,
                                             " is longer than the longest measured sequence (",
                                             range.max_seq_len, " tokens), and the calibration does "
                                             "not say it extrapolates"));
  }
  // The fit's own rounding: a budget found by search may sit a hair over in double.
  const double budget_bytes = static_cast<double>(limits.memory_budget_bytes) * (1 + 1e-9) + 1;
  for (auto [kind, budget] : {std::tuple{BudgetKind::kSum, recommendation.sum_tokens},
                              std::tuple{BudgetKind::kPadded, recommendation.padded_tokens},
                              std::tuple{BudgetKind::kMemory, recommendation.memory_bytes}}) {
    if (budget <= 0) continue;
    const double worst = kind == BudgetKind::kMemory ? static_cast<double>(budget)
                                                     : WorstCaseBytes(memory, budget, kind == BudgetKind::kPadded, limits);
    if (worst > budget_bytes) {
      return InvalidArgumentError(absl::StrCat("the ", Name(kind), " budget ", budget, " admits a batch predicted at ",
                                               Mib(worst), ", above the memory budget of ",
                                               Mib(static_cast<double>(limits.memory_budget_bytes))));
    }
    const int64_t admitted = LargestAdmittedTokens(kind, budget, memory, limits);
    if (!extrapolated && admitted > range.max_tokens) {
      return InvalidArgumentError(absl::StrCat("the ", Name(kind), " budget ", budget, " admits batches of ", admitted,
                                               " tokens (B*L), above the largest measured shape (", range.max_tokens,
                                               " tokens), and the calibration does not say it extrapolates"));
    }
    for (const GridPoint& p : measured) {
      if (p.peak_bytes > ForwardLimit(limits) && Admits(kind, budget, p, memory, limits)) {
        return InvalidArgumentError(absl::StrCat("the ", Name(kind), " budget ", budget, " admits the measured shape ",
                                                 Shape(p), ", which used ", Mib(static_cast<double>(p.peak_bytes)),
                                                 ", more than the ", Mib(static_cast<double>(ForwardLimit(limits))),
                                                 " the limit leaves"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tokenbatch::backend
