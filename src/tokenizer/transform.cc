// Alignment-preserving rewrites; see transform.h.
#include "tokenizer/transform.h"

#include <utility>

#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {

void EnsureAlignment(NormalizedText& io) {
  if (!io.identity) return;
  const std::string& piece = io.text;
  io.begin.resize(piece.size());
  io.end.resize(piece.size());
  int len = 0;
  for (size_t i = 0; i < piece.size(); i += static_cast<size_t>(len)) {
    DecodeUtf8(piece, i, len);
    for (int k = 0; k < len; ++k) {
      io.begin[i + k] = io.base + static_cast<uint32_t>(i);
      io.end[i + k] = io.base + static_cast<uint32_t>(i + len);
    }
  }
  io.identity = false;
}

void ApplyChanges(NormalizedText& io, const std::vector<CharChange>& changes, size_t initial_removed, bool align) {
  if (align) EnsureAlignment(io);
  const std::string& in = io.text;
  NormalizedText out;
  out.identity = false;
  out.base = io.base;
  out.text.reserve(in.size());
  size_t offset = 0;  // byte of `in` where the next consumed character starts
  const auto skip_char = [&] {
    if (offset >= in.size()) return;
    int len = 0;
    DecodeUtf8(in, offset, len);
    offset += static_cast<size_t>(len);
  };
  for (size_t k = 0; k < initial_removed; ++k) skip_char();
  for (const CharChange& ch : changes) {
    AppendUtf8(ch.c, out.text);
    if (align) {
      uint32_t b = io.base, e = io.base;
      if (ch.change > 0) {
        if (offset > 0) {
          b = io.begin[offset - 1];
          e = io.end[offset - 1];
        }
      } else if (offset < in.size()) {
        b = io.begin[offset];
        e = io.end[offset];
      } else if (!in.empty()) {  // more characters replaced than there are: keep the last
        b = io.begin[in.size() - 1];
        e = io.end[in.size() - 1];
      }
      out.begin.resize(out.text.size(), b);
      out.end.resize(out.text.size(), e);
    }
    if (ch.change <= 0) skip_char();
    for (int k = 0; k < -ch.change; ++k) skip_char();
  }
  io = std::move(out);
}

void ReplaceRanges(NormalizedText& io, const std::vector<std::pair<size_t, size_t>>& matches,
                   std::string_view content, bool align) {
  if (matches.empty()) return;
  if (align) EnsureAlignment(io);
  NormalizedText out;
  out.identity = false;
  out.base = io.base;
  out.text.reserve(io.text.size() + matches.size() * content.size());
  size_t last = 0;
  for (const auto& [mb, me] : matches) {
    out.text.append(io.text, last, mb - last);
    if (align) {
      out.begin.insert(out.begin.end(), io.begin.begin() + static_cast<std::ptrdiff_t>(last),
                       io.begin.begin() + static_cast<std::ptrdiff_t>(mb));
      out.end.insert(out.end.end(), io.end.begin() + static_cast<std::ptrdiff_t>(last),
                     io.end.begin() + static_cast<std::ptrdiff_t>(mb));
    }
    out.text.append(content);
    if (align) {  // the byte before the match's end; (base, base) for an empty match at 0
      out.begin.resize(out.text.size(), me > 0 ? io.begin[me - 1] : io.base);
      out.end.resize(out.text.size(), me > 0 ? io.end[me - 1] : io.base);
    }
    last = me;
  }
  out.text.append(io.text, last, std::string::npos);
  if (align) {
    out.begin.insert(out.begin.end(), io.begin.begin() + static_cast<std::ptrdiff_t>(last), io.begin.end());
    out.end.insert(out.end.end(), io.end.begin() + static_cast<std::ptrdiff_t>(last), io.end.end());
  }
  io = std::move(out);
}

void PrependText(NormalizedText& io, std::string_view prefix, bool align) {
  if (io.text.empty() || prefix.empty()) return;
  if (align) {
    EnsureAlignment(io);
    io.begin.insert(io.begin.begin(), prefix.size(), io.begin[0]);
    io.end.insert(io.end.begin(), prefix.size(), io.end[0]);
  }
  io.text.insert(0, prefix);
  io.identity = false;
}

void StripWhitespace(NormalizedText& io, bool left, bool right, bool align) {
  const std::string& s = io.text;
  size_t b = 0, e = s.size();
  int len = 0;
  while (left && b < e && IsWhitespace(DecodeUtf8(s, b, len))) b += static_cast<size_t>(len);
  while (right && e > b) {
    size_t p = e - 1;
    while (p > b && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
    if (!IsWhitespace(DecodeUtf8(s, p, len))) break;
    e = p;
  }
  if (b == 0 && e == s.size()) return;
  if (align) {
    EnsureAlignment(io);
    io.begin.assign(io.begin.begin() + static_cast<std::ptrdiff_t>(b), io.begin.begin() + static_cast<std::ptrdiff_t>(e));
    io.end.assign(io.end.begin() + static_cast<std::ptrdiff_t>(b), io.end.begin() + static_cast<std::ptrdiff_t>(e));
  }
  io.text = io.text.substr(b, e - b);
  io.identity = false;
}

}  // namespace tokenbatch::tokenizer::internal
