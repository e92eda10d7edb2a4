// ReadPooling, ReadDense and ReadTokenizerConfig (st_modules.h).
#include "hf/st_modules.h"

#include "absl/strings/str_cat.h"
#include "hf/json_fields.h"

namespace tokenbatch::hf::st_modules {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace json_fields;  // NOLINT: the readers are this file's vocabulary

absl::StatusOr<backend::Pooling> ReadPooling(const json& j, std::string_view source, bool& include_prompt) {
  if (j.contains("include_prompt")) {
    if (!j["include_prompt"].is_boolean()) return Bad(source, "include_prompt must be true or false");
    include_prompt = j["include_prompt"].get<bool>();
  }
  // sentence-transformers >= 6 writes one string; earlier versions one boolean per mode.
  if (j.contains("pooling_mode")) {
    const std::string mode = ReadString(j, "pooling_mode");
    if (mode == "cls") return backend::Pooling::kCls;
    if (mode == "mean") return backend::Pooling::kMean;
    if (mode == "lasttoken") return backend::Pooling::kLast;
    return Bad(source, absl::StrCat("pooling_mode ", j["pooling_mode"].dump(),
                                    " is not supported (supported: cls, mean, lasttoken)"));
  }
  auto flag = [&](const char* key) { return j.contains(key) && j[key].is_boolean() && j[key].get<bool>(); };
  static constexpr const char* kUnsupported[] = {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                                                 "pooling_mode_weightedmean_tokens"};
  for (const char* key : kUnsupported) {
    if (flag(key)) return Bad(source, absl::StrCat(key, " is not supported (supported: cls, mean, lasttoken)"));
  }
  const bool cls = flag("pooling_mode_cls_token");
  const bool mean = flag("pooling_mode_mean_tokens");
  const bool last = flag("pooling_mode_lasttoken");
  if (int(cls) + int(mean) + int(last) != 1) {
    return Bad(source, "exactly one of pooling_mode_cls_token, pooling_mode_mean_tokens and pooling_mode_lasttoken "
                       "must be true (sentence-transformers would concatenate several; tokenbatch does not)");
  }
  return cls ? backend::Pooling::kCls : mean ? backend::Pooling::kMean : backend::Pooling::kLast;
}

absl::StatusOr<DenseLayer> ReadDense(const fs::path& dir) {
  const std::string source = (dir / "config.json").string();
  absl::StatusOr<json> j = ReadJsonObject(dir / "config.json", false);
  if (!j.ok()) return j.status();
  DenseLayer d;
  d.dir = dir.string();
  if (absl::Status s = ReadInt(*j, "in_features", d.in_features, source); !s.ok()) return s;
  if (absl::Status s = ReadInt(*j, "out_features", d.out_features, source); !s.ok()) return s;
  if (d.in_features == 0 || d.out_features == 0) return Bad(source, "needs in_features and out_features");
  if (absl::Status s = ReadBool(*j, "bias", d.bias, source); !s.ok()) return s;
  // sentence-transformers' Dense defaults to Tanh.
  std::string act = "torch.nn.modules.activation.Tanh";
  if (absl::Status s = ReadOptionalString(*j, "activation_function", act, source); !s.ok()) return s;
  if (act == "torch.nn.modules.linear.Identity") {
    d.activation = "identity";
  } else if (act == "torch.nn.modules.activation.Tanh") {
    d.activation = "tanh";
  } else {
    return Bad(source, absl::StrCat("activation_function \"", act,
                                    "\" is not supported (supported: torch.nn.modules.linear.Identity, "
                                    "torch.nn.modules.activation.Tanh)"));
  }
  return d;
}

// The fields of tokenizer_config.json that change what transformers encodes
// (see the header comment); model_max_length is read by the caller.
absl::Status ReadTokenizerConfig(const json& j, std::string_view source, ModelDirectory& m) {
  for (const char* side : {"truncation_side", "padding_side"}) {
    std::string value = "right";
    if (absl::Status s = ReadOptionalString(j, side, value, source); !s.ok()) return s;
    if (value != "right" && value != "left") {
      return Bad(source, absl::StrCat(side, " \"", value, "\" is not supported (supported: right, left)"));
    }
    if (std::string_view(side) == "truncation_side") m.truncate_left = value == "left";
    // Left padding changes no result where positions start at each input's
    // first token (XLM-R counts them past the padding; RoPE is relative), but
    // BERT's absolute positions would then start in the padding, so its
    // embeddings would depend on the batch: there is no per-input answer.
    if (std::string_view(side) == "padding_side" && value == "left" &&
        m.config.architecture == Architecture::kBert) {
      return Bad(source, "padding_side \"left\" is not supported for bert (transformers then starts BERT's absolute "
                         "positions in the padding, so an input's embedding depends on its batch)");
    }
  }
  // add_bos_token / add_eos_token: transformers 5 keeps tokenizer.json's
  // post-processor whatever they say, so they are only checked.
  bool unused = false;
  for (const char* key : {"add_bos_token", "add_eos_token"}) {
    if (absl::Status s = ReadBool(j, key, unused, source); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace tokenbatch::hf::st_modules
