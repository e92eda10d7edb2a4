// JSON shapes of the OpenAI and TEI embedding APIs (see api.h).
#include "server/api.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>


#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/float_text.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;

ApiError Err(int status, std::string message) { return ApiError{status, std::move(message)}; }

// Checks what every body shares, then parses it. Sets `error` on failure.
std::variant<json, ApiError> ParseBody(std::string_view body, const ApiLimits& limits) {
  if (const std::size_t bad = FindInvalidUtf8(body); bad != std::string_view::npos) {
    return Err(422, absl::StrCat("request body is not valid UTF-8 (byte offset ", bad, ")"));
  }
  if (const int depth = JsonNestingDepth(body); depth > limits.max_json_depth) {
    return Err(400, absl::StrCat("JSON nested ", depth, " levels deep; at most ", limits.max_json_depth,
                                 " are accepted"));
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Err(400, "malformed JSON: the body does not parse as JSON");
  if (!j.is_object()) return Err(400, "the JSON body must be an object");
  return j;
}

const char* TypeName(const json& j) { return j.type_name(); }

// `input` / `inputs`: a string, an array of strings, an array of token ids, or an
// array of arrays of token ids.
std::variant<std::vector<EmbedInput>, ApiError> ParseInputs(const json& body, const char* field,
                                                            const ApiLimits& limits) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return Err(400, absl::StrCat("missing required field `", field, "`"));
  const json& v = *it;
  std::vector<EmbedInput> out;
  auto add_text = [&](const json& s, std::size_t i) -> std::optional<ApiError> {
    if (s.get_ref<const std::string&>().empty()) {
      return Err(422, absl::StrCat("`", field, "`[", i, "] is an empty string"));
    }
    out.push_back(EmbedInput{.text = s.get<std::string>()});
    return std::nullopt;
  };
  auto add_ids = [&](const json& arr, std::size_t i) -> std::optional<ApiError> {
    if (arr.empty()) return Err(422, absl::StrCat("`", field, "`[", i, "] is an empty array of token ids"));
    EmbedInput in{.is_ids = true};
    in.ids.reserve(arr.size());
    for (std::size_t j = 0; j < arr.size(); ++j) {
      const json& x = arr[j];
      if (!x.is_number_integer()) {
        return Err(400, absl::StrCat("`", field, "`[", i, "] must hold integer token ids, found ", TypeName(x),
                                     " at position ", j));
      }
      if (x.is_number_unsigned() && x.get<std::uint64_t>() > std::uint64_t{INT64_MAX}) {
        return Err(422, absl::StrCat("`", field, "`[", i, "] holds a token id out of range"));
      }
      in.ids.push_back(x.get<std::int64_t>());
    }
    out.push_back(std::move(in));
    return std::nullopt;
  };
  if (v.is_string()) {
    if (auto e = add_text(v, 0)) return *e;
    return out;
  }
  if (!v.is_array()) {
    return Err(400, absl::StrCat("`", field, "` must be a string or an array, found ", TypeName(v)));
  }
  if (v.empty()) return Err(422, absl::StrCat("`", field, "` must not be empty"));
  if (v.front().is_number()) {  // one input given as token ids
    if (auto e = add_ids(v, 0)) return *e;
    return out;
  }
  if (v.size() > limits.max_client_batch_size) {
    return Err(413, absl::StrCat("`", field, "` holds ", v.size(), " inputs; at most ",
                                 limits.max_client_batch_size, " are accepted (max_client_batch_size)"));
  }
  const bool texts = v.front().is_string();
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    if (texts && e.is_string()) {
      if (auto err = add_text(e, i)) return *err;
    } else if (!texts && e.is_array()) {
      if (auto err = add_ids(e, i)) return *err;
    } else {
      return Err(400, absl::StrCat("`", field, "`[", i, "] must be ", texts ? "a string" : "an array of token ids",
                                   " like the first element, found ", TypeName(e)));
    }
  }
  return out;
}

