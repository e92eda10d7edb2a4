// A Hugging Face / sentence-transformers model directory, read the way
// sentence-transformers and text-embeddings-inference read it, without running it.
//
// Files (all JSON, all optional except config.json):
//   config.json                          the transformer's architecture (ArchitectureConfig)
//   modules.json                         the sentence-transformers pipeline: a Transformer
//                                        module, then Pooling, Dense and Normalize modules
//   <pooling module>/config.json         pooling_mode_cls_token | _mean_tokens | _lasttoken,
//                                        include_prompt
//   <dense module>/config.json           in_features, out_features, bias, activation_function
//                                        (weights in that folder's model.safetensors)
//   sentence_bert_config.json            max_seq_length (sentence-transformers truncates to it),
//                                        do_lower_case (a Lowercase normalizer first)
//   tokenizer_config.json                model_max_length: the same limit when the above
//                                        has none (sentence-transformers >= 6 writes it here);
//                                        truncation_side, padding_side ("right" | "left";
//                                        left padding refused for bert); add_bos_token /
//                                        add_eos_token checked (transformers 5 keeps
//                                        tokenizer.json's post-processor)
//   config_sentence_transformers.json    prompts {name: text}, default_prompt_name; for a
//                                        CrossEncoder, activation_fn
//   tokenizer.json                       the tokenizer (read by tokenbatch::tokenizer)
// Modules must come in the order Transformer, Pooling, Dense..., Normalize (the
// order tokenbatch runs them); module types are matched by class name, so both
// sentence-transformers' old (sentence_transformers.models.Pooling) and new
// (...sentence_transformer.modules.pooling.Pooling) paths load.
// Without modules.json the directory is a plain transformers model: pooling then
// comes from the caller (`--pooling`), no dense layers, no normalisation.
// A directory whose config.json "architectures" names BertForMaskedLM and that
// has no Pooling module, or whose modules are a Transformer (or MLMTransformer)
// and a SpladePooling module (sentence-transformers' SparseEncoder), is a
// sparse SPLADE model (SpladeHead).
// A directory whose config.json "architectures" names a sequence classifier
// (BertForSequenceClassification, XLMRobertaForSequenceClassification,
// RobertaForSequenceClassification) and that has no Pooling module is a
// cross-encoder / classifier (ClassifierHead): sentence-transformers' CrossEncoder
// directory, or the transformers one it loads.
//
// Every value read is checked: a missing file the config points to, a wrong JSON
// type, a non-positive or absurdly large size, an unsupported model_type, pooling
// mode, activation or module order is an InvalidArgumentError naming the file and
// the field, and listing what is supported. Fields a config leaves out take
// transformers' defaults (e.g. XLM-R's pad_token_id 1, type_vocab_size 2).
// Fields tokenbatch does not use are not read. Pure (file reads only),
// thread-safe, blocks for the reads.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::hf {

// The architectures implemented (hf/transformer.h), by config.json model_type.
enum class Architecture {
  kBert,        // "bert": absolute positions, token types, post-LayerNorm, GELU
  kXlmRoberta,  // "xlm-roberta", "roberta": BERT with positions offset by pad_token_id + 1
  kQwen3,       // "qwen3": RoPE, grouped-query attention, RMSNorm, causal, SwiGLU
};

inline constexpr EnumNames<Architecture, 3> kArchitectureNames{
    "architecture",
    {{{Architecture::kBert, "bert"}, {Architecture::kXlmRoberta, "xlm-roberta"}, {Architecture::kQwen3, "qwen3"}}}};
// "bert" | "xlm-roberta" | "qwen3", the name used in messages.
[[nodiscard]] constexpr std::string_view ArchitectureName(Architecture a) { return kArchitectureNames.Name(a); }

