#include "api/parsed_body.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/json_text.h"

namespace tokenbatch::server::request_body {

using simdjson::dom::element_type;

const char* TypeName(element e) {
  switch (e.type()) {
    case element_type::ARRAY:
      return "array";
    case element_type::OBJECT:
      return "object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "number";
    case element_type::STRING:
      return "string";
    case element_type::BOOL:
      return "boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "value";
}

std::optional<ApiError> ParsedBody::Parse(std::string_view body, const ApiLimits& limits) {
  if (const std::size_t bad = FindInvalidUtf8(body); bad != std::string_view::npos) {
    return Err(422, absl::StrCat("request body is not valid UTF-8 (byte offset ", bad, ")"));
  }
  if (const int depth = JsonNestingDepth(body); depth > limits.max_json_depth) {
    return Err(400,
               absl::StrCat("JSON nested ", depth, " levels deep; at most ", limits.max_json_depth, " are accepted"));
  }
  thread_local simdjson::dom::parser reused;
  simdjson::dom::parser* parser = &reused;
  if (body.size() > kReusedParserBytes) parser = &own_.emplace();
  element root;
  if (const simdjson::error_code error = parser->parse(body.data(), body.size()).get(root)) {
    ClampedBody clamped;
    if (error == simdjson::NUMBER_ERROR) clamped = ClampHugeNumbers(body);
    if (clamped.body.size() > kReusedParserBytes && parser == &reused) parser = &own_.emplace();
    if (clamped.originals.empty() ||
        parser->parse(clamped.body.data(), clamped.body.size()).get(root) != simdjson::SUCCESS) {
      return Err(
          400, absl::StrCat("malformed JSON: the body does not parse as JSON (", simdjson::error_message(error), ")"));
    }
    originals_ = std::move(clamped.originals);
  }
  if (root.get_object().get(root_) != simdjson::SUCCESS) return Err(400, "the JSON body must be an object");
  // A repeated field is ambiguous (parsers differ on which copy wins): reject
  // it, as TEI's serde does. Request objects have a handful of fields.
  std::size_t index = 0;
  for (const simdjson::dom::key_value_pair field : root_) {
    std::size_t earlier = 0;
    for (const simdjson::dom::key_value_pair other : root_) {
      if (earlier++ == index) break;
      if (other.key == field.key) return Err(400, absl::StrCat("duplicate field `", std::string(field.key), "`"));
    }
    if (++index > kMaxFields) return Err(400, absl::StrCat("more than ", kMaxFields, " fields in the body"));
  }
  return std::nullopt;
}

std::optional<ApiError> GetBool(const ParsedBody& body, const char* field, std::optional<bool>& out) {
  const std::optional<element> v = body.Find(field);
  if (!v) return std::nullopt;
  if (!v->is_bool()) return Err(400, absl::StrCat("`", field, "` must be a boolean, found ", TypeName(*v)));
  out = v->get_bool().value_unsafe();
  return std::nullopt;
}

std::optional<ApiError> GetString(const ParsedBody& body, const char* field, std::string& out) {
  const std::optional<element> v = body.Find(field);
  if (!v) return std::nullopt;
  if (!v->is_string()) return Err(400, absl::StrCat("`", field, "` must be a string, found ", TypeName(*v)));
  out = std::string(v->get_string().value_unsafe());
  return std::nullopt;
}

std::optional<ApiError> GetBoundedInteger(const ParsedBody& body, const char* field, std::int64_t lo, std::int64_t hi,
                                          std::optional<std::int64_t>& out) {
  const std::optional<element> v = body.Find(field);
  if (!v) return std::nullopt;
  const element_type type = v->type();
  const double d = type == element_type::DOUBLE ? v->get_double().value_unsafe() : 0.0;
  if (type != element_type::INT64 && type != element_type::UINT64 &&
      (type != element_type::DOUBLE || d != std::floor(d))) {
    return Err(400, absl::StrCat("`", field, "` must be an integer, found ", TypeName(*v)));
  }
  // The double range check happens before the conversion, which would overflow.
  const bool in_range = type == element_type::INT64
                            ? v->get_int64().value_unsafe() >= lo && v->get_int64().value_unsafe() <= hi
                        : type == element_type::DOUBLE ? d >= static_cast<double>(lo) && d <= static_cast<double>(hi)
                                                       : false;
  if (!in_range) {
    return Err(422, absl::StrCat("`", field, "` must be in [", lo, ", ", hi, "], got ", body.Literal(*v)));
  }
  out = type == element_type::INT64 ? v->get_int64().value_unsafe() : static_cast<std::int64_t>(d);
  return std::nullopt;
}

std::optional<ApiError> GetTruncationDirection(const ParsedBody& body, std::optional<TruncationDirection>& out) {
  std::string direction;
  if (auto e = GetString(body, "truncation_direction", direction)) return e;
  if (direction.empty() && !body.Find("truncation_direction")) return std::nullopt;
  direction = absl::AsciiStrToLower(direction);
  if (direction != "right" && direction != "left") {
    return Err(422, absl::StrCat("`truncation_direction` must be \"Right\" or \"Left\", got \"", direction, "\""));
  }
  out = direction == "left" ? TruncationDirection::kLeft : TruncationDirection::kRight;
  return std::nullopt;
}

std::optional<ApiError> GetPriority(const ParsedBody& body, int& level) {
  std::optional<std::int64_t> p;
  if (auto e = GetBoundedInteger(body, "priority", -kMaxPriority, kMaxPriority, p)) return e;
  if (p) level = static_cast<int>(-*p);
  return std::nullopt;
}

}  // namespace tokenbatch::server::request_body
