// HiddenActivation: config.json's hidden_act, as transformers' ACT2FN computes
// it (transformers/activations.py).
#include <cmath>

#include "hf/transformer.h"

namespace tokenbatch::hf {

at::Tensor HiddenActivation(const std::string& name, const at::Tensor& x) {
  if (name == "gelu" || name == "gelu_python") return at::gelu(x);
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_python_tanh") return at::gelu(x, "tanh");
  if (name == "gelu_fast") {  // FastGELUActivation's own constant for sqrt(2 / pi)
    return 0.5 * x * (1.0 + at::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
  }
  if (name == "gelu_10") return at::clamp(at::gelu(x), -10.0, 10.0);
  if (name == "quick_gelu") return x * at::sigmoid(1.702 * x);
  if (name == "relu") return at::relu(x);
  if (name == "relu2") return at::square(at::relu(x));
  if (name == "relu6") return at::clamp(x, 0.0, 6.0);
  if (name == "leaky_relu") return at::leaky_relu(x, 0.01);
  if (name == "silu" || name == "swish") return at::silu(x);
  if (name == "mish") return at::mish(x);
  if (name == "hardswish") return at::hardswish(x);
  if (name == "sigmoid") return at::sigmoid(x);
  if (name == "tanh") return at::tanh(x);
  return x;  // "linear"; ParseArchitectureConfig refuses every other name
}

}  // namespace tokenbatch::hf
