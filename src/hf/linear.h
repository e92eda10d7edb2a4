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
// far larger than the rest: transformer activations have such outlier feature
// dimensions, the same few in every token (Kovaleva et al. 2021, "BERT Busters";
// Dettmers et al. 2022, "LLM.int8()"). One of them sets the whole tensor's
// scale, and every other feature keeps only a few of its 256 levels. So, as
// LLM.int8()'s mixed-precision decomposition does, the few input features with
// the widest range observed on calibration inputs stay in float32: they are
// zeroed in the tensor that is quantized and added back as a float product with
// their weight columns. SmoothQuant's migration of that range into the weights
// (Xiao et al. 2023) was measured on all-MiniLM-L6-v2 and lowered the quality
// instead (docs/benchmarks.md, "Low precision on the CPU").
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
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
  // call) and the result is float32; with features kept in float32, those
  // features of x are zeroed during the call and restored before it returns
  // (also when it throws), so no other thread may read x meanwhile (a
  // forward's activations are its own). Thread-safe otherwise, unless observing
  // (ObserveInputRange); throws c10::Error.
  [[nodiscard]] at::Tensor operator()(const at::Tensor& x) const;

  // While `on`, every call records the largest |x| of each input feature seen
  // so far (the calibration QuantizeInt8 picks its float32 features from).
  // Not thread-safe: observe from one thread, with no other calls in flight.
  void ObserveInputRange(bool on) { observing_ = on; }

  // Replaces the float32 CPU weights by their int8 form (the float ones are
  // freed, but for the columns of up to `float_features` input features: those
  // with the widest observed range, kept in float32 as the class comment says;
  // none when nothing was observed). Errors: InvalidArgumentError for weights
  // that are not float32 on the CPU; BackendError when the quantized engine
  // refuses them. Not thread-safe.
  [[nodiscard]] absl::Status QuantizeInt8(std::int64_t float_features);

  [[nodiscard]] bool quantized() const { return packed_.isCustomClass(); }
  [[nodiscard]] const at::Tensor& weight() const { return weight_; }

 private:
  // quantized::linear_dynamic on the packed weights: contiguous float32
  // [..., in] -> [..., out]. Throws c10::Error.
  [[nodiscard]] at::Tensor Int8Product(const at::Tensor& input) const;

  at::Tensor weight_, bias_;
  c10::IValue packed_;         // the engine's packed int8 weights (and bias)
  bool reduce_range_ = false;  // quantize activations to 7 bits (FBGEMM without VNNI saturates at 8)
  at::Tensor float_features_;  // int64 [k]: the input features kept in float32
  at::Tensor float_weight_t_;  // float32 [k, out]: their weight columns, transposed
  bool observing_ = false;
  mutable at::Tensor observed_range_;  // float32 [in]: max |x| per input feature while observing
};

// Sets the process's quantized engine for Linear::QuantizeInt8 (oneDNN, x86 or
// FBGEMM, the first this libtorch has) and returns its name. Call once before
// quantizing; idempotent. Errors: UnimplementedError when libtorch has none.
[[nodiscard]] absl::StatusOr<std::string> UseInt8Engine();

}  // namespace tokenbatch::hf
