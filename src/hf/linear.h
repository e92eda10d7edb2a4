// Linear: one linear layer, y = x Wᵀ + b, run in the weights' dtype
// (at::linear) or with its weights quantized to int8 (dynamic quantization, as
// torch.ao.quantization.quantize_dynamic does it: the weights quantized once,
// symmetric per output channel; each call's activations quantized per tensor
// from their own range by the quantized engine, the product accumulated in
// int32 and returned in float32). Internal to src/hf (includes ATen).
//
// The int8 kernels are libtorch's quantized::linear_dynamic on the process's
// quantized engine: oneDNN where libtorch has it (Debian's libtorch and the PyPI
// wheel), else FBGEMM or "x86" with 7-bit activations (reduce_range: FBGEMM
// without VNNI saturates at 8 bits).
//
// Per-tensor activations lose the most where a few input features carry values
// far larger than the rest (transformer activations have such outlier
// features). SmoothQuant's migration of that range into the weights (Xiao et
// al. 2023) was measured on all-MiniLM-L6-v2 and lowered the quality, so the
// weights are quantized as they are (docs/benchmarks.md, "Low precision on the
// CPU").
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tokenbatch::hf {

class Linear {
 public:
  Linear() = default;
  // `weight` [out, in]; `bias` [out] or undefined.
  Linear(at::Tensor weight, at::Tensor bias) : weight_(std::move(weight)), bias_(std::move(bias)) {}

  // x [..., in] -> [..., out]. In int8, x must be float32 (it is quantized per
  // call) and the result is float32. Thread-safe (read only); throws c10::Error.
  [[nodiscard]] at::Tensor operator()(const at::Tensor& x) const;

  // Replaces the float32 CPU weights by their int8 form (the float ones are
  // freed). Errors: InvalidArgumentError for weights that are not float32 on the
  // CPU; BackendError when the quantized engine refuses them.
  [[nodiscard]] absl::Status QuantizeInt8();

  [[nodiscard]] bool quantized() const { return packed_.isCustomClass(); }
  [[nodiscard]] const at::Tensor& weight() const { return weight_; }

 private:
  at::Tensor weight_, bias_;
  c10::IValue packed_;      // the engine's packed int8 weights (and bias)
  bool reduce_range_ = false;  // quantize activations to 7 bits (FBGEMM without VNNI saturates at 8)
};

// Sets the process's quantized engine for Linear::QuantizeInt8 (oneDNN, x86 or
// FBGEMM, the first this libtorch has) and returns its name. Call once before
// quantizing; idempotent. Errors: UnimplementedError when libtorch has none.
[[nodiscard]] absl::StatusOr<std::string> UseInt8Engine();

}  // namespace tokenbatch::hf
