#include "tokenbatch/hf/model_directory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "hf/json_fields.h"
#include "hf/st_modules.h"
#include "nlohmann/json.hpp"

namespace tokenbatch::hf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace json_fields;  // NOLINT: the readers are this file's vocabulary
using st_modules::ReadDense;
using st_modules::ReadPooling;
using st_modules::ReadTokenizerConfig;

}  // namespace

int64_t ArchitectureConfig::max_input_positions() const {
  return architecture == Architecture::kXlmRoberta ? max_position_embeddings - pad_token_id - 1
                                                   : max_position_embeddings;
}

absl::StatusOr<ArchitectureConfig> ParseArchitectureConfig(std::string_view text, std::string_view source) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad(source, "not a JSON object");
  ArchitectureConfig c;
  c.model_type = ReadString(j, "model_type");
  if (c.model_type == "bert") {
    c.architecture = Architecture::kBert;
  } else if (c.model_type == "xlm-roberta" || c.model_type == "roberta") {
    c.architecture = Architecture::kXlmRoberta;
  } else if (c.model_type == "qwen3") {
    c.architecture = Architecture::kQwen3;
  } else {
    return Bad(source, absl::StrCat("model_type \"", c.model_type,
                                    "\" is not supported (supported: bert, xlm-roberta, roberta, qwen3)"));
  }
  const bool qwen = c.architecture == Architecture::kQwen3;
  c.hidden_act = qwen ? "silu" : "gelu";
  // transformers' defaults for fields a config may leave out.
  c.type_vocab_size = qwen ? 0 : 2;
  c.pad_token_id = c.architecture == Architecture::kXlmRoberta ? 1 : 0;
  for (auto [key, field] : {std::pair{"vocab_size", &c.vocab_size}, {"hidden_size", &c.hidden_size},
                            {"num_hidden_layers", &c.num_hidden_layers},
                            {"num_attention_heads", &c.num_attention_heads},
                            {"intermediate_size", &c.intermediate_size},
                            {"max_position_embeddings", &c.max_position_embeddings}}) {
    if (absl::Status s = ReadInt(j, key, *field, source); !s.ok()) return s;
    if (*field == 0) return Bad(source, absl::StrCat("needs ", key, " (an integer > 0)"));
  }
  // Bounds far above any real model, so that a corrupt config cannot make the
  // loader allocate or loop without end before a weight check stops it.
  for (auto [key, value, cap] : {std::tuple{"vocab_size", c.vocab_size, int64_t{1} << 24},
                                 {"hidden_size", c.hidden_size, int64_t{1} << 16},
                                 {"num_hidden_layers", c.num_hidden_layers, int64_t{1024}},
                                 {"num_attention_heads", c.num_attention_heads, int64_t{1024}},
                                 {"intermediate_size", c.intermediate_size, int64_t{1} << 20},
                                 {"max_position_embeddings", c.max_position_embeddings, int64_t{1} << 22}}) {
    if (value > cap) return Bad(source, absl::StrCat(key, " ", value, " is above the largest supported, ", cap));
  }
  c.num_key_value_heads = c.num_attention_heads;
  if (absl::Status s = ReadInt(j, "num_key_value_heads", c.num_key_value_heads, source); !s.ok()) return s;
  if (absl::Status s = ReadInt(j, "head_dim", c.head_dim, source); !s.ok()) return s;
  if (absl::Status s = ReadInt(j, "type_vocab_size", c.type_vocab_size, source, false); !s.ok()) return s;
  if (absl::Status s = ReadInt(j, "pad_token_id", c.pad_token_id, source, false); !s.ok()) return s;
  if (absl::Status s = ReadPositive(j, "layer_norm_eps", c.layer_norm_eps, source); !s.ok()) return s;
  if (absl::Status s = ReadPositive(j, "rms_norm_eps", c.rms_norm_eps, source); !s.ok()) return s;
  if (absl::Status s = ReadPositive(j, "rope_theta", c.rope_theta, source); !s.ok()) return s;
  // transformers >= 5 writes rope_parameters {"rope_type": "default", "rope_theta": ...}.
  if (j.contains("rope_parameters") && !j["rope_parameters"].is_null()) {
    const json& rope = j["rope_parameters"];
    if (!rope.is_object()) return Bad(source, "rope_parameters must be an object");
    if (const std::string type = ReadString(rope, "rope_type"); !type.empty() && type != "default") {
      return Bad(source, absl::StrCat("rope_parameters.rope_type \"", type, "\" is not supported (only default)"));
    }
    if (absl::Status s = ReadPositive(rope, "rope_theta", c.rope_theta, source); !s.ok()) return s;
  }
  if (std::string act = ReadString(j, "hidden_act"); !act.empty()) c.hidden_act = act;
  if (absl::Status s = ReadBool(j, "attention_bias", c.attention_bias, source); !s.ok()) return s;
  c.torch_dtype = ReadString(j, "torch_dtype");
  if (c.torch_dtype.empty()) c.torch_dtype = ReadString(j, "dtype");

  if (std::find(kHiddenActivations.begin(), kHiddenActivations.end(), c.hidden_act) == kHiddenActivations.end()) {
    std::string supported;
    for (std::string_view name : kHiddenActivations) supported += (supported.empty() ? "" : ", ") + std::string(name);
    return Bad(source, absl::StrCat("hidden_act \"", c.hidden_act, "\" is not supported (supported: ", supported, ")"));
  }
  if (qwen) {
    if (c.head_dim == 0) {
      if (c.hidden_size % c.num_attention_heads != 0) return Bad(source, "hidden_size is not a multiple of heads");
      c.head_dim = c.hidden_size / c.num_attention_heads;
    }
    if (c.num_attention_heads % c.num_key_value_heads != 0) {
      return Bad(source, absl::StrCat("num_attention_heads ", c.num_attention_heads,
                                      " is not a multiple of num_key_value_heads ", c.num_key_value_heads));
    }
    if (c.head_dim % 2 != 0) return Bad(source, "head_dim must be even for rotary embeddings");
    if (c.head_dim > 4096 || c.num_key_value_heads > c.num_attention_heads) {
      return Bad(source, "head_dim must be <= 4096 and num_key_value_heads <= num_attention_heads");
    }
    if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
      return Bad(source, absl::StrCat("rope_scaling ", j["rope_scaling"].dump(),
                                      " is not supported (only plain RoPE)"));
    }
    if (j.contains("use_sliding_window") && j["use_sliding_window"].is_boolean() &&
        j["use_sliding_window"].get<bool>()) {
      return Bad(source, "use_sliding_window is not supported (only full attention)");
    }
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return Bad(source, absl::StrCat("hidden_size ", c.hidden_size, " is not a multiple of num_attention_heads ",
                                      c.num_attention_heads));
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
    c.num_key_value_heads = c.num_attention_heads;
    const std::string position = ReadString(j, "position_embedding_type");
    if (!position.empty() && position != "absolute") {
      return Bad(source, absl::StrCat("position_embedding_type \"", position, "\" is not supported (only absolute)"));
    }
  }
  if (c.pad_token_id >= c.vocab_size) return Bad(source, "pad_token_id must be < vocab_size");
  if (c.max_input_positions() <= 0) return Bad(source, "max_position_embeddings leaves no position for tokens");
  return c;
}

