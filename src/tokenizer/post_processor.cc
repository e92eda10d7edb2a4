// Post-processors; see post_processor.h.
#include "tokenizer/post_processor.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::tokenizer::internal {
namespace {

absl::Status ParseInto(const nlohmann::json& j, PostProcessor& p) {
  if (!j.is_object() || !j.contains("type")) return InvalidArgumentError("post_processor without a \"type\"");
  const std::string type = j.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const auto& sub : j.at("processors")) {
      if (absl::Status s = ParseInto(sub, p); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (type == "ByteLevel") {
    if (j.value("trim_offsets", true)) {
      p.trim_offsets = true;
      p.trim_add_prefix_space = j.value("add_prefix_space", true);
    }
    return absl::OkStatus();
  }
  if (!p.prefix_ids.empty() || !p.suffix_ids.empty()) {
    return InvalidArgumentError(absl::StrCat("unsupported post_processor: a second special-token processor (", type, ")"));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    // "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]
    p.prefix_ids.push_back(j.at("cls").at(1).get<uint32_t>());
    p.suffix_ids.push_back(j.at("sep").at(1).get<uint32_t>());
    if (type == "RobertaProcessing" && j.value("trim_offsets", true)) {
      p.trim_offsets = true;
      p.trim_add_prefix_space = j.value("add_prefix_space", true);
    }
    return absl::OkStatus();
  }
  if (type == "TemplateProcessing") {
    const auto& specials = j.at("special_tokens");
    bool seen_sequence = false;
    for (const auto& item : j.at("single")) {
      if (item.contains("Sequence")) {
        if (item.at("Sequence").at("id").get<std::string>() != "A" || seen_sequence) {
          return InvalidArgumentError("unsupported post_processor: TemplateProcessing single template other than one $A");
        }
        seen_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string name = item.at("SpecialToken").at("id").get<std::string>();
        if (!specials.contains(name)) {
          return InvalidArgumentError(absl::StrCat("TemplateProcessing special token ", name, " not in special_tokens"));
        }
        for (const auto& id : specials.at(name).at("ids")) {
          (seen_sequence ? p.suffix_ids : p.prefix_ids).push_back(id.get<uint32_t>());
        }
      } else {
        return InvalidArgumentError("unsupported post_processor: TemplateProcessing item");
      }
    }
    if (!seen_sequence) return InvalidArgumentError("TemplateProcessing single template without $A");
    return absl::OkStatus();
  }
  return InvalidArgumentError(absl::StrCat("unsupported post_processor: ", type, " at post_processor"));
}

}  // namespace

absl::StatusOr<PostProcessor> PostProcessor::Parse(const nlohmann::json& j) {
  PostProcessor p;
  if (!j.is_null()) {
    if (absl::Status s = ParseInto(j, p); !s.ok()) return s;
  }
  return p;
}

}  // namespace tokenbatch::tokenizer::internal
