// The Batcher's batch, slice and merge functions (see batcher_adapter.h).
#include "service/batcher_adapter.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "service/input_tokens.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {

ServiceBatcher::Backend EncoderBatchFunction(const backend::Encoder* encoder) {
  return [encoder](std::span<const backend::EmbeddingInput> inputs) -> absl::StatusOr<std::vector<ItemOut>> {
    const TimePoint start = SteadyClock::now();
    absl::StatusOr<std::vector<backend::Embedding>> embedded = encoder->Embed(inputs);
    if (!embedded.ok()) return embedded.status();
    if (embedded->size() != inputs.size()) {
      return BackendError("the encoder returned another number of embeddings than it was given inputs");
    }
    const double inference_us = std::chrono::duration<double, std::micro>(SteadyClock::now() - start).count();
    std::vector<ItemOut> out(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      out[i] = ItemOut{.values = std::move((*embedded)[i].values),
                       .indices = std::move((*embedded)[i].indices),
                       .batch_start = start,
                       .inference_us = inference_us};
    }
    return out;
  };
}

backend::EmbeddingInput SliceInput(const backend::EmbeddingInput& input, TokenWindow window) {
  backend::EmbeddingInput out;
  out.input_ids = WindowIds(input.input_ids, window,
                            SpecialEnds{.prefix = input.special_prefix, .suffix = input.special_suffix});
  out.normalize = input.normalize;
  out.dimensions = input.dimensions;
  out.special_prefix = input.special_prefix;
  out.special_suffix = input.special_suffix;
  // The prompt lies in the first window only.
  if (window.begin == 0) {
    out.prompt_tokens = std::min(input.prompt_tokens, static_cast<int>(window.end - window.begin) - 1);
  }
  return out;
}

absl::StatusOr<ItemOut> MergeWindows(std::span<const ItemOut> parts, std::span<const TokenWindow> windows) {
  if (parts.empty()) return BackendError("split request produced no windows");
  ItemOut out;
  out.values.assign(parts[0].values.size(), 0.0f);
  double total = 0;
  bool all_unit = true;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (parts[k].values.size() != out.values.size()) return BackendError("window embeddings differ in width");
    const double w = static_cast<double>(windows[k].size());
    total += w;
    double norm2 = 0;
    for (std::size_t j = 0; j < out.values.size(); ++j) {
      out.values[j] += static_cast<float>(w * parts[k].values[j]);
      norm2 += double(parts[k].values[j]) * parts[k].values[j];
    }
    all_unit = all_unit && std::abs(norm2 - 1.0) < 1e-3;
    out.batch_start = std::max(out.batch_start, parts[k].batch_start);
    out.inference_us += parts[k].inference_us;
  }
  double norm2 = 0;
  for (float& x : out.values) {
    x = static_cast<float>(x / total);
    norm2 += double(x) * x;
  }
  if (all_unit && norm2 > 0) {
    for (float& x : out.values) x = static_cast<float>(x / std::sqrt(norm2));
  }
  return out;
}

ServiceBatcher::Hooks WindowHooks() {
  return ServiceBatcher::Hooks{
      .slice = [](const backend::EmbeddingInput& in, TokenWindow w) -> absl::StatusOr<backend::EmbeddingInput> {
        return SliceInput(in, w);
      },
      .merge = MergeWindows};
}

}  // namespace tokenbatch::server
