#include "server/response_head.h"

#include "absl/strings/str_cat.h"

namespace tokenbatch::server {
namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

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
    if (!IsTokenChar(c)) return false;
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

std::string SerializeResponseHead(const ResponseHead& head) {
  std::string out;
  out.reserve(256);
  absl::StrAppend(&out, "HTTP/1.1 ", head.status, " ");
  out.append(head.reason.data(), head.reason.size());
  out += "\r\n";
  AppendHeader(out, "Server", "tokenbatch");
  AppendHeader(out, "Content-Type", head.content_type);
  if (head.headers != nullptr) {
    for (const auto& [name, value] : *head.headers) {
      if (IsSafeHeader(name, value)) AppendHeader(out, name, value);
    }
  }
  absl::StrAppend(&out, "Content-Length: ", head.content_length, "\r\n");
  if (!head.keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

}  // namespace tokenbatch::server
