// Cost models: the unit a batch budget (max_batch_tokens) is measured in.
//
// A batch is summarised by its BatchShape (B requests, the longest Lmax tokens,
// Σ tokens). A cost model maps that shape to one integer that must stay within the
// budget:
//
//   sum     cost = Σ tokens                        (unit: tokens)
//           For padding-free backends (variable-length / flash-attention kernels,
//           TEI's default on GPU): work and activation memory grow with the real
//           tokens only.
//   padded  cost = B × Lmax                        (unit: tokens incl. padding)
//           For padded backends ([B, Lmax] tensors, e.g. libtorch/TorchScript,
//           ONNX, eager BERT): every row is padded to the longest one. The seed
//           note budgets Σ tokens while paying this: its batch [30, 1800, 300,
//           1200] has Σ = 3,330 but costs 4 × 1,800 = 7,200 padded tokens.
//   memory  cost = c0 + c1·B·Lmax + c2·B·Lmax²     (unit: bytes)
//           Peak activation memory of a padded encoder forward. c1 covers the
//           per-token activations (hidden states, MLP intermediates); c2 is eager
//           attention's [B, heads, L, L] score matrix. Coefficients come from the
//           model's shape or from `tokenbatch calibrate`, which measures them.
//
// Cost models are immutable values: thread-safe, nothing blocks.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tokenbatch {

// The size summary of a (possibly forming) batch.
struct BatchShape {
  std::int64_t size = 0;        // B, requests
  std::int64_t max_tokens = 0;  // Lmax, tokens of the longest request
  std::int64_t sum_tokens = 0;  // Σ tokens of all requests (the real tokens)

  // The shape after adding one request of `tokens` (>= 0) tokens. Σ saturates at
  // INT64_MAX rather than overflowing.
  [[nodiscard]] BatchShape With(std::int64_t tokens) const {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(sum_tokens, tokens, &sum)) sum = std::numeric_limits<std::int64_t>::max();
    return {size + 1, tokens > max_tokens ? tokens : max_tokens, sum};
  }
  // B × Lmax: the tokens a padded backend computes, padding included.
  [[nodiscard]] std::int64_t padded_tokens() const { return size * max_tokens; }
  // Real tokens / padded tokens, in (0, 1]; 1 for an empty batch.
  [[nodiscard]] double padding_efficiency() const {
    return padded_tokens() == 0 ? 1.0 : static_cast<double>(sum_tokens) / padded_tokens();
  }
};

enum class CostModelKind { kSum, kPadded, kMemory };

class CostModel {
 public:
  // Σ tokens. See the header overview for when to use each model.
  [[nodiscard]] static CostModel Sum() { return CostModel(CostModelKind::kSum, 0, 0, 0); }
  // B × Lmax.
  [[nodiscard]] static CostModel Padded() { return CostModel(CostModelKind::kPadded, 0, 0, 0); }
  // c0 + c1·B·Lmax + c2·B·Lmax² bytes. Errors: InvalidArgument if any coefficient
  // is negative or not finite, or if c1 and c2 are both zero (cost would not grow).
  [[nodiscard]] static absl::StatusOr<CostModel> Memory(double c0_bytes, double c1_bytes_per_token,
                                                        double c2_bytes_per_token_sq);
  // Parses "sum" or "padded" (the memory model needs coefficients; use Memory()).
  // Errors: InvalidArgument naming the value and the accepted names.
  [[nodiscard]] static absl::StatusOr<CostModel> Parse(std::string_view name);

  // The cost of `shape` in this model's unit, rounded up; 0 for an empty batch.
  // Saturates at INT64_MAX instead of overflowing.
  [[nodiscard]] std::int64_t Cost(const BatchShape& shape) const;
  // The cost of a batch holding only one request of `tokens` tokens.
  [[nodiscard]] std::int64_t SingleCost(std::int64_t tokens) const {
    return Cost(BatchShape{}.With(tokens));
  }
  // The largest L >= 0 with SingleCost(L) <= budget (0 if even 1 token is over).
  [[nodiscard]] std::int64_t MaxTokensWithin(std::int64_t budget) const;

  [[nodiscard]] CostModelKind kind() const { return kind_; }
  // "sum", "padded" or "memory".
  [[nodiscard]] std::string_view name() const;
  // The budget's unit: "tokens", "padded tokens" or "bytes".
  [[nodiscard]] std::string_view unit() const;
  [[nodiscard]] double c0() const { return c0_; }
  [[nodiscard]] double c1() const { return c1_; }
  [[nodiscard]] double c2() const { return c2_; }

 private:
  CostModel(CostModelKind kind, double c0, double c1, double c2)
      : kind_(kind), c0_(c0), c1_(c1), c2_(c2) {}
  CostModelKind kind_;
  double c0_, c1_, c2_;
};

}  // namespace tokenbatch
