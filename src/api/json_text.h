// Checks and rewrites of a JSON request body's raw text, around the JSON parser
// (internal to the server; parsed_body.cc uses them).
//
// Pure functions: thread-safe, never block, never throw.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace tokenbatch::server {

// The byte offset of the first invalid UTF-8 sequence, or npos if valid.
[[nodiscard]] std::size_t FindInvalidUtf8(std::string_view s);

// Deepest [ / { nesting outside strings.
[[nodiscard]] int JsonNestingDepth(std::string_view s);

// JSON sets no limit on numbers (RFC 8259 section 6) but simdjson refuses an
// integer beyond 64 bits or a decimal beyond a double. Such a body is parsed
// again with each of those numbers replaced by a distinct 64-bit integer of the
// same sign, outside every range the API accepts (the largest positive ones,
// typed UINT64, or the most negative), so that the field checks answer 422
// naming the field (parsed_body.h's ParsedBody::Literal gives back the
// client's digits).
struct ClampedBody {
  std::string body;
  std::map<std::string, std::string, std::less<>> originals;  // substitute -> the number as sent
};

// `body` with its huge numbers replaced, as described above; `originals` is
// empty (and `body` a copy) when it has none. Only whole JSON numbers outside
// strings are replaced: a malformed body stays malformed.
[[nodiscard]] ClampedBody ClampHugeNumbers(std::string_view body);

}  // namespace tokenbatch::server
