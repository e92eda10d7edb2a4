// JSON shapes of the OpenAI and TEI embedding APIs (see api.h): response
// bodies, error bodies and status mapping. Request parsing is api_parse.cc.
#include "api/api.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "api/float_text.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;

ApiError Err(int status, std::string message) { return ApiError{status, std::move(message)}; }

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string FloatsToBase64(const std::vector<float>& values) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return absl::Base64Escape(bytes);
}

namespace {
// Embeddings are written by hand, each value as its shortest round-trip float32
// text (float_text.h): faster than building a nlohmann::json of doubles, whose
// formatting dominated the server's CPU time under load, and the float32 value printed shortest ("0.4586227", not
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

std::string SparseEmbedBody(const EmbedResult& result, const SparseEmbedRequest& request) {
  std::string out = "[";
  std::vector<std::size_t> kept;
  char number[kMaxShortestFloatChars];
  for (std::size_t i = 0; i < result.embeddings.size(); ++i) {
    const std::vector<float>& values = result.embeddings[i];
    const std::vector<std::int32_t>& ids = result.indices[i];
    kept.clear();
    for (std::size_t k = 0; k < values.size(); ++k) {
      // A non-finite weight (an overflowing model) has no JSON text: left out.
      if (values[k] > 0 && std::isfinite(values[k]) && (!request.threshold || values[k] >= *request.threshold)) {
        kept.push_back(k);
      }
    }
    if (request.top_k && kept.size() > static_cast<std::size_t>(*request.top_k)) {
      const auto top = kept.begin() + *request.top_k;
      // Positions ascend with the ids, so a tie keeps the lower id.
      std::nth_element(kept.begin(), top - 1, kept.end(), [&](std::size_t a, std::size_t b) {
        return values[a] != values[b] ? values[a] > values[b] : a < b;
      });
      kept.erase(top, kept.end());
      std::sort(kept.begin(), kept.end());
    }
    out += i ? ",[" : "[";
    for (std::size_t n = 0; n < kept.size(); ++n) {
      const char* end = WriteShortestFloat(number, values[kept[n]]);
      absl::StrAppend(&out, n ? "," : "", R"({"index":)", ids[kept[n]], R"(,"value":)",
                      absl::string_view(number, static_cast<std::size_t>(end - number)), "}");
    }
    out += ']';
  }
  out += ']';
  return out;
}

std::string TokenizeBody(const std::vector<std::string>& texts, const std::vector<std::vector<TokenInfo>>& tokens) {
  json out = json::array();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    json list = json::array();
    for (const TokenInfo& t : tokens[i]) {
      // TEI's shape: a special token is named by its vocabulary entry and has no
      // place in the text (null offsets); any other token is its span of the text.
      json tok = {{"id", t.id}, {"special", t.special}};
      if (t.special) {
        tok["start"] = nullptr;
        tok["stop"] = nullptr;
        tok["text"] = t.token;
      } else {
        tok["start"] = t.start;
        tok["stop"] = t.stop;
        const bool in_range = t.start <= t.stop && t.stop <= texts[i].size();
        tok["text"] = in_range ? texts[i].substr(t.start, t.stop - t.start) : std::string();
      }
      list.push_back(std::move(tok));
    }
    out.push_back(std::move(list));
  }
  return Dump(out);
}

std::string DecodeBody(const std::vector<std::string>& texts) { return Dump(json(texts)); }

std::string DetokenizeBody(const std::string& text) { return Dump(json{{"prompt", text}}); }

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
