// ParseClassifierHead: a sequence-classification model's labels and the
// activation sentence-transformers' CrossEncoder applies (model_directory.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "hf/json_fields.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/hf/model_directory.h"

namespace tokenbatch::hf {
namespace {

using nlohmann::json;
using json_fields::Bad;

// sentence-transformers stores the activation as the class's dotted path.
absl::StatusOr<ScoreActivation> ActivationFromPath(const std::string& path, std::string_view source) {
  if (path == "torch.nn.modules.activation.Sigmoid") return ScoreActivation::kSigmoid;
  if (path == "torch.nn.modules.linear.Identity") return ScoreActivation::kIdentity;
  if (path == "torch.nn.modules.activation.Tanh") return ScoreActivation::kTanh;
  return Bad(source, absl::StrCat("activation_fn \"", path,
                                  "\" is not supported (supported: torch.nn.modules.activation.Sigmoid, "
                                  "torch.nn.modules.linear.Identity, torch.nn.modules.activation.Tanh)"));
}

// The first string of `j[key]` (an array of strings), or "".
std::string FirstArchitecture(const json& j) {
  auto it = j.find("architectures");
  if (it == j.end() || !it->is_array() || it->empty() || !(*it)[0].is_string()) return "";
  return (*it)[0].get<std::string>();
}

}  // namespace

absl::StatusOr<std::optional<ClassifierHead>> ParseClassifierHead(std::string_view config_json,
                                                                  std::string_view st_config_json,
                                                                  std::string_view source) {
  const json config = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Bad(source, "not a JSON object");
  ClassifierHead head;
  head.architecture_class = FirstArchitecture(config);
  if (!head.architecture_class.ends_with("ForSequenceClassification")) return std::optional<ClassifierHead>();
  const auto type_it = config.find("model_type");
  const std::string model_type = type_it != config.end() && type_it->is_string() ? type_it->get<std::string>() : "";
  const bool bert = head.architecture_class == "BertForSequenceClassification" && model_type == "bert";
  const bool roberta = (head.architecture_class == "XLMRobertaForSequenceClassification" ||
                        head.architecture_class == "RobertaForSequenceClassification") &&
                       (model_type == "xlm-roberta" || model_type == "roberta");
  if (!bert && !roberta) {
    return Bad(source, absl::StrCat("architectures ", head.architecture_class, " with model_type \"", model_type,
                                    "\" is not supported (supported: BertForSequenceClassification (bert), "
                                    "XLMRobertaForSequenceClassification and RobertaForSequenceClassification "
                                    "(xlm-roberta, roberta))"));
  }
  if (auto it = config.find("id2label"); it != config.end() && !it->is_null()) {
    if (!it->is_object() || it->empty() || it->size() > 65536) {
      return Bad(source, "id2label must be an object of 1 to 65536 labels {\"0\": name, ...}");
    }
    head.labels.resize(it->size());
    std::vector<bool> seen(it->size(), false);
    for (const auto& [key, name] : it->items()) {
      size_t id = 0;
      const bool number = !key.empty() && key.size() <= 6 && key.find_first_not_of("0123456789") == std::string::npos;
      if (number) id = std::stoul(key);
      if (!number || id >= head.labels.size() || seen[id] || !name.is_string()) {
        return Bad(source, absl::StrCat("id2label must map each id 0..", head.labels.size() - 1,
                                        " once to a string; got key \"", key, "\" -> ", name.dump()));
      }
      seen[id] = true;
      head.labels[id] = name.get<std::string>();
    }
  } else {
    int64_t num_labels = 2;
    if (auto n = config.find("num_labels"); n != config.end() && !n->is_null()) {
      if (!n->is_number_integer() || n->get<int64_t>() < 1 || n->get<int64_t>() > 65536) {
        return Bad(source, absl::StrCat("num_labels must be an integer from 1 to 65536, got ", n->dump()));
      }
      num_labels = n->get<int64_t>();
    }
    for (int64_t i = 0; i < num_labels; ++i) head.labels.push_back(absl::StrCat("LABEL_", i));
  }
  if (auto it = config.find("problem_type"); it != config.end() && !it->is_null()) {
    const std::string type = it->is_string() ? it->get<std::string>() : it->dump();
    if (type == "multi_label_classification") {
      head.label_scoring = backend::LabelScoring::kSigmoid;
    } else if (type == "regression") {
      head.label_scoring = backend::LabelScoring::kIdentity;
    } else if (type != "single_label_classification") {
      return Bad(source, absl::StrCat("problem_type \"", type,
                                      "\" is not supported (supported: single_label_classification, "
                                      "multi_label_classification, regression)"));
    }
  }
  // The activation: the CrossEncoder's saved setting, newest location first.
  std::string path;
  if (!st_config_json.empty()) {
    const json st = json::parse(st_config_json, nullptr, /*allow_exceptions=*/false);
    if (st.is_object() && st.contains("activation_fn") && st["activation_fn"].is_string()) {
      path = st["activation_fn"].get<std::string>();
    }
  }
  if (path.empty() && config.contains("sentence_transformers") && config["sentence_transformers"].is_object() &&
      config["sentence_transformers"].contains("activation_fn") &&
      config["sentence_transformers"]["activation_fn"].is_string()) {
    path = config["sentence_transformers"]["activation_fn"].get<std::string>();
  }
  if (path.empty() && config.contains("sbert_ce_default_activation_function") &&
      config["sbert_ce_default_activation_function"].is_string()) {
    path = config["sbert_ce_default_activation_function"].get<std::string>();
  }
  if (path.empty()) {
    head.activation = head.labels.size() == 1 ? ScoreActivation::kSigmoid : ScoreActivation::kIdentity;
  } else {
    absl::StatusOr<ScoreActivation> a = ActivationFromPath(path, source);
    if (!a.ok()) return a.status();
    head.activation = *a;
  }
  return std::optional<ClassifierHead>(std::move(head));
}

}  // namespace tokenbatch::hf
