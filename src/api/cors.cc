// CorsPolicy (see cors.h).
#include "api/cors.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/response_head.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

// How long a browser may reuse a preflight's answer, in seconds (browsers cap
// it: Chromium at two hours).
constexpr std::string_view kPreflightMaxAgeSeconds = "600";

// Whether `origin` (lower-cased) is a serialized origin: a scheme, "://", and a
// host with an optional port, nothing after.
bool IsSerializedOrigin(std::string_view origin) {
  const std::size_t sep = origin.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  const std::string_view scheme = origin.substr(0, sep);
  if (!absl::ascii_isalpha(static_cast<unsigned char>(scheme[0]))) return false;
  for (const char c : scheme) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return false;
  }
  const std::string_view host = origin.substr(sep + 3);
  if (host.empty()) return false;
  return std::none_of(host.begin(), host.end(), [](char c) {
    return c == '/' || c == '?' || c == '#' || c == '@' || c == ',' || static_cast<unsigned char>(c) <= ' ';
  });
}

// Whether `list` is a non-empty comma-separated list of header names (RFC 9110
// tokens), of a sane length, as Access-Control-Request-Headers holds.
bool IsHeaderNameList(std::string_view list) {
  constexpr std::size_t kMaxLength = 1024;
  if (list.size() > kMaxLength) return false;
  bool any_name = false;
  for (const char c : list) {
    if (c == ',' || c == ' ' || c == '\t') continue;
    if (!IsSafeHeader(std::string_view(&c, 1), "")) return false;  // a token character
    any_name = true;
  }
  return any_name;
}

}  // namespace

absl::StatusOr<CorsPolicy> CorsPolicy::Create(const std::vector<std::string>& origins) {
  CorsPolicy policy;
  for (const std::string& value : origins) {
    std::string origin = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
    if (origin == "*") {
      policy.any_ = true;
      continue;
    }
    // A URL copied from the address bar ends in "/"; the origin a browser sends does not.
    if (origin.ends_with('/') && !origin.ends_with("://")) origin.pop_back();
    if (origin == "null" || !IsSerializedOrigin(origin)) {
      return InvalidArgumentError(absl::StrCat("--cors-allow-origin \"", value,
                                               "\" is not an origin: give scheme://host[:port] (no path), "
                                               "e.g. https://app.example.com or http://localhost:3000, or *"));
    }
    policy.origins_.push_back(std::move(origin));
  }
  if (policy.any_ && !policy.origins_.empty()) {
    return InvalidArgumentError("--cors-allow-origin \"*\" allows every origin: list it alone, not beside others");
  }
  return policy;
}

bool CorsPolicy::Allows(std::string_view origin) const {
  if (origin.empty()) return false;
  if (any_) return true;
  const absl::string_view wanted(origin.data(), origin.size());
  return std::any_of(origins_.begin(), origins_.end(),
                     [&](const std::string& allowed) { return absl::EqualsIgnoreCase(allowed, wanted); });
}

void CorsPolicy::AppendReplyHeaders(std::string_view origin, Headers& out) const {
  if (any_) {
    out.emplace_back("Access-Control-Allow-Origin", "*");
    out.emplace_back("Access-Control-Expose-Headers", std::string(kCorsExposedResponseHeaders));
    return;
  }
  if (origins_.empty()) return;
  out.emplace_back("Vary", "Origin");  // the answer names the origin, so it varies with it
  if (!Allows(origin)) return;
  out.emplace_back("Access-Control-Allow-Origin", std::string(origin));
  out.emplace_back("Access-Control-Expose-Headers", std::string(kCorsExposedResponseHeaders));
}

void CorsPolicy::AppendPreflightHeaders(std::string_view origin, std::string_view methods,
                                        std::string_view requested, Headers& out) const {
  if (!Allows(origin)) return;
  out.emplace_back("Access-Control-Allow-Methods", std::string(methods));
  if (IsHeaderNameList(requested)) {
    out.emplace_back("Access-Control-Allow-Headers", std::string(requested));
    out.emplace_back("Vary", "Access-Control-Request-Headers");
  } else {
    out.emplace_back("Access-Control-Allow-Headers", std::string(kCorsAllowedRequestHeaders));
  }
  out.emplace_back("Access-Control-Max-Age", std::string(kPreflightMaxAgeSeconds));
}

}  // namespace tokenbatch::server
