// The API key: checking a request's credential and reading the key from a file.
//
// The comparison takes the same time whatever the credential holds, so that a
// client cannot learn the key a byte at a time from how fast a wrong guess is
// refused (CWE-208). Both sides are hashed with SHA-256 first and the digests
// compared with OpenSSL's CRYPTO_memcmp, so the time does not depend on the
// key's length either.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tokenbatch::server {

// The configured key, kept as its SHA-256 digest from start-up, so that each
// request hashes only its own credential. Immutable after construction:
// thread-safe.
class ApiKey {
 public:
  // `key` empty: no key is configured (empty() is true; Matches is false).
  explicit ApiKey(std::string_view key);
  [[nodiscard]] bool empty() const { return empty_; }
  // BearerMatches(authorization, key) for the key given at construction,
  // with the same timing guarantees. Does not block.
  [[nodiscard]] bool Matches(std::string_view authorization) const;

 private:
  // Declared before hashed_, whose initialiser fills it.
  std::array<unsigned char, 32> digest_{};
  bool empty_;
  bool hashed_;  // false only if OpenSSL failed: then nothing matches
};

// True when `authorization` (the Authorization header's value) is
// "Bearer <key>", the scheme matched case-insensitively (RFC 7235 section 2.1)
// and the credential exactly `key`. The time does not depend on the key, nor
// on how many of its bytes the credential matches (it grows only with the
// credential's own length, which the client knows). Thread-safe; does not block.
[[nodiscard]] bool BearerMatches(std::string_view authorization, std::string_view key);

// Reads an API key from `path` (--api-key-file): the file's whole content, with
// one trailing "\n" or "\r\n" removed (as editors and `echo` write it), so that
// the key shows neither on the command line (ps) nor in the environment. Only
// a regular file of at most 4 KiB is read (not a FIFO or a device, which could
// block or never end).
// Errors: InvalidArgument naming the path and the system's reason when the
// file cannot be read, and naming it when it is not a regular file or is
// larger than 4 KiB; InvalidArgument when the key is empty, or holds a
// control character, a space or a non-ASCII byte (it could not be sent in an
// Authorization header as written: RFC 6750 section 2.1's b64token). Blocks on
// the file read.
[[nodiscard]] absl::StatusOr<std::string> ReadApiKeyFile(const std::string& path);

}  // namespace tokenbatch::server
