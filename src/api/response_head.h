// The status line and header block of an HTTP/1.1 response, serialised in one
// string (internal to the server).
//
// Why not Beast's message and serializer: a reply here is a status, a content
// type, up to ten short headers and one body string. Building a
// beast::http::fields (an allocation per field and a case-insensitive tree
// insert) and walking the serializer's buffer sequences were a large share of
// the noop server's CPU per request (docs/benchmarks.md). The head is written
// with the body as one gather write.
//
// Thread-safety: a pure function. Never blocks, never fails.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenbatch::server {

struct ResponseHead {
  int status = 200;
  std::string_view reason;  // e.g. "OK"; empty: none (the status code alone is valid)
  std::string_view content_type;  // empty: no Content-Type header (a reply without a body)
  const std::vector<std::pair<std::string_view, std::string>>* headers = nullptr;  // may be null
  // Bytes of the body; for a reply to HEAD, of the body a GET would get (none
  // follows). Not sent with a 1xx or 204 status, which have no body.
  std::size_t content_length = 0;
  bool keep_alive = true;          // false: "Connection: close"
};

// "HTTP/1.1 <status> <reason>\r\n", then Server, Content-Type (unless empty),
// the extra headers, Content-Length (unless the status is 1xx or 204),
// "Connection: close" unless keep_alive, and the blank line. A header whose name is not an RFC 9110 token, or whose value holds a
// control character (CR, LF, NUL, ...), is left out rather than let a caller-
// supplied value (a client's x-request-id) split the response.
[[nodiscard]] std::string SerializeResponseHead(const ResponseHead& head);

// Whether `name` is a valid header name (RFC 9110 token) and `value` holds no
// control characters other than horizontal tab.
[[nodiscard]] bool IsSafeHeader(std::string_view name, std::string_view value);

}  // namespace tokenbatch::server
