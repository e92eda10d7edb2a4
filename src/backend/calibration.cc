#include "tokenbatch/backend/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "backend/least_squares.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

absl::StatusOr<QuadraticFit> FitQuadraticCost(std::span<const GridPoint> shapes,
                                              std::span<const double> y) {
  if (shapes.size() != y.size() || shapes.size() < 3) {
    return InvalidArgumentError(absl::StrCat("fit needs >= 3 points and one value per shape; got ",
                                             shapes.size(), " shapes and ", y.size(), " values"));
  }
  const int64_t rows = static_cast<int64_t>(shapes.size());
  std::vector<double> x[3];  // the columns: 1, B·L, B·L²
  for (const GridPoint& p : shapes) {
    if (p.batch_size < 1 || p.seq_len < 1) {
      return InvalidArgumentError(absl::StrCat("shape [", p.batch_size, ", ", p.seq_len,
                                               "] has a dimension < 1"));
    }
    const double bl = static_cast<double>(p.batch_size) * static_cast<double>(p.seq_len);
    x[0].push_back(1.0);
    x[1].push_back(bl);
    x[2].push_back(bl * static_cast<double>(p.seq_len));
  }
  // Relative least squares: row r is divided by max(|y_r|, 1), so a 0.5 MiB shape
  // counts as much as a 1 GiB one (grids span three orders of magnitude).
  std::vector<double> w(rows), wy(rows);
  for (int64_t r = 0; r < rows; ++r) {
    w[r] = 1.0 / std::max(std::abs(y[r]), 1.0);
    wy[r] = y[r] * w[r];
  }
  // Non-negative least squares with 3 unknowns, exactly: the optimum is the
  // unconstrained solution on its own support (KKT), so solve every support and
  // keep the feasible one with the smallest squared residual.
  double best_sse = std::numeric_limits<double>::infinity();
  double best[3] = {0, 0, 0};
  for (int mask = 0; mask < 8; ++mask) {
    std::vector<int> cols;
    for (int c = 0; c < 3; ++c) {
      if (mask & (1 << c)) cols.push_back(c);
    }
    double coef[3] = {0, 0, 0};
    if (!cols.empty()) {
      std::vector<double> a;
      for (int64_t r = 0; r < rows; ++r) {
        for (int c : cols) a.push_back(x[c][r] * w[r]);
      }
      absl::StatusOr<std::vector<double>> sol =
          LeastSquares(a, rows, static_cast<int64_t>(cols.size()), wy);
      if (!sol.ok()) return sol.status();
      bool feasible = true;
      for (size_t k = 0; k < cols.size(); ++k) {
        coef[cols[k]] = (*sol)[k];
        feasible = feasible && std::isfinite((*sol)[k]) && (*sol)[k] >= 0;
      }
      if (!feasible) continue;
    }
    double sse = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double e = (coef[0] + coef[1] * x[1][r] + coef[2] * x[2][r] - y[r]) * w[r];
      sse += e * e;
    }
    if (sse < best_sse) {
      best_sse = sse;
      std::copy(coef, coef + 3, best);
    }
  }
  QuadraticFit fit{best[0], best[1], best[2], 0, 0, 0};
  double sum_sq = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double signed_rel = (fit.At(shapes[r].batch_size, shapes[r].seq_len) - y[r]) * w[r];
    fit.max_relative_error = std::max(fit.max_relative_error, std::abs(signed_rel));
    fit.max_underestimate = std::max(fit.max_underestimate, -signed_rel);
    sum_sq += signed_rel * signed_rel;
  }
  fit.rms_relative_error = std::sqrt(sum_sq / static_cast<double>(rows));
  return fit;
}

std::vector<GridPoint> PlanGrid(const GridOptions& options) {
  std::vector<GridPoint> plan;
  for (int64_t b : options.batch_sizes) {
    for (int64_t l : options.seq_lens) {
      if (b >= 1 && l >= 1 && b * l <= options.max_tokens_per_shape) {
        plan.push_back(GridPoint{b, l, 0, 0});
      }
    }
  }
  std::sort(plan.begin(), plan.end(), [](const GridPoint& x, const GridPoint& y) {
    return std::pair(x.batch_size * x.seq_len, x.batch_size) <
           std::pair(y.batch_size * y.seq_len, y.batch_size);
  });
  return plan;
}

absl::StatusOr<std::vector<GridPoint>> RunCalibrationGrid(
    const Encoder& encoder, const GridOptions& options,
    const std::function<void(size_t, size_t, const GridPoint&)>& progress) {
  if (options.repeats < 1 || options.warmup < 0 || options.vocab_size < 1) {
    return InvalidArgumentError(absl::StrCat("bad grid options: repeats ", options.repeats,
                                             " (>= 1), warmup ", options.warmup,
                                             " (>= 0), vocab_size ", options.vocab_size,
                                             " (>= 1)"));
  }
  std::vector<GridPoint> plan = PlanGrid(options);
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(std::min<int64_t>(
                                                   options.vocab_size - 1,
                                                   std::numeric_limits<int32_t>::max())));
  for (size_t i = 0; i < plan.size(); ++i) {
    GridPoint& p = plan[i];
    std::vector<EmbeddingInput> batch(p.batch_size);
    for (EmbeddingInput& in : batch) {
      in.input_ids.resize(p.seq_len);
      for (int32_t& t : in.input_ids) t = id(rng);
    }
    const std::string shape = absl::StrCat("shape [", p.batch_size, ", ", p.seq_len, "]: ");
    for (int w = 0; w < options.warmup; ++w) {
      absl::StatusOr<std::vector<Embedding>> r = encoder.Embed(batch);
      if (!r.ok()) return WithMessagePrefix(r.status(), shape);
    }
    std::vector<double> latencies;
    for (int k = 0; k < options.repeats; ++k) {
      if (absl::Status s = encoder.ResetPeakMemory(); !s.ok()) return s;
      const auto t0 = std::chrono::steady_clock::now();
      absl::StatusOr<std::vector<Embedding>> r = encoder.Embed(batch);
      const auto t1 = std::chrono::steady_clock::now();
      if (!r.ok()) return WithMessagePrefix(r.status(), shape);  // an OOM stays an OOM
      absl::StatusOr<int64_t> peak = encoder.PeakMemoryBytes();
      if (!peak.ok()) return peak.status();
      latencies.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      p.peak_bytes = std::max(p.peak_bytes, *peak);
    }
    p.latency_us = Median(latencies);
    if (progress) progress(i + 1, plan.size(), p);
  }
  return plan;
}

}  // namespace tokenbatch::backend
