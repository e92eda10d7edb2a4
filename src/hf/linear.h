// Linear: one linear layer, y = x Wᵀ + b, run in the weights' dtype
// (at::linear) or with its weights quantized to int8 (dynamic quantization, as
// torch.ao.quantization.quantize_dynamic does it: the weights quantized once,
// symmetric per output channel; each call's activations quantized per tensor
// from their own range by the quantized engine, the product accumulated in
// int32 and returned in float32). Internal to src/hf (includes ATen).
//
// The int8 kernels are libtorch's quantized::linear_dynamic on the process's
// quantized engine: FBGEMM (or "x86") where libtorch was built with it (the
// PyPI wheel), else oneDNN (Debian's libtorch, built without FBGEMM).
//
// Per-tensor activations lose the most where a few input features carry values
// far larger than the rest (transformer activations have such outlier
// features). Before quantizing, a layer may record the largest |x| of each input
// feature over calibration inputs (RecordInputs); QuantizeInt8 then smooths the
// outliers into the weights, SmoothQuant's migration (Xiao et al. 2023,
// "SmoothQuant: Accurate and Efficient Post-Training Quantization for Large
// Language Models", section 4): s_j = sqrt(max|x_j| / max|W_:,j|), W' = W
// diag(s), and each call computes (x / s) W'ᵀ, which equals x Wᵀ in exact
// arithmetic but spreads the input's range over the weights.
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

  // While on, each call keeps the largest |x| of each input feature
  // (calibration for QuantizeInt8). Not thread-safe: calibration runs alone.
  void RecordInputs(bool on) { recording_ = on; }

  [[nodiscard]] bool quantized() const { return packed_.isCustomClass(); }
  [[nodiscard]] const at::Tensor& weight() const { return weight_; }

 private:
  at::Tensor weight_, bias_;
  c10::IValue packed_;      // the engine's packed int8 weights (and bias)
  bool reduce_range_ = false;  // quantize activations to 7 bits (FBGEMM without VNNI saturates at 8)
  bool recording_ = false;
  mutable at::Tensor input_amax_;  // [in] float32: the largest |x| per input feature recorded
  at::Tensor inverse_smooth_;      // [in]: 1 / s, applied to x before the int8 product; undefined: none
};

// Sets the process's quantized engine for Linear::QuantizeInt8 (FBGEMM, x86 or
// oneDNN, the first this libtorch has) and returns its name. Call once before
// quantizing; idempotent. Errors: UnimplementedError when libtorch has none.
[[nodiscard]] absl::StatusOr<std::string> UseInt8Engine();

}  // namespace tokenbatch::hf
