// Post-processors; see post_processor.h.
#include "tokenizer/post_processor.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/json_number.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// TemplateProcessing's "pair": [{"SpecialToken": {"id", "type_id"}} | {"Sequence":
// {"id": "A" | "B", "type_id"}}, ...], A before B, each once.
absl::Status ParsePairTemplate(const nlohmann::json& items, const nlohmann::json& specials, PostProcessor& p) {
  if (!items.is_array()) return InvalidArgumentError("TemplateProcessing pair template is not an array");
  std::vector<PairPiece> pieces;
  int seen = 0;  // sequences so far
  for (const auto& item : items) {
    PairPiece piece;
    const bool sequence = item.is_object() && item.contains("Sequence");
    if (!sequence && !(item.is_object() && item.contains("SpecialToken"))) {
      return InvalidArgumentError("unsupported post_processor: TemplateProcessing pair item");
    }
    const auto& body = item.at(sequence ? "Sequence" : "SpecialToken");
    if (!body.is_object() || !body.contains("id") || !body.at("id").is_string()) {
      return InvalidArgumentError("TemplateProcessing pair item without a string \"id\"");
    }
    const std::string id = body.at("id").get<std::string>();
    if (body.contains("type_id")) {
      if (!body.at("type_id").is_number_unsigned() || body.at("type_id").get<uint64_t>() > 0xFFFF) {
        return InvalidArgumentError(
            absl::StrCat("TemplateProcessing pair item ", id, ": type_id must be an integer ", "in [0, 65535]"));
      }
      piece.type_id = body.at("type_id").get<uint32_t>();
    }
    if (sequence) {
      if (id != (seen == 0 ? "A" : "B") || seen == 2) {
        return InvalidArgumentError(
            "unsupported post_processor: TemplateProcessing pair template other than $A then $B");
      }
      piece.kind = seen++ == 0 ? PairPiece::Kind::kFirst : PairPiece::Kind::kSecond;
    } else {
      if (!specials.is_object() || !specials.contains(id) || !specials.at(id).is_object() ||
          !specials.at(id).contains("ids") || !specials.at(id).at("ids").is_array()) {
        return InvalidArgumentError(absl::StrCat("TemplateProcessing special token ", id, " not in special_tokens"));
      }
      for (const auto& x : specials.at(id).at("ids")) {
        if (!x.is_number_unsigned() || x.get<uint64_t>() > 0xFFFFFFFFu) {
          return InvalidArgumentError(absl::StrCat("TemplateProcessing special token ", id, ": ids must be token ids"));
        }
        piece.ids.push_back(x.get<uint32_t>());
      }
    }
    pieces.push_back(std::move(piece));
  }
  if (seen != 2) return InvalidArgumentError("TemplateProcessing pair template without both $A and $B");
  p.pair = std::move(pieces);
  return absl::OkStatus();
}

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
    const absl::StatusOr<uint32_t> cls_id = JsonWhole<uint32_t>(j.at("cls").at(1), absl::StrCat(type, " cls id"));
    const absl::StatusOr<uint32_t> sep_id = JsonWhole<uint32_t>(j.at("sep").at(1), absl::StrCat(type, " sep id"));
    if (!cls_id.ok()) return cls_id.status();
    if (!sep_id.ok()) return sep_id.status();
    const uint32_t cls = *cls_id;
    const uint32_t sep = *sep_id;
    p.prefix_ids.push_back(cls);
    p.suffix_ids.push_back(sep);
    using K = PairPiece::Kind;
    if (type == "BertProcessing") {
      p.pair = {{K::kSpecial, {cls}, 0},
                {K::kFirst, {}, 0},
                {K::kSpecial, {sep}, 0},
                {K::kSecond, {}, 1},
                {K::kSpecial, {sep}, 1}};
    } else {
      p.pair = {{K::kSpecial, {cls}, 0},
                {K::kFirst, {}, 0},
                {K::kSpecial, {sep, sep}, 0},
                {K::kSecond, {}, 0},
                {K::kSpecial, {sep}, 0}};
    }
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
          const absl::StatusOr<uint32_t> v = JsonWhole<uint32_t>(id, absl::StrCat("TemplateProcessing id of ", name));
          if (!v.ok()) return v.status();
          (seen_sequence ? p.suffix_ids : p.prefix_ids).push_back(*v);
        }
      } else {
        return InvalidArgumentError("unsupported post_processor: TemplateProcessing item");
      }
    }
    if (!seen_sequence) return InvalidArgumentError("TemplateProcessing single template without $A");
    if (j.contains("pair") && !j.at("pair").is_null()) {
      // A pair template this cannot follow leaves single sequences usable.
      if (absl::Status s = ParsePairTemplate(j.at("pair"), specials, p); !s.ok()) {
        p.pair_error = std::string(s.message());
      }
    } else {
      // Pairs without their special tokens would silently score something else.
      p.pair_error = "TemplateProcessing has no pair template";
    }
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
  if (p.pair.empty() && p.pair_error.empty())
    p.pair = {{PairPiece::Kind::kFirst, {}, 0}, {PairPiece::Kind::kSecond, {}, 1}};
  return p;
}

}  // namespace tokenbatch::tokenizer::internal
