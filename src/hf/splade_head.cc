// ParseSpladeHead: a masked-LM model's SPLADE pooling settings (model_directory.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "hf/json_fields.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/hf/model_directory.h"

namespace tokenbatch::hf {

using json_fields::Bad;
using json_fields::ReadString;
using nlohmann::json;

absl::StatusOr<std::optional<SpladeHead>> ParseSpladeHead(std::string_view config_json, std::string_view pooling_json,
                                                          std::string_view source) {
  const json config = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Bad(source, "not a JSON object");
  std::string architecture;
  if (auto it = config.find("architectures"); it != config.end() && it->is_array() && !it->empty() &&
                                              (*it)[0].is_string()) {
    architecture = (*it)[0].get<std::string>();
  }
  const bool masked_lm = architecture.ends_with("ForMaskedLM");
  if (!masked_lm && pooling_json.empty()) return std::optional<SpladeHead>();
  if (!masked_lm) {
    return Bad(source, absl::StrCat("SpladePooling reads a masked-language-model head, and config.json's "
                                    "architectures names \"", architecture, "\" (supported: BertForMaskedLM)"));
  }
  if (architecture != "BertForMaskedLM" || ReadString(config, "model_type") != "bert") {
    return Bad(source, absl::StrCat("architectures ", architecture, " with model_type \"",
                                    ReadString(config, "model_type"),
                                    "\" is not supported for sparse embeddings (supported: BertForMaskedLM (bert))"));
  }
  SpladeHead head{.architecture_class = architecture};
  if (pooling_json.empty()) return std::optional<SpladeHead>(head);
  const json pooling = json::parse(pooling_json, nullptr, /*allow_exceptions=*/false);
  if (pooling.is_discarded() || !pooling.is_object()) return Bad(source, "not a JSON object");
  const std::string strategy = pooling.contains("pooling_strategy") ? ReadString(pooling, "pooling_strategy") : "max";
  if (strategy != "max" && strategy != "sum") {
    return Bad(source, absl::StrCat("pooling_strategy ", pooling.value("pooling_strategy", json()).dump(),
                                    " is not supported (supported: max, sum)"));
  }
  const std::string activation =
      pooling.contains("activation_function") ? ReadString(pooling, "activation_function") : "relu";
  if (activation != "relu" && activation != "log1p_relu") {
    return Bad(source, absl::StrCat("activation_function ", pooling.value("activation_function", json()).dump(),
                                    " is not supported (supported: relu, log1p_relu)"));
  }
  head.max_pooling = strategy == "max";
  head.log1p_twice = activation == "log1p_relu";
  return std::optional<SpladeHead>(head);
}

}  // namespace tokenbatch::hf
