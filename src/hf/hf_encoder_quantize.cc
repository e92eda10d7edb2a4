// HfEncoder's int8 mode: the transformer's linear layers quantized after load,
// calibrated on one probe (the input features each layer keeps in float32, see
// linear.h), and the quality of the outputs measured against the float32
// weights' on another (see hf_encoder.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hf/hf_encoder_impl.h"
#include "hf/linear.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {
namespace {

// Input features per linear layer kept in float32 (linear.h). all-MiniLM-L6-v2
// has up to two outlier features in a layer's input; four leave room for a
// model with more, and the cost of a call hardly grows with their number (the
// added product's cost is a pass over the output). docs/benchmarks.md, "int8
// with outlier features in float32", has the measurements behind the choice.
constexpr std::int64_t kFloatFeaturesPerLayer = 4;

// Inputs of 4 to 128 tokens whose ids a fixed linear congruential sequence from
// `seed` draws from the vocabulary above its first 1,000 rows (where tokenizers
// keep their special tokens): the same probe for every load.
std::vector<EmbeddingInput> ProbeInputs(std::int64_t vocab, std::int64_t max_length, std::uint64_t seed) {
  const std::int64_t lo = std::min<std::int64_t>(1000, vocab / 2), span = std::max<std::int64_t>(1, vocab - lo);
  std::uint64_t x = seed;
  std::vector<EmbeddingInput> inputs(16);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::int64_t length = std::min<std::int64_t>(max_length, 4 + static_cast<std::int64_t>(i) * 8);
    for (std::int64_t t = 0; t < length; ++t) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      inputs[i].input_ids.push_back(static_cast<std::int32_t>(lo + static_cast<std::int64_t>(x >> 33) % span));
    }
  }
  return inputs;
}

// An output as a dense vector of `width` values: a sparse model's weights
// scattered by their ids (none above 0 is a vector of zeros).
std::vector<double> Dense(const backend::Embedding& e, int width, bool sparse) {
  std::vector<double> v(static_cast<std::size_t>(width), 0.0);
  for (std::size_t k = 0; k < e.values.size() && k < v.size(); ++k) {
    const std::size_t at = sparse ? static_cast<std::size_t>(e.indices[k]) : k;
    if (at < v.size()) v[at] = e.values[k];
  }
  return v;
}

}  // namespace

absl::Status HfEncoder::QuantizeInt8() {
  absl::StatusOr<std::string> engine = UseInt8Engine();
  if (!engine.ok()) return engine.status();
  // Each layer's input range, on one probe; the quality, on another, so that
  // the figure /info reports is not measured on the calibration inputs.
  const std::vector<EmbeddingInput> calibration =
      ProbeInputs(impl_->model.config.vocab_size, impl_->model.max_seq_length, 12345);
  const std::vector<EmbeddingInput> probe =
      ProbeInputs(impl_->model.config.vocab_size, impl_->model.max_seq_length, 67890);
  const std::vector<Linear*> linears = impl_->transformer->linears();
  for (Linear* l : linears) l->ObserveInputRange(true);
  absl::StatusOr<std::vector<backend::Embedding>> calibrated = Embed(calibration);
  for (Linear* l : linears) l->ObserveInputRange(false);
  if (!calibrated.ok()) return WithMessagePrefix(calibrated.status(), "float32 calibration probe: ");
  // The float32 outputs to compare with.
  absl::StatusOr<std::vector<backend::Embedding>> before = Embed(probe);
  if (!before.ok()) return WithMessagePrefix(before.status(), "float32 probe: ");
  for (Linear* l : linears) {
    if (absl::Status s = l->QuantizeInt8(kFloatFeaturesPerLayer); !s.ok()) return s;
  }
  absl::StatusOr<std::vector<backend::Embedding>> after = Embed(probe);
  if (!after.ok()) return WithMessagePrefix(after.status(), absl::StrCat("int8 probe (", *engine, " engine): "));
  backend::QuantizationQuality quality{.probe_inputs = static_cast<int>(probe.size())};
  for (std::size_t i = 0; i < probe.size(); ++i) {
    const bool sparse = impl_->splade != nullptr;
    const std::vector<double> a = Dense((*before)[i], impl_->width, sparse);
    const std::vector<double> b = Dense((*after)[i], impl_->width, sparse);
    double dot = 0, na = 0, nb = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      dot += a[k] * b[k];
      na += a[k] * a[k];
      nb += b[k] * b[k];
      quality.max_abs_diff = std::max(quality.max_abs_diff, std::abs(a[k] - b[k]));
    }
    const double cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
    quality.min_cosine = std::min(quality.min_cosine, cosine);
  }
  impl_->quality = quality;
  return absl::OkStatus();
}

}  // namespace tokenbatch::hf
