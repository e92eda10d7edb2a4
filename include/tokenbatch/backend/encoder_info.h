// What an Encoder (encoder.h) says about its model: the limits its callers must
// respect and what a server reports about it (/info). Plain value types and
// name tables, no libtorch: the service and the API layer read them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/enum_names.h"

namespace tokenbatch::backend {

// How a request's rows of the last hidden state become one vector.
enum class Pooling {
  kCls,   // row 0
  kMean,  // mean over the request's real tokens
  kLast,  // the request's last real token
  // SPLADE: a masked-LM head's logits per vocabulary id, pooled over the tokens
  // as log(1 + relu(logit)) (hf::SpladeHead): a sparse embedding
  // (EncoderInfo::sparse). TEI's name.
  kSplade,
};
inline constexpr EnumNames<Pooling, 4> kPoolingNames{
    "pooling",
    {{{Pooling::kCls, "cls"}, {Pooling::kMean, "mean"}, {Pooling::kLast, "last"}, {Pooling::kSplade, "splade"}}},
    '"'};

// "cls" | "mean" | "last" | "splade" -> Pooling; InvalidArgumentError listing them otherwise.
[[nodiscard]] inline absl::StatusOr<Pooling> ParsePooling(std::string_view name) { return kPoolingNames.Parse(name); }
// Pooling -> "cls" | "mean" | "last" | "splade".
[[nodiscard]] constexpr std::string_view PoolingName(Pooling pooling) { return kPoolingNames.Name(pooling); }

// The function a cross-encoder's logits go through to become scores
// (sentence-transformers' CrossEncoder activation_fn).
enum class ScoreActivation { kIdentity, kSigmoid, kTanh };
inline constexpr EnumNames<ScoreActivation, 3> kScoreActivationNames{
    "score activation",
    {{{ScoreActivation::kIdentity, "identity"},
      {ScoreActivation::kSigmoid, "sigmoid"},
      {ScoreActivation::kTanh, "tanh"}}}};
// "identity" | "sigmoid" | "tanh".
[[nodiscard]] constexpr std::string_view ScoreActivationName(ScoreActivation a) {
  return kScoreActivationNames.Name(a);
}

// How /predict turns the logits of a classifier with several labels into
// scores: transformers' text-classification pipeline's function_to_apply, which
// config.json's problem_type decides ("multi_label_classification": a sigmoid
// per label; "regression": the logits as they are; else a softmax).
enum class LabelScoring { kSoftmax, kSigmoid, kIdentity };
inline constexpr EnumNames<LabelScoring, 3> kLabelScoringNames{
    "label scoring",
    {{{LabelScoring::kSoftmax, "softmax"}, {LabelScoring::kSigmoid, "sigmoid"}, {LabelScoring::kIdentity, "identity"}}}};
// "softmax" | "sigmoid" | "identity".
[[nodiscard]] constexpr std::string_view LabelScoringName(LabelScoring s) { return kLabelScoringNames.Name(s); }

// What makes an encoder a classifier / cross-encoder rather than an embedding
// model: Embed returns labels.size() raw logits per input, and the score routes
// (/rerank, /predict) apply `activation` (one label) or `label_scoring`
// (several) to them.
struct ClassifierInfo {
  std::vector<std::string> labels;  // by id (config.json id2label)
  ScoreActivation activation = ScoreActivation::kSigmoid;
  LabelScoring label_scoring = LabelScoring::kSoftmax;
  // The model reads token type ids (BERT), so a pair's second text gets the
  // template's types (1); false (XLM-R): every token is type 0.
  bool token_types = false;
};

// How close a quantized model's outputs stay to those of its float32 weights,
// measured when it loads (hf::HfEncoder, --quantize): over `probe_inputs`
// inputs, the lowest cosine similarity of an input's output (an embedding,
// logits or sparse weights) to the float32 one, and the largest absolute
// difference of one value. The probe is not the one the quantization is
// calibrated on; real texts can still agree less (docs/benchmarks.md, "Low
// precision on the CPU").
struct QuantizationQuality {
  int probe_inputs = 0;
  double min_cosine = 1;
  double max_abs_diff = 0;
};

// Encoder::info(): fixed once the encoder is loaded.
struct EncoderInfo {
  std::string name;               // the implementation: "torch", "hf" or "noop"
  std::string architecture;       // config.json model_type ("bert", ...); "" when unknown
  // config.json's hidden_size (the encoder layers' width, which Encoder::
  // hidden_size(), the output's, need not be), num_hidden_layers and
  // num_attention_heads; 0 when unknown.
  std::int64_t layer_width = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  // The batch layout the forwards run in: "packed" (no padding computed) or
  // "padded"; "" when the encoder does not say (a TorchScript module, noop).
  std::string execution;
  std::string dtype = "float32";  // weights and activations
  // The attention kernel ("eager", "sdpa", "flash_varlen", "efficient_varlen");
  // "" when the encoder does not say (a TorchScript module, noop).
  std::string attention;
  std::string pooling;            // "cls" | "mean" | "last" | "splade"; "" when not pooled (a classifier)
  // Ids must be < vocab_size (the embedding table's rows); 0 = not checked.
  std::int64_t vocab_size = 0;
  // Longest input in tokens (the model's position table); 0 = unbounded.
  std::int64_t max_positions = 0;
  // Whether embeddings are L2-normalised when an input does not say.
  bool default_normalize = false;
  // A sparse (SPLADE) model: Embed returns, per input, the vocabulary ids whose
  // weight is above 0 (Embedding::indices, ascending) and their weights; the
  // dense width is vocab_size. Never normalised or truncated to `dimensions`.
  bool sparse = false;
  // "int8" when the encoder layers' linear layers run quantized; "" when not.
  std::string quantization;
  std::optional<QuantizationQuality> quantization_quality;  // set with `quantization`
  std::optional<ClassifierInfo> classifier;  // unset: an embedding model
};

}  // namespace tokenbatch::backend
