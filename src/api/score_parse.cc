// Request bodies of the rerank and predict routes (see score_api.h).
#include <simdjson.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/parsed_body.h"
#include "api/score_api.h"

namespace tokenbatch::server {
namespace {

using request_body::Err;
using request_body::GetBool;
using request_body::GetBoundedInteger;
using request_body::GetString;
using request_body::ParsedBody;
using request_body::TypeName;
using simdjson::dom::array;
using simdjson::dom::element;

// TEI's truncate and truncation_direction, and vLLM's priority: the fields the
// rerank and predict bodies share with /embed.
std::optional<ApiError> GetTruncation(const ParsedBody& j, std::optional<bool>& truncate,
                                      std::optional<TruncationDirection>& direction, int& priority) {
  if (auto e = GetBool(j, "truncate", truncate)) return e;
  if (auto e = request_body::GetTruncationDirection(j, direction)) return e;
  return request_body::GetPriority(j, priority);
}

// A document: a string, or (Cohere, Jina) an object with a string `text`.
std::optional<ApiError> AddDocument(element d, const std::string& name, bool objects, std::vector<std::string>& out) {
  if (d.is_string()) {
    out.emplace_back(d.get_string().value_unsafe());
    return std::nullopt;
  }
  element text;
  if (objects && d.is_object() && d.at_key("text").get(text) == simdjson::SUCCESS && text.is_string()) {
    out.emplace_back(text.get_string().value_unsafe());
    return std::nullopt;
  }
  return Err(400, absl::StrCat(name, " must be a string", objects ? " or an object with a string `text`" : "",
                               ", found ", TypeName(d)));
}

}  // namespace

std::variant<RerankRequest, ApiError> ParseRerank(std::string_view body, const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  RerankRequest out;
  std::optional<element> docs = j.Find("texts");
  if (!docs) {
    docs = j.Find("documents");
    out.cohere = docs.has_value();
  }
  if (!docs) return Err(400, "missing required field `texts` (TEI) or `documents` (Cohere, Jina)");
  const char* field = out.cohere ? "documents" : "texts";
  if (!j.Find("query")) return Err(400, "missing required field `query`");
  if (auto e = GetString(j, "query", out.query)) return *e;
  if (out.query.empty()) return Err(422, "`query` is an empty string");
  if (!docs->is_array()) return Err(400, absl::StrCat("`", field, "` must be an array, found ", TypeName(*docs)));
  const array items = docs->get_array().value_unsafe();
  if (items.size() == 0) return Err(422, absl::StrCat("`", field, "` must not be empty"));
  if (items.size() > limits.max_client_batch_size) {
    return Err(413, absl::StrCat("`", field, "` holds ", items.size(), " documents; at most ",
                                 limits.max_client_batch_size, " are accepted (max_client_batch_size)"));
  }
  out.documents.reserve(items.size());
  std::size_t i = 0;
  for (element d : items) {
    if (auto e = AddDocument(d, absl::StrCat("`", field, "`[", i++, "]"), out.cohere, out.documents)) return *e;
  }
  if (auto e = GetString(j, "model", out.model)) return *e;
  std::optional<bool> raw, return_docs, return_text;
  if (auto e = GetBool(j, "raw_scores", raw)) return *e;
  if (auto e = GetBool(j, "return_documents", return_docs)) return *e;
  if (auto e = GetBool(j, "return_text", return_text)) return *e;
  out.raw_scores = raw.value_or(false);
  // Jina and vLLM return the documents unless told not to; TEI does not.
  out.return_documents = out.cohere ? return_docs.value_or(true) : return_text.value_or(false);
  if (auto e = GetBoundedInteger(j, "top_n", 1, std::int64_t{1} << 30, out.top_n)) return *e;
  if (auto e = GetTruncation(j, out.truncate, out.truncation_direction, out.priority)) return *e;
  return out;
}

std::variant<PredictRequest, ApiError> ParsePredict(std::string_view body, const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  PredictRequest out;
  const std::optional<element> value = j.Find("inputs");
  if (!value) return Err(400, "missing required field `inputs`");
  // One input: a text, or [first, second] (an array of exactly two strings is a
  // pair, as TEI reads it; `name` names it in errors).
  auto add = [&](element e, const std::string& name, bool in_batch) -> std::optional<ApiError> {
    EmbedInput in;
    if (e.is_string()) {
      in.text = std::string(e.get_string().value_unsafe());
    } else if (in_batch && e.is_array() &&
               (e.get_array().value_unsafe().size() == 1 || e.get_array().value_unsafe().size() == 2)) {
      const array parts = e.get_array().value_unsafe();
      if (!parts.at(0).value_unsafe().is_string() || (parts.size() == 2 && !parts.at(1).value_unsafe().is_string())) {
        return Err(400, absl::StrCat(name, " must hold strings"));
      }
      in.text = std::string(parts.at(0).value_unsafe().get_string().value_unsafe());
      if (parts.size() == 2) in.text_pair = std::string(parts.at(1).value_unsafe().get_string().value_unsafe());
    } else {
      return Err(400, absl::StrCat(name, " must be a string", in_batch ? " or an array of one or two strings" : "",
                                   ", found ", TypeName(e)));
    }
    if (in.text.empty()) return Err(422, absl::StrCat(name, " is an empty string"));
    out.inputs.push_back(std::move(in));
    return std::nullopt;
  };
  if (value->is_string()) {
    if (auto e = add(*value, "`inputs`", false)) return *e;
  } else if (!value->is_array()) {
    return Err(400, absl::StrCat("`inputs` must be a string or an array, found ", TypeName(*value)));
  } else {
    const array items = value->get_array().value_unsafe();
    if (items.size() == 0) return Err(422, "`inputs` must not be empty");
    const bool pair =
        items.size() == 2 && items.at(0).value_unsafe().is_string() && items.at(1).value_unsafe().is_string();
    if (pair) {
      if (auto e = add(*value, "`inputs`", true)) return *e;
    } else {
      out.batch = true;
      if (items.size() > limits.max_client_batch_size) {
        return Err(413, absl::StrCat("`inputs` holds ", items.size(), " inputs; at most ", limits.max_client_batch_size,
                                     " are accepted (max_client_batch_size)"));
      }
      std::size_t i = 0;
      for (element e : items) {
        if (auto err = add(e, absl::StrCat("`inputs`[", i++, "]"), true)) return *err;
      }
    }
  }
  std::optional<bool> raw;
  if (auto e = GetBool(j, "raw_scores", raw)) return *e;
  out.raw_scores = raw.value_or(false);
  if (auto e = GetTruncation(j, out.truncate, out.truncation_direction, out.priority)) return *e;
  if (auto e = GetString(j, "model", out.model)) return *e;
  return out;
}

}  // namespace tokenbatch::server