// The hidden_act values implemented, by transformers' ACT2FN names (every one
// without weights of its own; laplace, prelu, xielu, sqrtsoftplus and
// gelu_accurate are refused by name).
inline constexpr std::array<std::string_view, 19> kHiddenActivations{
    "gelu",    "gelu_python", "gelu_new",  "gelu_pytorch_tanh", "gelu_python_tanh", "gelu_fast", "gelu_10",
    "quick_gelu", "relu",     "relu2",     "relu6",             "leaky_relu",       "silu",      "swish",
    "mish",    "hardswish",   "sigmoid",   "tanh",              "linear"};

// Transformer sizes from config.json (transformers' field names). Sizes are
// counts; eps are added to variances.
struct ArchitectureConfig {
  Architecture architecture = Architecture::kBert;
  std::string model_type;        // as written in config.json
  int64_t vocab_size = 0;        // rows of the token embedding table
  int64_t hidden_size = 0;       // H
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // Qwen3 (grouped-query attention); = heads otherwise
  int64_t head_dim = 0;             // Qwen3 may set it; otherwise H / heads
  int64_t intermediate_size = 0;
  std::string hidden_act;           // one of kHiddenActivations
  double layer_norm_eps = 1e-12;    // BERT, XLM-R
  double rms_norm_eps = 1e-6;       // Qwen3
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 0;      // BERT, XLM-R token types
  int64_t pad_token_id = 0;
  double rope_theta = 10000.0;      // Qwen3
  bool attention_bias = false;      // Qwen3 q/k/v/o biases
  std::string torch_dtype;          // the checkpoint's dtype as config.json says ("float32", ...)
  // Positions a sequence may use: max_position_embeddings, less XLM-R's offset
  // (pad_token_id + 1) which its position table reserves.
  [[nodiscard]] int64_t max_input_positions() const;
};

// A post-pooling dense layer (sentence_transformers.models.Dense):
// y = activation(x W^T + b), W [out_features, in_features].
struct DenseLayer {
  std::string dir;        // folder holding model.safetensors (linear.weight, linear.bias)
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  std::string activation;  // "identity" or "tanh" (from activation_function)
};

// The activation sentence-transformers' CrossEncoder.predict applies to the
// logits by default (its activation_fn), as the encoders report it.
using backend::ScoreActivation;
using backend::ScoreActivationName;

// A sequence-classification head on the transformer (transformers'
// BertForSequenceClassification: the pooler's tanh(W1 h_cls + b1), then
// classifier W2 x + b2; XLM-R / RoBERTa: classifier.dense, tanh, then
// classifier.out_proj), giving num_labels logits per input.
struct ClassifierHead {
  std::string architecture_class;   // config.json architectures[0]
  // id2label, by id. Without it, num_labels labels LABEL_0 .. LABEL_{n-1}
  // (transformers' default: num_labels 2). id2label wins over a num_labels that
  // disagrees, as transformers' PretrainedConfig decides.
  std::vector<std::string> labels;
  // /predict's scores for several labels, from problem_type (see
  // backend::LabelScoring).
  backend::LabelScoring label_scoring = backend::LabelScoring::kSoftmax;
  // CrossEncoder's activation_fn: config_sentence_transformers.json, else
  // config.json's sentence_transformers.activation_fn or (sentence-transformers
  // < 4) sbert_ce_default_activation_function, else sigmoid for one label and
  // identity for more, as CrossEncoder defaults.
  ScoreActivation activation = ScoreActivation::kSigmoid;
};

// Reads the head from config.json (`config`) and the CrossEncoder settings of
// config_sentence_transformers.json (`st_config`, null when absent); nullopt
// when `config` names no sequence classifier. Errors (InvalidArgumentError
// naming `source` and the field): an unsupported *ForSequenceClassification
// class or one that does not match `model_type`, malformed id2label (keys must
// be 0..n-1, n <= 65536) or num_labels (1..65536), a problem_type other than
// single_label_classification, multi_label_classification and regression, an
// activation other than Identity, Sigmoid or Tanh.
// `config` and `st_config` are nlohmann::json values, passed as their text.
[[nodiscard]] absl::StatusOr<std::optional<ClassifierHead>> ParseClassifierHead(std::string_view config_json,
                                                                                std::string_view st_config_json,
                                                                                std::string_view source);