// Optional typed fields: a wrong type is 400; absent or null leaves `out` as is.
std::optional<ApiError> GetBool(const json& body, const char* field, std::optional<bool>& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return Err(400, absl::StrCat("`", field, "` must be a boolean, found ", TypeName(*it)));
  out = it->get<bool>();
  return std::nullopt;
}
std::optional<ApiError> GetString(const json& body, const char* field, std::string& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return Err(400, absl::StrCat("`", field, "` must be a string, found ", TypeName(*it)));
  out = it->get<std::string>();
  return std::nullopt;
}
std::optional<ApiError> GetDimensions(const json& body, int& out) {
  auto it = body.find("dimensions");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) {
    return Err(400, absl::StrCat("`dimensions` must be an integer, found ", TypeName(*it)));
  }
  const std::int64_t d = it->get<std::int64_t>();
  if (d < 1 || d > (1 << 20)) return Err(422, absl::StrCat("`dimensions` must be >= 1, got ", d));
  out = static_cast<int>(d);
  return std::nullopt;
}

// vLLM's `priority`: an integer, lower values served first (vLLM's convention);
// the scheduler's levels run the other way, so the level is its negation.
// Bounded so that the negation cannot overflow and levels stay readable.
std::optional<ApiError> GetPriority(const json& body, int& level) {
  auto it = body.find("priority");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) {
    return Err(400, absl::StrCat("`priority` must be an integer, found ", TypeName(*it)));
  }
  // Unsigned JSON integers above INT64_MAX must not wrap: clamp them out of range.
  const std::int64_t p = it->is_number_unsigned()
                             ? static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(),
                                                                                 kMaxPriority + 1))
                             : it->get<std::int64_t>();
  if (p < -kMaxPriority || p > kMaxPriority) {
    return Err(422, absl::StrCat("`priority` must be in [-", kMaxPriority, ", ", kMaxPriority, "], got ",
                                 it->dump()));
  }
  level = static_cast<int>(-p);
  return std::nullopt;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::size_t FindInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms
      if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

int JsonNestingDepth(std::string_view s) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

std::string FloatsToBase64(const std::vector<float>& values) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return absl::Base64Escape(bytes);
}

