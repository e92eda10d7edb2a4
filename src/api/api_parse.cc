// Request bodies of the OpenAI and TEI embedding APIs and of the token routes
// (see api.h): what each route's fields mean. How a body is parsed and what
// every body must satisfy is in parsed_body.h.
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/api.h"
#include "api/parsed_body.h"

namespace tokenbatch::server {
namespace {

using request_body::Err;
using request_body::GetBool;
using request_body::GetBoundedInteger;
using request_body::GetPriority;
using request_body::GetString;
using request_body::GetTruncationDirection;
using request_body::ParsedBody;
using request_body::TypeName;
using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;

// `input` / `inputs`: a string, an array of strings, an array of token ids, or an
// array of arrays of token ids.
std::variant<std::vector<EmbedInput>, ApiError> ParseInputs(const ParsedBody& body, const char* field,
                                                            const ApiLimits& limits) {
  const std::optional<element> value = body.Find(field);
  if (!value) return Err(400, absl::StrCat("missing required field `", field, "`"));
  std::vector<EmbedInput> out;
  auto add_text = [&](element s, std::size_t i) -> std::optional<ApiError> {
    const std::string_view text = s.get_string().value_unsafe();
    if (text.empty()) return Err(422, absl::StrCat("`", field, "`[", i, "] is an empty string"));
    out.push_back(EmbedInput{.text = std::string(text)});
    return std::nullopt;
  };
  // `name`: "`input`" for a single list of ids, "`input`[i]" for one of several.
  auto add_ids = [&](array ids, const std::string& name) -> std::optional<ApiError> {
    if (ids.size() == 0) return Err(422, absl::StrCat(name, " is an empty array of token ids"));
    EmbedInput in{.is_ids = true};
    in.ids.reserve(ids.size());
    std::size_t j = 0;
    for (element x : ids) {
      // simdjson types an integer literal as UINT64 only above INT64_MAX.
      if (x.type() == element_type::UINT64 || body.Clamped(x)) {
        return Err(422, absl::StrCat(name, " holds token id ", body.Literal(x),
                                     ", out of range [0, 2^32), at position ", j));
      }
      if (x.type() != element_type::INT64) {
        return Err(400, absl::StrCat(name, " must hold integer token ids, found ", TypeName(x),
                                     " at position ", j));
      }
      in.ids.push_back(x.get_int64().value_unsafe());
      ++j;
    }
    out.push_back(std::move(in));
    return std::nullopt;
  };
  if (value->is_string()) {
    if (auto e = add_text(*value, 0)) return *e;
    return out;
  }
  if (!value->is_array()) {
    return Err(400, absl::StrCat("`", field, "` must be a string or an array, found ", TypeName(*value)));
  }
  const array items = value->get_array().value_unsafe();
  const std::size_t n = items.size();
  if (n == 0) return Err(422, absl::StrCat("`", field, "` must not be empty"));
  const element first = items.at(0).value_unsafe();
  if (first.is_number()) {  // one input given as token ids
    if (auto e = add_ids(items, absl::StrCat("`", field, "`"))) return *e;
    return out;
  }
  if (n > limits.max_client_batch_size) {
    return Err(413, absl::StrCat("`", field, "` holds ", n, " inputs; at most ", limits.max_client_batch_size,
                                 " are accepted (max_client_batch_size)"));
  }
  const bool texts = first.is_string();
  out.reserve(n);
  std::size_t i = 0;
  for (element e : items) {
    if (texts && e.is_string()) {
      if (auto err = add_text(e, i)) return *err;
    } else if (!texts && e.is_array()) {
      if (auto err = add_ids(e.get_array().value_unsafe(), absl::StrCat("`", field, "`[", i, "]"))) return *err;
    } else {
      return Err(400, absl::StrCat("`", field, "`[", i, "] must be ", texts ? "a string" : "an array of token ids",
                                   " like the first element, found ", TypeName(e)));
    }
    ++i;
  }
  return out;
}

std::optional<ApiError> GetDimensions(const ParsedBody& body, int& out) {
  std::optional<std::int64_t> d;
  if (auto e = GetBoundedInteger(body, "dimensions", 1, 1 << 20, d)) return e;
  if (d) out = static_cast<int>(*d);
  return std::nullopt;
}

// TEI's `prompt_name` (also accepted on the OpenAI route): a name among the
// model's prompts, checked by the service; absent or null leaves `out` unset.
std::optional<ApiError> GetPromptName(const ParsedBody& body, std::optional<std::string>& out) {
  std::string name;
  const bool present = body.Find("prompt_name").has_value();
  if (auto e = GetString(body, "prompt_name", name)) return e;
  if (present) out = std::move(name);
  return std::nullopt;
}

// The fields /embed and /embed_sparse share: truncate, truncation_direction,
// prompt_name, priority and model.
std::optional<ApiError> GetTeiFields(const ParsedBody& body, EmbedRequest& out, std::string& model) {
  if (auto e = GetBool(body, "truncate", out.truncate)) return e;
  if (auto e = GetTruncationDirection(body, out.truncation_direction)) return e;
  if (auto e = GetPromptName(body, out.prompt_name)) return e;
  if (auto e = GetPriority(body, out.priority)) return e;
  return GetString(body, "model", model);
}

}  // namespace

std::variant<OpenAiEmbeddingsRequest, ApiError> ParseOpenAiEmbeddings(std::string_view body,
                                                                      const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  OpenAiEmbeddingsRequest out;
  auto inputs = ParseInputs(j, "input", limits);
  if (auto* e = std::get_if<ApiError>(&inputs)) return *e;
  out.request.inputs = std::get<std::vector<EmbedInput>>(std::move(inputs));
  if (auto e = GetString(j, "model", out.model)) return *e;
  std::string format = "float";
  if (auto e = GetString(j, "encoding_format", format)) return *e;
  if (format != "float" && format != "base64") {
    return Err(422, absl::StrCat("`encoding_format` must be \"float\" or \"base64\", got \"", format, "\""));
  }
  out.base64 = format == "base64";
  if (auto e = GetDimensions(j, out.request.dimensions)) return *e;
  if (auto e = GetPromptName(j, out.request.prompt_name)) return *e;
  std::string user;
  if (auto e = GetString(j, "user", user)) return *e;
  if (auto e = GetPriority(j, out.request.priority)) return *e;
  return out;
}

std::variant<TeiEmbedRequest, ApiError> ParseTeiEmbed(std::string_view body, const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  TeiEmbedRequest tei;
  EmbedRequest& out = tei.request;
  auto inputs = ParseInputs(j, "inputs", limits);
  if (auto* e = std::get_if<ApiError>(&inputs)) return *e;
  out.inputs = std::get<std::vector<EmbedInput>>(std::move(inputs));
  if (auto e = GetBool(j, "normalize", out.normalize)) return *e;
  if (auto e = GetDimensions(j, out.dimensions)) return *e;
  if (auto e = GetTeiFields(j, out, tei.model)) return *e;
  return tei;
}

std::variant<SparseEmbedRequest, ApiError> ParseSparseEmbed(std::string_view body, const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  SparseEmbedRequest out;
  auto inputs = ParseInputs(j, "inputs", limits);
  if (auto* e = std::get_if<ApiError>(&inputs)) return *e;
  out.request.inputs = std::get<std::vector<EmbedInput>>(std::move(inputs));
  for (const char* dense_only : {"normalize", "dimensions"}) {
    if (j.Find(dense_only)) {
      return Err(422, absl::StrCat("`", dense_only,
                                   "` does not apply to sparse embeddings (one weight per vocabulary id); use "
                                   "`top_k` or `threshold` to keep fewer"));
    }
  }
  if (auto e = GetTeiFields(j, out.request, out.model)) return *e;
  if (auto e = GetBoundedInteger(j, "top_k", 1, std::int64_t{1} << 30, out.top_k)) return *e;
  if (const std::optional<element> t = j.Find("threshold")) {
    if (!t->is_number()) return Err(400, absl::StrCat("`threshold` must be a number, found ", TypeName(*t)));
    const double v = t->get_double().value_unsafe();
    if (!(v >= 0) || !std::isfinite(v) || j.Clamped(*t)) {
      return Err(422, absl::StrCat("`threshold` must be a finite number >= 0, got ", j.Literal(*t)));
    }
    out.threshold = v;
  }
  return out;
}

std::variant<TokenizeRequest, ApiError> ParseTokenize(std::string_view body, const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  auto inputs = ParseInputs(j, "inputs", limits);
  if (auto* e = std::get_if<ApiError>(&inputs)) return *e;
  TokenizeRequest out;
  for (EmbedInput& in : std::get<std::vector<EmbedInput>>(inputs)) {
    if (in.is_ids) return Err(400, "`inputs` of /tokenize must be strings");
    out.texts.push_back(std::move(in.text));
  }
  std::optional<bool> special;
  if (auto e = GetBool(j, "add_special_tokens", special)) return *e;
  out.add_special_tokens = special.value_or(true);
  if (auto e = GetString(j, "model", out.model)) return *e;
  return out;
}

namespace {

// An array of token ids as uint32; `what` names it in errors.
std::variant<std::vector<std::uint32_t>, ApiError> IdList(const ParsedBody& body, element value,
                                                          const std::string& what) {
  if (!value.is_array()) return Err(400, absl::StrCat(what, " must be an array of token ids, found ", TypeName(value)));
  std::vector<std::uint32_t> ids;
  std::size_t j = 0;
  const array items = value.get_array().value_unsafe();
  for (element x : items) {
    if (x.type() != element_type::INT64 && x.type() != element_type::UINT64) {
      return Err(400, absl::StrCat(what, " must hold integer token ids, found ", TypeName(x), " at position ", j));
    }
    // simdjson types an integer literal as UINT64 only above INT64_MAX.
    const std::int64_t id = x.type() == element_type::UINT64 ? -1 : x.get_int64().value_unsafe();
    if (id < 0 || id > 0xFFFFFFFFLL) {
      return Err(422, absl::StrCat(what, " holds token id ", body.Literal(x), ", out of range [0, 2^32), at position ",
                                   j));
    }
    ids.push_back(static_cast<std::uint32_t>(id));
    ++j;
  }
  return ids;
}

std::optional<ApiError> CheckDecodeSize(const DecodeRequest& r) {
  std::size_t total = 0;
  for (const auto& list : r.ids) total += list.size();
  if (total <= kMaxDecodeIds) return std::nullopt;
  return Err(413, absl::StrCat("the request holds ", total, " token ids; at most ", kMaxDecodeIds, " are accepted"));
}

}  // namespace

std::variant<DecodeRequest, ApiError> ParseDecode(std::string_view body, const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  const std::optional<element> value = j.Find("ids");
  if (!value) return Err(400, "missing required field `ids`");
  if (!value->is_array()) return Err(400, absl::StrCat("`ids` must be an array, found ", TypeName(*value)));
  DecodeRequest out;
  const array items = value->get_array().value_unsafe();
  if (items.size() == 0 || !items.at(0).value_unsafe().is_array()) {  // one list of ids
    auto ids = IdList(j, *value, "`ids`");
    if (auto* e = std::get_if<ApiError>(&ids)) return *e;
    out.ids.push_back(std::move(std::get<std::vector<std::uint32_t>>(ids)));
  } else {
    out.batch = true;
    if (items.size() > limits.max_client_batch_size) {
      return Err(413, absl::StrCat("`ids` holds ", items.size(), " lists; at most ", limits.max_client_batch_size,
                                   " are accepted (max_client_batch_size)"));
    }
    std::size_t i = 0;
    for (element e : items) {
      auto ids = IdList(j, e, absl::StrCat("`ids`[", i++, "]"));
      if (auto* err = std::get_if<ApiError>(&ids)) return *err;
      out.ids.push_back(std::move(std::get<std::vector<std::uint32_t>>(ids)));
    }
  }
  if (auto e = CheckDecodeSize(out)) return *e;
  std::optional<bool> skip;
  if (auto e = GetBool(j, "skip_special_tokens", skip)) return *e;
  out.skip_special_tokens = skip.value_or(true);
  if (auto e = GetString(j, "model", out.model)) return *e;
  return out;
}

std::variant<DecodeRequest, ApiError> ParseDetokenize(std::string_view body, const ApiLimits& limits) {
  ParsedBody j;
  if (auto e = j.Parse(body, limits)) return *e;
  const std::optional<element> value = j.Find("tokens");
  if (!value) return Err(400, "missing required field `tokens`");
  DecodeRequest out;
  if (auto e = GetString(j, "model", out.model)) return *e;
  auto ids = IdList(j, *value, "`tokens`");
  if (auto* e = std::get_if<ApiError>(&ids)) return *e;
  out.ids.push_back(std::move(std::get<std::vector<std::uint32_t>>(ids)));
  if (auto e = CheckDecodeSize(out)) return *e;
  out.skip_special_tokens = false;
  return out;
}

}  // namespace tokenbatch::server