absl::StatusOr<ModelDirectory> ReadModelDirectory(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return Bad(root, "not a directory (--model-id takes a model directory)");
  ModelDirectory m;
  m.root = root;
  m.transformer_dir = root;

  // modules.json is an array, which ReadJsonObject refuses; read it here.
  const fs::path modules_path = fs::path(root) / "modules.json";
  json module_list = json::array();
  if (fs::is_regular_file(modules_path, ec)) {
    std::ifstream in(modules_path);
    module_list = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (module_list.is_discarded() || !module_list.is_array()) return Bad(modules_path.string(), "not a JSON array");
  }
  // sentence-transformers runs the modules in order; the order tokenbatch runs is
  // Transformer, Pooling, Dense..., Normalize, so another order is refused.
  int stage = 0;  // 0 nothing yet, 1 Transformer, 2 Pooling, 3 Dense, 4 Normalize
  std::string splade_pooling, splade_pooling_json;  // a SpladePooling module's config file and text
  auto next_stage = [&](int wanted, const std::string& type) -> absl::Status {
    const bool ok = (wanted == 1 && stage == 0) || (wanted == 2 && stage == 1) || (wanted == 3 && (stage == 2 || stage == 3)) ||
                    (wanted == 4 && (stage == 2 || stage == 3));
    if (!ok) {
      return Bad(modules_path.string(), absl::StrCat("module ", type, " is out of order (supported: Transformer, ",
                                                     "Pooling, then any Dense, then Normalize)"));
    }
    stage = wanted;
    return absl::OkStatus();
  };
  for (const json& module : module_list) {
    if (!module.is_object()) return Bad(modules_path.string(), "holds a module that is not an object");
    // The class name decides: sentence-transformers moved the modules between
    // packages across versions (sentence_transformers.models.Pooling, then
    // sentence_transformers.sentence_transformer.modules.pooling.Pooling, ...).
    const std::string full_type = ReadString(module, "type");
    const std::string type = full_type.substr(full_type.rfind('.') + 1);
    const std::string path = ReadString(module, "path");
    if (path.find("..") != std::string::npos || (!path.empty() && path[0] == '/')) {
      return Bad(modules_path.string(), absl::StrCat("module path \"", path, "\" leaves the model directory"));
    }
    const fs::path dir = fs::path(root) / path;
    const int wanted = type == "Transformer" || type == "MLMTransformer"       ? 1
                       : type == "Pooling" || type == "SpladePooling" ? 2
                       : type == "Dense"                               ? 3
                       : type == "Normalize"                           ? 4
                                                                       : 0;
    if (wanted > 0) {
      if (absl::Status s = next_stage(wanted, type); !s.ok()) return s;
    }
    if (type == "Transformer" || type == "MLMTransformer") {
      m.transformer_dir = dir.string();
    } else if (type == "SpladePooling") {
      absl::StatusOr<json> pooling = ReadJsonObject(dir / "config.json", false);
      if (!pooling.ok()) return pooling.status();
      splade_pooling = (dir / "config.json").string();
      splade_pooling_json = pooling->dump();
    } else if (type == "Pooling") {
      const std::string source = (dir / "config.json").string();
      absl::StatusOr<json> pooling = ReadJsonObject(dir / "config.json", false);
      if (!pooling.ok()) return pooling.status();
      absl::StatusOr<backend::Pooling> p = ReadPooling(*pooling, source, m.include_prompt);
      if (!p.ok()) return p.status();
      m.pooling = *p;
    } else if (type == "Dense") {
      absl::StatusOr<DenseLayer> d = ReadDense(dir);
      if (!d.ok()) return d.status();
      m.dense.push_back(*std::move(d));
    } else if (type == "Normalize") {
      m.normalize = true;
    } else {
      return Bad(modules_path.string(),
                 absl::StrCat("module type \"", full_type,
                              "\" is not supported (supported: Transformer, MLMTransformer, Pooling, "
                              "SpladePooling, Dense, Normalize)"));
    }
  }

  const fs::path config_path = fs::path(m.transformer_dir) / "config.json";
  absl::StatusOr<json> config_json = ReadJsonObject(config_path, false);
  if (!config_json.ok()) return config_json.status();
  absl::StatusOr<ArchitectureConfig> config = ParseArchitectureConfig(config_json->dump(), config_path.string());
  if (!config.ok()) return config.status();
  m.config = *std::move(config);
  m.max_seq_length = m.config.max_input_positions();

  const fs::path sbert = fs::path(m.transformer_dir) / "sentence_bert_config.json";
  absl::StatusOr<json> sbert_json = ReadJsonObject(sbert, true);
  if (!sbert_json.ok()) return sbert_json.status();
  int64_t max_seq = 0;
  if (sbert_json->is_object()) {
    if (absl::Status s = ReadInt(*sbert_json, "max_seq_length", max_seq, sbert.string()); !s.ok()) return s;
    if (absl::Status s = ReadBool(*sbert_json, "do_lower_case", m.do_lower_case, sbert.string());
        !s.ok()) {
      return s;
    }
  }
  const fs::path tokenizer_config_path = fs::path(m.transformer_dir) / "tokenizer_config.json";
  absl::StatusOr<json> tokenizer_config = ReadJsonObject(tokenizer_config_path, true);
  if (!tokenizer_config.ok()) return tokenizer_config.status();
  if (tokenizer_config->is_object()) {
    if (absl::Status s = ReadTokenizerConfig(*tokenizer_config, tokenizer_config_path.string(), m); !s.ok()) return s;
    // Without max_seq_length, sentence-transformers (>= 6) truncates at the
    // tokenizer's model_max_length; transformers writes a huge sentinel there
    // when unset, which the position limit below caps.
    if (max_seq == 0 && tokenizer_config->contains("model_max_length") &&
        (*tokenizer_config)["model_max_length"].is_number_integer() &&
        (*tokenizer_config)["model_max_length"].get<int64_t>() > 0) {
      max_seq = (*tokenizer_config)["model_max_length"].get<int64_t>();
    }
  }
  if (max_seq > 0) m.max_seq_length = std::min(max_seq, m.max_seq_length);

  const fs::path st_config = fs::path(root) / "config_sentence_transformers.json";
  absl::StatusOr<json> st = ReadJsonObject(st_config, true);
  if (!st.ok()) return st.status();
  if (st->is_object()) {
    if (st->contains("prompts") && !(*st)["prompts"].is_null()) {
      if (!(*st)["prompts"].is_object()) return Bad(st_config.string(), "prompts must be an object");
      for (const auto& [name, text] : (*st)["prompts"].items()) {
        if (!text.is_string()) return Bad(st_config.string(), absl::StrCat("prompt \"", name, "\" is not a string"));
        m.prompts[name] = text.get<std::string>();
      }
    }
    if (absl::Status s = ReadOptionalString(*st, "default_prompt_name", m.default_prompt_name, st_config.string());
        !s.ok()) {
      return s;
    }
    if (!m.default_prompt_name.empty() && !m.prompts.contains(m.default_prompt_name)) {
      return Bad(st_config.string(),
                 absl::StrCat("default_prompt_name \"", m.default_prompt_name, "\" is not among the prompts"));
    }
  }
  // A masked LM without a Pooling module, or under SpladePooling, gives sparse embeddings.
  if (!m.pooling.has_value()) {
    absl::StatusOr<std::optional<SpladeHead>> splade = ParseSpladeHead(
        config_json->dump(), splade_pooling_json, splade_pooling.empty() ? config_path.string() : splade_pooling);
    if (!splade.ok()) return splade.status();
    m.splade = *std::move(splade);
    if (m.splade && (!m.dense.empty() || m.normalize)) {
      return Bad(modules_path.string(), "a SpladePooling model takes no Dense or Normalize module");
    }
  }
  // A sequence classifier without a Pooling module is a cross-encoder.
  if (!m.pooling.has_value() && !m.splade.has_value()) {
    absl::StatusOr<std::optional<ClassifierHead>> head =
        ParseClassifierHead(config_json->dump(), st->is_object() ? st->dump() : "", config_path.string());
    if (!head.ok()) return head.status();
    m.classifier = *std::move(head);
  }
  const fs::path tokenizer = fs::path(m.transformer_dir) / "tokenizer.json";
  if (fs::is_regular_file(tokenizer, ec)) m.tokenizer_path = tokenizer.string();
  return m;
}

}  // namespace tokenbatch::hf
