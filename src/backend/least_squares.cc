#include "backend/least_squares.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/linalg_lstsq.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {

absl::StatusOr<std::vector<double>> LeastSquares(std::span<const double> a, int64_t rows,
                                                 int64_t cols, std::span<const double> y) {
  if (rows < 1 || cols < 1 || rows < cols || static_cast<int64_t>(a.size()) != rows * cols ||
      static_cast<int64_t>(y.size()) != rows) {
    return InvalidArgumentError(absl::StrCat("least squares needs rows >= cols >= 1 and sizes ",
                                             "rows*cols, rows; got rows ", rows, ", cols ", cols,
                                             ", |A| ", a.size(), ", |y| ", y.size()));
  }
  std::vector<double> scaled(a.begin(), a.end());
  std::vector<double> scale(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) scale[c] = std::max(scale[c], std::abs(a[r * cols + c]));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      scaled[r * cols + c] = scale[c] > 0 ? scaled[r * cols + c] / scale[c] : 0.0;
    }
  }
  std::vector<double> rhs(y.begin(), y.end());
  try {
    const auto options = at::TensorOptions().dtype(at::kDouble);
    at::Tensor am = at::from_blob(scaled.data(), {rows, cols}, options);
    at::Tensor ym = at::from_blob(rhs.data(), {rows, 1}, options);
    // gelsd (SVD based) handles rank deficiency, e.g. a grid with one L only.
    at::Tensor x = std::get<0>(at::linalg_lstsq(am, ym, c10::nullopt, "gelsd")).contiguous();
    std::vector<double> out(cols);
    const double* xp = x.data_ptr<double>();
    for (int64_t c = 0; c < cols; ++c) out[c] = scale[c] > 0 ? xp[c] / scale[c] : 0.0;
    return out;
  } catch (const std::exception& e) {
    return BackendError(absl::StrCat("least squares failed: ", e.what()));
  }
}

}  // namespace tokenbatch::backend
