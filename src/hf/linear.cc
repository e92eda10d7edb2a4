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

absl::Status Linear::QuantizeInt8() {
  if (weight_.scalar_type() != at::kFloat || !weight_.device().is_cpu()) {
    return InvalidArgumentError("int8 quantization needs float32 weights on the CPU");
  }
  return backend::Guard("quantizing a linear layer to int8", [&] {
    // Symmetric per output channel, the scale of each row its largest |w| / 127.
    const at::Tensor scales = (weight_.abs().amax(1) / 127.0).clamp_min(1e-12).to(at::kDouble);
    const at::Tensor zeros = at::zeros({weight_.size(0)}, at::TensorOptions().dtype(at::kLong));
    const at::Tensor q = at::quantize_per_channel(weight_, scales, zeros, 0, at::kQInt8);
    torch::jit::Stack stack{q, bias_.defined() ? c10::IValue(bias_) : c10::IValue()};
    Operator("quantized::linear_prepack").callBoxed(&stack);
    packed_ = stack.at(0);
    reduce_range_ = at::globalContext().qEngine() != at::QEngine::ONEDNN;
    weight_ = at::Tensor();
    bias_ = at::Tensor();
  });
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  if (!quantized()) return at::linear(x, weight_, bias_);
  static const c10::OperatorHandle dynamic = Operator("quantized::linear_dynamic");
  torch::jit::Stack stack{x.contiguous(), packed_, c10::IValue(reduce_range_)};
  dynamic.callBoxed(&stack);
  return stack.at(0).toTensor();
}

}  // namespace tokenbatch::hf
