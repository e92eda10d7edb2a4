// Request bodies sent compressed: the Content-Encoding header (RFC 9110 section
// 8.4) decoded with zlib (internal to the server).
//
// Codings: "gzip" (and its alias "x-gzip", RFC 9110 section 8.4.1.3; several
// concatenated gzip members are one body, as gunzip reads them), "deflate" (the
// zlib format, RFC 1950; a raw RFC 1951 stream is accepted too, since some
// clients send that under the same name) and "identity". A list ("gzip, deflate")
// names the codings in the order they were applied, so they are undone from the
// last.
//
// The decoded body is bounded by `limit` while it is being inflated: a few
// kilobytes that inflate to gigabytes (a "zip bomb") cost at most `limit` bytes
// of memory before the 413.
//
// Thread-safety: a pure function. Never blocks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "api/api.h"

namespace tokenbatch::server {

// The codings a request body may carry, for the Accept-Encoding header of a 415
// (RFC 9110 section 15.5.16).
inline constexpr std::string_view kAcceptedContentCodings = "gzip, deflate, identity";

// `body` with the codings of `content_encoding` (the header's value; empty: none)
// undone. Errors:
//   415 a coding other than those above, naming it;
//   413 the decoded body is larger than `limit` bytes;
//   400 the body is not valid data of its coding (truncated, corrupt, a wrong
//       checksum, or bytes after the end of the compressed stream).
[[nodiscard]] std::variant<std::string, ApiError> DecodeContentEncoding(std::string_view content_encoding,
                                                                        std::string body, std::size_t limit);

}  // namespace tokenbatch::server
