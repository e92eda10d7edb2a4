#include "api/response_head.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace tokenbatch::server {
namespace {

// RFC 9110 token characters, one table lookup a byte.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> table{};
  for (int c = 'a'; c <= 'z'; ++c) table[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) table[c] = true;
  for (int c = '0'; c <= '9'; ++c) table[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) table[static_cast<unsigned char>(c)] = true;
  return table;
}();

void AppendHeader(std::string& out, std::string_view name, std::string_view value) {
  out.append(name.data(), name.size());
  out += ": ";
  out.append(value.data(), value.size());
  out += "\r\n";
}

}  // namespace

bool IsSafeHeader(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

std::string SerializeResponseHead(const ResponseHead& head) {
  // Sized up front: a reply's head with TEI's nine headers is ~330 bytes, and
  // growing the string midway copied it.
  std::size_t size = 128 + head.reason.size() + head.content_type.size();
  if (head.headers != nullptr) {
    for (const auto& [name, value] : *head.headers) size += name.size() + value.size() + 4;
  }
  std::string out;
  out.reserve(size);
  absl::StrAppend(&out, "HTTP/1.1 ", head.status, " ");
  out.append(head.reason.data(), head.reason.size());
  out += "\r\n";
  AppendHeader(out, "Server", "tokenbatch");
  if (!head.content_type.empty()) AppendHeader(out, "Content-Type", head.content_type);
  if (head.headers != nullptr) {
    for (const auto& [name, value] : *head.headers) {
      if (IsSafeHeader(name, value)) AppendHeader(out, name, value);
    }
  }
  // A 1xx or 204 reply has no body and no Content-Length (RFC 9110 section 8.6).
  if (head.status >= 200 && head.status != 204) absl::StrAppend(&out, "Content-Length: ", head.content_length, "\r\n");
  if (!head.keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

}  // namespace tokenbatch::server