std::variant<OpenAiEmbeddingsRequest, ApiError> ParseOpenAiEmbeddings(std::string_view body,
                                                                      const ApiLimits& limits) {
  auto parsed = ParseBody(body, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const json& j = std::get<json>(parsed);
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
  std::string user;
  if (auto e = GetString(j, "user", user)) return *e;
  if (auto e = GetPriority(j, out.request.priority)) return *e;
  return out;
}

std::variant<EmbedRequest, ApiError> ParseTeiEmbed(std::string_view body, const ApiLimits& limits) {
  auto parsed = ParseBody(body, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const json& j = std::get<json>(parsed);
  EmbedRequest out;
  auto inputs = ParseInputs(j, "inputs", limits);
  if (auto* e = std::get_if<ApiError>(&inputs)) return *e;
  out.inputs = std::get<std::vector<EmbedInput>>(std::move(inputs));
  if (auto e = GetBool(j, "normalize", out.normalize)) return *e;
  if (auto e = GetBool(j, "truncate", out.truncate)) return *e;
  std::string direction = "right";
  if (auto e = GetString(j, "truncation_direction", direction)) return *e;
  direction = absl::AsciiStrToLower(direction);
  if (direction != "right" && direction != "left") {
    return Err(422, absl::StrCat("`truncation_direction` must be \"Right\" or \"Left\", got \"", direction, "\""));
  }
  out.truncation_direction = direction == "left" ? TruncationDirection::kLeft : TruncationDirection::kRight;
  if (auto e = GetDimensions(j, out.dimensions)) return *e;
  std::string prompt_name;
  if (auto e = GetString(j, "prompt_name", prompt_name)) return *e;
  if (!prompt_name.empty()) return Err(422, "`prompt_name` is not supported by this server");
  if (auto e = GetPriority(j, out.priority)) return *e;
  return out;
}

std::variant<TokenizeRequest, ApiError> ParseTokenize(std::string_view body, const ApiLimits& limits) {
  auto parsed = ParseBody(body, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const json& j = std::get<json>(parsed);
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
  return out;
}

namespace {
// Embeddings are written by hand, each value as its shortest round-trip float32
// text (float_text.h): several times faster than building a nlohmann::json of
// doubles (grisu2 on double was a third of the server's CPU time under load),
// and the float32 value printed shortest ("0.4586227", not
// "0.45862269401550293") parses back to the same float32. Non-finite values,
// which JSON cannot hold, are written as null.
void AppendFloats(std::string& out, const std::vector<float>& values) {
  const std::size_t start = out.size();
  out.resize(start + JsonFloatArrayRoom(values.size()));
  char* end = WriteJsonFloatArray(out.data() + start, values);
  out.resize(static_cast<std::size_t>(end - out.data()));
}
}  // namespace

std::string OpenAiEmbeddingsBody(const EmbedResult& result, std::string_view model, bool base64) {
  std::string out = R"({"object":"list","data":[)";
  for (std::size_t i = 0; i < result.embeddings.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", R"({"object":"embedding","index":)", i, R"(,"embedding":)");
    if (base64) absl::StrAppend(&out, "\"", FloatsToBase64(result.embeddings[i]), "\"");
    else AppendFloats(out, result.embeddings[i]);
    out += '}';
  }
  absl::StrAppend(&out, R"(],"model":)", Dump(json(std::string(model))), R"(,"usage":{"prompt_tokens":)",
                  result.tokens, R"(,"total_tokens":)", result.tokens, "}}");
  return out;
}

std::string TeiEmbedBody(const EmbedResult& result) {
  std::string out = "[";
  for (std::size_t i = 0; i < result.embeddings.size(); ++i) {
    if (i) out += ',';
    AppendFloats(out, result.embeddings[i]);
  }
  out += ']';
  return out;
}

std::string TokenizeBody(const std::vector<std::string>& texts, const std::vector<std::vector<TokenInfo>>& tokens) {
  json out = json::array();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    json list = json::array();
    for (const TokenInfo& t : tokens[i]) {
      json tok = {{"id", t.id}, {"special", t.special}, {"start", t.start}, {"stop", t.stop}};
      const bool in_range = t.start <= t.stop && t.stop <= texts[i].size();
      tok["text"] = in_range && !t.special ? texts[i].substr(t.start, t.stop - t.start) : std::string();
      list.push_back(std::move(tok));
    }
    out.push_back(std::move(list));
  }
  return Dump(out);
}

namespace {
const char* TeiErrorType(int status) {
  switch (status) {
    case 413:
    case 422: return "Validation";
    case 429: return "Overloaded";
    case 503: return "Unhealthy";
    case 401: return "Unauthorized";
    case 500: return "Backend";
    default: return "Invalid";
  }
}
const char* OpenAiErrorType(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 429: return "rate_limit_error";
    case 500:
    case 503:
    case 504: return "server_error";
    default: return "invalid_request_error";
  }
}
}  // namespace

std::string ErrorBody(ApiFlavor flavor, const ApiError& error) {
  if (flavor == ApiFlavor::kOpenAi) {
    return Dump(json{{"error",
                      {{"message", error.message},
                       {"type", OpenAiErrorType(error.status)},
                       {"param", nullptr},
                       {"code", nullptr}}}});
  }
  return Dump(json{{"error", error.message}, {"error_type", TeiErrorType(error.status)}});
}

ApiError FromStatus(const absl::Status& status) {
  std::string message(status.message());
  switch (GetErrorKind(status)) {
    case ErrorKind::kNone: return Err(200, "");
    case ErrorKind::kQueueFull: return Err(429, std::move(message));
    case ErrorKind::kOversize: return Err(413, std::move(message));
    case ErrorKind::kInvalidArgument: return Err(422, std::move(message));
    case ErrorKind::kShuttingDown: return Err(503, std::move(message));
    case ErrorKind::kDeadlineExceeded: return Err(504, std::move(message));
    case ErrorKind::kCancelled: return Err(499, std::move(message));
    case ErrorKind::kOutOfMemory:
    case ErrorKind::kBackend:
    case ErrorKind::kUnclassified: break;
  }
  return Err(500, std::move(message));
}

}  // namespace tokenbatch::server
