// The API key check and key file (see api_key.h).
#include "api/api_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tokenbatch::server {
namespace {

using Digest = std::array<unsigned char, 32>;

// SHA-256 of `text` into `out`; false if OpenSSL fails, which the caller
// treats as a mismatch.
bool Sha256(std::string_view text, Digest& out) {
  unsigned int size = 0;
  return EVP_Digest(text.data(), text.size(), out.data(), &size, EVP_sha256(), nullptr) == 1 && size == out.size();
}

}  // namespace

ApiKey::ApiKey(std::string_view key) : empty_(key.empty()), hashed_(Sha256(key, digest_)) {}

bool ApiKey::Matches(std::string_view authorization) const {
  constexpr std::string_view kScheme = "bearer ";
  // The scheme is public; only the credential after it is compared in constant time.
  bool scheme_ok = authorization.size() >= kScheme.size();
  for (std::size_t i = 0; scheme_ok && i < kScheme.size(); ++i) {
    scheme_ok = std::tolower(static_cast<unsigned char>(authorization[i])) == kScheme[i];
  }
  const std::string_view credential = scheme_ok ? authorization.substr(kScheme.size()) : std::string_view();
  Digest sent{};
  const bool hashed = Sha256(credential, sent) && hashed_;
  const bool same = CRYPTO_memcmp(sent.data(), digest_.data(), sent.size()) == 0;
  return !empty_ && scheme_ok && hashed && same;
}

bool BearerMatches(std::string_view authorization, std::string_view key) { return ApiKey(key).Matches(authorization); }

absl::StatusOr<std::string> ReadApiKeyFile(const std::string& path) {
  constexpr std::uintmax_t kMaxBytes = 4096;
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(absl::StrCat("the API key file ", path, " is not a regular file"));
  }
  if (const std::uintmax_t size = std::filesystem::file_size(path, ec); !ec && size > kMaxBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the API key file ", path, " holds ", size, " bytes; a key is one line of at most ", kMaxBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("cannot read the API key file ", path, ": ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  std::string key = std::move(text).str();
  if (key.ends_with("\r\n")) {
    key.resize(key.size() - 2);
  } else if (key.ends_with('\n')) {
    key.pop_back();
  }
  if (key.empty()) return absl::InvalidArgumentError(absl::StrCat("the API key file ", path, " is empty"));
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat("the API key file ", path,
                       " holds a space, a control character or a non-ASCII byte (a key is one line of visible ASCII)"));
    }
  }
  return key;
}

}  // namespace tokenbatch::server
