// Linear layers, float or int8 (see linear.h).
#include "hf/linear.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend/torch_guard.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {
namespace {

c10::OperatorHandle Operator(const char* name) { return c10::Dispatcher::singleton().findSchemaOrThrow(name, ""); }

}  // namespace

absl::StatusOr<std::string> UseInt8Engine() {
  static std::once_flag once;
  static absl::StatusOr<std::string> chosen = absl::UnimplementedError("unset");
  std::call_once(once, [] {
    const std::vector<at::QEngine> supported = at::globalContext().supportedQEngines();
    // oneDNN first: it takes activations at their full 8 bits on every x86 CPU.
    // FBGEMM (also behind "x86") is exact only on CPUs with VNNI unless the
    // activations are cut to 7 bits (reduce_range), which costs an embedding
    // model like all-MiniLM-L6-v2 most of its int8 quality
    // (docs/benchmarks.md, "Low precision on the CPU").
    for (at::QEngine engine : {at::QEngine::ONEDNN, at::QEngine::X86, at::QEngine::FBGEMM}) {
      if (std::find(supported.begin(), supported.end(), engine) == supported.end()) continue;
      at::globalContext().setQEngine(engine);
      chosen = c10::toString(engine);
      return;
    }
    chosen = absl::UnimplementedError(
        "this libtorch has no quantized engine for int8 on the CPU (FBGEMM, x86 or oneDNN)");
  });
  return chosen;
}

absl::Status Linear::QuantizeInt8(std::int64_t float_features) {
  if (weight_.scalar_type() != at::kFloat || !weight_.device().is_cpu()) {
    return InvalidArgumentError("int8 quantization needs float32 weights on the CPU");
  }
  return backend::Guard("quantizing a linear layer to int8", [&] {
    at::Tensor weight = weight_;
    const std::int64_t k = std::min<std::int64_t>(float_features, weight_.size(1));
    if (observed_range_.defined() && k > 0) {
      float_features_ = std::get<0>(std::get<1>(observed_range_.topk(k)).sort()).contiguous();
      float_weight_t_ = weight_.index_select(1, float_features_).t().contiguous();
      // Their columns are zero in the int8 weights, which also keeps them out
      // of each output channel's scale.
      weight = weight_.index_fill(1, float_features_, 0.0);
    }
    // Symmetric per output channel, the scale of each row its largest |w| / 127.
    const at::Tensor scales = (weight.abs().amax(1) / 127.0).clamp_min(1e-12).to(at::kDouble);
    const at::Tensor zeros = at::zeros({weight.size(0)}, at::TensorOptions().dtype(at::kLong));
    const at::Tensor q = at::quantize_per_channel(weight, scales, zeros, 0, at::kQInt8);
    torch::jit::Stack stack{q, bias_.defined() ? c10::IValue(bias_) : c10::IValue()};
    Operator("quantized::linear_prepack").callBoxed(&stack);
    packed_ = stack.at(0);
    reduce_range_ = at::globalContext().qEngine() != at::QEngine::ONEDNN;
    weight_ = at::Tensor();
    bias_ = at::Tensor();
    observed_range_ = at::Tensor();
    observing_ = false;
  });
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  if (observing_) {
    const at::Tensor range = x.detach().abs().reshape({-1, x.size(-1)}).amax(0).to(at::kFloat);
    observed_range_ = observed_range_.defined() ? at::maximum(observed_range_, range) : range;
  }
  if (!quantized()) return at::linear(x, weight_, bias_);
  const at::Tensor input = x.contiguous();
  if (!float_features_.defined()) return Int8Product(input);
  // The kept features are zeroed in place for the int8 product and put back
  // after it (so the input is not copied whole), then added as a float product
  // of rank k.
  const at::Tensor kept = input.index_select(-1, float_features_);
  at::Tensor y;
  try {
    input.index_fill_(-1, float_features_, 0.0);
    y = Int8Product(input);
  } catch (...) {
    input.index_copy_(-1, float_features_, kept);
    throw;
  }
  input.index_copy_(-1, float_features_, kept);
  y.view({-1, y.size(-1)}).addmm_(kept.reshape({-1, kept.size(-1)}), float_weight_t_);
  return y;
}

at::Tensor Linear::Int8Product(const at::Tensor& input) const {
  static const c10::OperatorHandle dynamic = Operator("quantized::linear_dynamic");
  torch::jit::Stack stack{input, packed_, c10::IValue(reduce_range_)};
  dynamic.callBoxed(&stack);
  return stack.at(0).toTensor();
}

}  // namespace tokenbatch::hf
