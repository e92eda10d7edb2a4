// Cross-origin resource sharing (CORS): which web pages may call the server from a
// browser, and the response headers that tell the browser so (internal to the
// server).
//
// The protocol is the Fetch standard's (https://fetch.spec.whatwg.org/, "CORS
// protocol"): a browser sends a page's origin in the Origin header; a request
// that is not "simple" (a JSON POST is not) is preceded by a preflight, an
// OPTIONS request with Access-Control-Request-Method. The browser lets the page
// read the answer only if Access-Control-Allow-Origin names its origin (or is
// "*").
//
// Nothing is allowed by default (see ServerOptions::cors_allow_origins): a
// server on localhost would otherwise be callable by any page its user visits.
//
// Thread-safety: immutable after construction; all methods are const and may be
// called from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tokenbatch::server {

class CorsPolicy {
 public:
  // Headers a reply carries: names are string literals, as in HttpReply.
  using Headers = std::vector<std::pair<std::string_view, std::string>>;

  // Allows nothing.
  CorsPolicy() = default;

  // `origins`: "*" (any origin) or serialized origins, "scheme://host[:port]"
  // with no path, as browsers send them (https://example.com,
  // http://localhost:3000). Errors: InvalidArgument naming the first value that
  // is neither, and for "*" listed beside other origins.
  [[nodiscard]] static absl::StatusOr<CorsPolicy> Create(const std::vector<std::string>& origins);

  // Whether any origin is allowed at all.
  [[nodiscard]] bool enabled() const { return any_ || !origins_.empty(); }

  // Headers for an actual (non-preflight) reply to a request whose Origin
  // header is `origin` (empty: none): Access-Control-Allow-Origin and
  // Access-Control-Expose-Headers when the origin is allowed (with "*", on every
  // reply, so that a cache never holds a copy without them), and "Vary: Origin"
  // whenever the answer depends on the origin (so caches keep one answer per
  // origin). Appended to `out`.
  void AppendReplyHeaders(std::string_view origin, Headers& out) const;

  // The headers a preflight from `origin` gets on top of AppendReplyHeaders's,
  // for a route that accepts `methods` (e.g. "POST"), when the origin is allowed:
  // Access-Control-Allow-Methods, Access-Control-Allow-Headers and
  // Access-Control-Max-Age. The headers allowed are those the preflight asks
  // for (`requested`, its Access-Control-Request-Headers: an allowed page may
  // send any, e.g. the OpenAI SDK's X-Stainless-* headers) when that is a valid
  // list of header names, else kCorsAllowedRequestHeaders. A preflight from an
  // origin not allowed gets none, and the browser then refuses the request.
  // Appended to `out`.
  void AppendPreflightHeaders(std::string_view origin, std::string_view methods, std::string_view requested,
                              Headers& out) const;

 private:
  [[nodiscard]] bool Allows(std::string_view origin) const;

  bool any_ = false;
  std::vector<std::string> origins_;  // lower-cased
};

// The request headers a preflight that names none is told it may send, in
// Access-Control-Allow-Headers.
inline constexpr std::string_view kCorsAllowedRequestHeaders =
    "Authorization, Content-Type, Content-Encoding, X-Request-Id, X-Request-Timeout-Ms";

// The response headers a cross-origin page may read (beyond the safelisted
// Content-Type and Content-Length), in Access-Control-Expose-Headers: TEI's
// timing and count headers, the request id and Retry-After.
inline constexpr std::string_view kCorsExposedResponseHeaders =
    "x-request-id, x-compute-type, x-compute-tokens, x-compute-characters, x-tokenization-time, x-queue-time, "
    "x-inference-time, x-compute-time, x-total-time, Retry-After";

}  // namespace tokenbatch::server