// A masked-language-model head read by SPLADE pooling (sparse embeddings):
// transformers' BertForMaskedLM `cls.predictions` (transform.dense, the
// config's hidden_act, transform.LayerNorm, then the decoder over the
// vocabulary, its weight tied to the word embeddings unless saved) gives a logit
// per vocabulary id per token; sentence-transformers' SpladePooling (and TEI's
// splade pooling) turns them into one weight per id:
//   w[v] = pool over the input's tokens t of log(1 + relu(logit[t, v]))
// with pool max (SPLADE v2, the default) or sum (the original SPLADE), and a
// second log(1 + ·) for activation_function "log1p_relu".
struct SpladeHead {
  std::string architecture_class;  // config.json architectures[0]: "BertForMaskedLM"
  bool max_pooling = true;         // pooling_strategy "max"; false: "sum"
  bool log1p_twice = false;        // activation_function "log1p_relu"; false: "relu"
};

// Reads the head of a directory whose config.json (`config_json`) names a
// masked-LM class, with its SpladePooling module's config (`pooling_json`, its
// text; "" when the directory has none: TEI's defaults, max and relu).
// nullopt when the config names no *ForMaskedLM class and there is no
// SpladePooling module. Errors (InvalidArgumentError naming `source` and the
// field): a SpladePooling module over a model that is not a masked LM, a
// masked-LM class other than BertForMaskedLM (bert), a pooling_strategy other
// than max and sum, an activation_function other than relu and log1p_relu.
[[nodiscard]] absl::StatusOr<std::optional<SpladeHead>> ParseSpladeHead(std::string_view config_json,
                                                                        std::string_view pooling_json,
                                                                        std::string_view source);

struct ModelDirectory {
  std::string root;
  std::string transformer_dir;  // where config.json and the weights are (the Transformer module's path)
  ArchitectureConfig config;
  // Pooling from the pooling module; unset for a plain transformers directory.
  std::optional<backend::Pooling> pooling;
  bool include_prompt = true;  // false: prompt tokens are left out of the pooling
  std::vector<DenseLayer> dense;
  bool normalize = false;      // a Normalize module is present
  // Longest input in tokens: sentence_bert_config.json's max_seq_length when
  // given, else tokenizer_config.json's model_max_length, else
  // config.max_input_positions(); never above the latter.
  int64_t max_seq_length = 0;
  std::map<std::string, std::string> prompts;  // name -> text prepended to the input
  std::string default_prompt_name;             // "" = none
  std::string tokenizer_path;                  // <transformer_dir>/tokenizer.json ("" if absent)
  // sentence_bert_config.json's do_lower_case: the tokenizer lowercases the
  // input first (tokenizer::LoadOptions::lowercase, which the loader sets).
  bool do_lower_case = false;
  // tokenizer_config.json's truncation_side "left": inputs cut to
  // max_seq_length lose their start, as transformers cuts them.
  bool truncate_left = false;
  // Set for a cross-encoder / classifier directory (see the header comment);
  // pooling, dense and normalize then do not apply.
  std::optional<ClassifierHead> classifier;
  // Set for a sparse (SPLADE) model: a BertForMaskedLM directory without a
  // Pooling module, or a sentence-transformers SparseEncoder directory
  // (Transformer or MLMTransformer, then SpladePooling). Embeddings are then
  // the head's weight per vocabulary id; dense and normalize do not apply.
  std::optional<SpladeHead> splade;
};

// Reads config.json alone (see the header comment for the checks).
[[nodiscard]] absl::StatusOr<ArchitectureConfig> ParseArchitectureConfig(std::string_view json_text,
                                                                         std::string_view source);

// Reads the directory `root` (see the header comment).
[[nodiscard]] absl::StatusOr<ModelDirectory> ReadModelDirectory(const std::string& root);

}  // namespace tokenbatch::hf
