// Dense linear least squares, solved by LAPACK (gelsd) through libtorch, so that
// the calibration code does not carry its own numerics. Kept in its own small
// translation unit that includes only the ATen operator headers it needs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace tokenbatch::backend {

// argmin_x ||A·x - y||₂ for A of `rows` × `cols` doubles, row-major, and y of `rows`
// values. Columns are scaled to unit max-abs before solving (B·L² spans orders of
// magnitude more than 1), and the solution is scaled back. A zero column gets x = 0.
// Errors: InvalidArgumentError on mismatched sizes or rows < cols; BackendError if
// the solver throws. Thread-safe; blocks for microseconds.
[[nodiscard]] absl::StatusOr<std::vector<double>> LeastSquares(std::span<const double> a,
                                                               int64_t rows, int64_t cols,
                                                               std::span<const double> y);

}  // namespace tokenbatch::backend
