// ParsedBody: a JSON request body checked and parsed once, and its typed field
// readers, shared by every route's parser (api_parse.cc).
//
// Parsed with simdjson's DOM parser: with every check here it is several times
// faster than nlohmann::json's parse alone (bench/server/request_parse_bench,
// docs/benchmarks.md). A parser keeps its buffers between documents, so each
// thread reuses one for bodies up to kReusedParserBytes; a larger body gets a
// parser of its own, freed with it, so that one 10 MB request does not pin
// 10 MB per thread.
//
// Errors are ApiErrors whose message names the field and what was wrong, with
// the HTTP status TEI uses for the case (400 malformed, 422 invalid value).
// Thread-safety: a ParsedBody belongs to one thread (its reused parser is that
// thread's).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "api/api.h"

namespace tokenbatch::server::request_body {

using simdjson::dom::element;

// Bodies up to this many bytes are parsed by the thread's reused parser.
inline constexpr std::size_t kReusedParserBytes = 64 * 1024;
// Request objects have at most ten known fields; the duplicate check is
// quadratic, so a body with more fields than this is refused.
inline constexpr std::size_t kMaxFields = 64;

inline ApiError Err(int status, std::string message) { return ApiError{status, std::move(message)}; }

// JSON type names as the error messages give them (nlohmann::json's names).
const char* TypeName(element e);

// A parsed body: the root object, valid while this lives and (for a body parsed
// by the thread's reused parser) until the thread parses another body.
class ParsedBody {
 public:
  // Checks what every body shares (valid UTF-8, nesting depth, one JSON object,
  // no repeated field, at most kMaxFields fields), then parses it. The error
  // names the cause: 422 for invalid UTF-8, else 400.
  std::optional<ApiError> Parse(std::string_view body, const ApiLimits& limits);

  // The number `v` as the client wrote it (for error messages): its digits for a
  // number too large for simdjson (see ClampHugeNumbers), else simdjson's text.
  [[nodiscard]] std::string Literal(element v) const {
    std::string text = simdjson::minify(v);
    if (auto it = originals_.find(text); it != originals_.end()) return it->second;
    return text;
  }
  // Whether `v` stands for a number too large for simdjson.
  [[nodiscard]] bool Clamped(element v) const {
    return !originals_.empty() && v.is_number() && originals_.contains(simdjson::minify(v));
  }

  // The value of `field`, or nullopt when absent or null.
  [[nodiscard]] std::optional<element> Find(const char* field) const {
    element v;
    if (root_[field].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
    return v;
  }

 private:
  std::optional<simdjson::dom::parser> own_;
  simdjson::dom::object root_;
  std::map<std::string, std::string, std::less<>> originals_;  // see ClampHugeNumbers
};

// Optional typed fields: a wrong type is 400; absent or null leaves `out` as is.
std::optional<ApiError> GetBool(const ParsedBody& body, const char* field, std::optional<bool>& out);
std::optional<ApiError> GetString(const ParsedBody& body, const char* field, std::string& out);
// An optional integer field in [lo, hi]: a number with a fraction is 400, an
// integer out of range 422 ("`field` must be in [lo, hi], got v"); absent or
// null leaves `out` as is. A number written with an exponent or ".0" (typed
// DOUBLE by simdjson) is an integer when its value is whole, as JSON does not
// tell them apart (RFC 8259 section 6); integers above INT64_MAX (typed UINT64)
// are out of range.
std::optional<ApiError> GetBoundedInteger(const ParsedBody& body, const char* field, std::int64_t lo, std::int64_t hi,
                                          std::optional<std::int64_t>& out);

// TEI's `truncation_direction`: "Right" or "Left", any case (422 otherwise);
// absent or null leaves `out` as is.
std::optional<ApiError> GetTruncationDirection(const ParsedBody& body, std::optional<TruncationDirection>& out);

// vLLM's `priority`: an integer in [-kMaxPriority, kMaxPriority], lower values
// served first (vLLM's convention); the scheduler's levels run the other way, so
// `level` is its negation. Bounded so that the negation cannot overflow.
std::optional<ApiError> GetPriority(const ParsedBody& body, int& level);

}  // namespace tokenbatch::server::request_body
