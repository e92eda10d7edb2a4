// What a calibration may be trusted for (pure, libtorch-free; used by
// `tokenbatch calibrate` before it recommends and by `serve --calibration`
// before it believes a file).
//
// A calibration only knows what it measured. Three rules follow:
//   1. Resolution. A peak below what the probe can resolve is "not measured", not
//      0 bytes: it is left out of the memory fit and reported as such. Left in,
//      a 0 row would weigh as much as a gigabyte row in a relative fit and can
//      pull every coefficient to 0.
//   2. The fit is judged where the budget is decided: on the large shapes (B·L at
//      least a fraction of the largest measured), and only if the measured shapes
//      can separate the per-token term from the attention term (they do not all
//      lie on one line of (B·L, B·L²), as a single-length grid does). A fit that
//      misses there by more than a stated bound recommends nothing.
//   3. No recommendation beyond the measurements: every budget's worst admissible
//      batch is predicted within the memory budget; no measured shape that a
//      budget admits used more than the limit leaves; and a budget that admits a
//      padded batch larger than the largest measured B·L, or a max_input_tokens
//      above the longest measured L, is extrapolation, allowed only when asked
//      for (and then recorded). "Admits" is each cost model's own rule: padded
//      B·Lmax <= T; sum: one Lmax-token request and B-1 one-token ones pad to
//      [B, Lmax] once Lmax + B - 1 <= T; memory: fitted bytes <= the budget.
// Everything here is pure and thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/backend/calibration_model.h"

namespace tokenbatch::backend {

// Resolution of the CPU probe (VmHWM - VmRSS, backend/peak_memory.h): /proc reports
// whole 4 KiB pages, but the allocator decides whether a forward touches new pages.
// tcmalloc keeps up to 4 MiB of freed small objects per thread cache, which
// MallocExtension_ReleaseFreeMemory does not return, and glibc keeps free chunks
// in its arenas; a forward that needs less than that is served from memory that
// is already resident and reads 0 or a fraction of its real use. The figure is
// one thread's cache: calibrate with --threads 1, or expect coarser readings.
inline constexpr int64_t kCpuPeakResolutionBytes = int64_t{4} << 20;
// Resolution of the CUDA probe (the caching allocator's peak allocated bytes): it
// rounds every block up to 512 bytes.
inline constexpr int64_t kCudaPeakResolutionBytes = 512;

// kCudaPeakResolutionBytes for a device named "cuda" or "cuda:N", else the CPU's.
[[nodiscard]] int64_t PeakResolutionBytes(std::string_view device);

// The points whose peak_bytes is at or above resolution_bytes, in order.
[[nodiscard]] std::vector<GridPoint> MeasuredPeaks(std::span<const GridPoint> points,
                                                   int64_t resolution_bytes);

// How strictly a fit is judged. The error bounds sit above the run-to-run spread
// of a quiet CPU machine's own measurements of one shape (the CPU peak probe and
// wall-clock timing; figures in docs/benchmarks.md), so that an honest grid
// passes, and far below the 100% error of a fit pulled to zero by readings that
// were not measurements. Within the bound, the memory budget is also shrunk by
// the fit's worst shortfall on the large shapes (RecommendFromGrid).
struct FitBounds {
  double large_shape_fraction = 0.25;  // large: B·L >= this × the largest measured B·L
  int min_points = 4;                  // more than the 3 coefficients, or any fit is exact
  int min_large_shapes = 2;            // fewer large shapes cannot judge a fit
  double max_memory_error = 0.35;      // max |fit - peak| / peak on the large shapes
  double max_latency_error = 0.35;     // the same for latency
};

// How a fit did on the large shapes (as far as JudgeFit got).
struct FitJudgement {
  int64_t large_from_tokens = 0;  // the smallest B·L counted as large
  int large_shapes = 0;           // how many measured shapes were large
  double max_relative_error = 0;  // max |fit - y| / y over them
  GridPoint worst;                // the large shape with that error
};

// Judges `fit` of `y[i]` (measured at points[i]; y > 0) against `max_error`,
// filling `judgement` (if not null) as far as it gets. `what` ("memory",
// "latency") names the fit in messages. Errors, each an InvalidArgumentError
// whose message says why and what to try: fewer than bounds.min_points points;
// points all on one line of (B·L, B·L²) (e.g. a single sequence length); fewer
// than bounds.min_large_shapes large shapes; an error above max_error on a large
// shape (the message names the shape).
[[nodiscard]] absl::Status JudgeFit(const QuadraticFit& fit, std::span<const GridPoint> points,
                                    std::span<const double> y, double max_error, const FitBounds& bounds,
                                    std::string_view what, FitJudgement* judgement);

// The fit's worst relative shortfall, max((peak - fit) / peak, 0), over the
// measured shapes with B·L >= large_from_tokens (FitJudgement). A batch the fit
// predicts at F·(1 - shortfall) may really use F, as those shapes did.
[[nodiscard]] double LargeShapeShortfall(const QuadraticFit& memory, std::span<const GridPoint> measured,
                                         int64_t large_from_tokens);

// Whether a `kind` budget lets a batch padded to `shape` (B rows of L tokens)
// form under `limits` (L <= max_input_tokens, B <= max_batch_size if > 0); see
// rule 3 above. `memory` gives the fitted bytes for kMemory.
[[nodiscard]] bool Admits(BudgetKind kind, int64_t budget, const GridPoint& shape, const QuadraticFit& memory,
                          const BudgetLimits& limits);

// The largest padded batch (B·Lmax tokens) a `kind` budget admits under `limits`
// (saturating at 2^62). O(max_input_tokens).
[[nodiscard]] int64_t LargestAdmittedTokens(BudgetKind kind, int64_t budget, const QuadraticFit& memory,
                                            const BudgetLimits& limits);

// The extent of the measured shapes.
struct MeasuredRange {
  int64_t max_tokens = 0;   // largest B·L measured
  int64_t max_seq_len = 0;  // longest L measured
};
// The largest B·L and L among `measured` (zeros when it is empty).
[[nodiscard]] MeasuredRange RangeOf(std::span<const GridPoint> measured);

// Lowers a recommendation to the largest budgets whose LargestAdmittedTokens is
// within the largest measured B·L, unless allow_extrapolation. Appends one line
// to `notes` (if not null) per budget it lowers. Errors: InvalidArgumentError
// when limits.max_input_tokens exceeds the longest measured L and extrapolation
// is not allowed.
[[nodiscard]] absl::StatusOr<Recommendation> LimitToMeasurements(
    const Recommendation& recommendation, const QuadraticFit& memory,
    std::span<const GridPoint> measured, const BudgetLimits& limits, bool allow_extrapolation,
    std::vector<std::string>* notes);

// Checks a recommendation against rule 3 (a zero budget means "none" and is not
// checked). InvalidArgumentError naming the first budget that fails and why.
[[nodiscard]] absl::Status CheckRecommendation(const Recommendation& recommendation,
                                               const QuadraticFit& memory,
                                               std::span<const GridPoint> measured,
                                               const BudgetLimits& limits, bool extrapolated);

}  // namespace tokenbatch::backend
