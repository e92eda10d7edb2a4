// Per-character normalizers; see char_normalizers.h.
#include "tokenizer/char_normalizers.h"

#include <string>
#include <utility>

#include "tokenizer/transform.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// Rewrites io character by character: `rewrite(c, out)` appends the replacement
// of c (nothing to remove it); every appended byte takes c's original range.
template <typename Rewrite>
void RewriteChars(NormalizedText& io, bool align, Rewrite&& rewrite) {
  if (io.text.empty()) return;
  if (align) EnsureAlignment(io);
  NormalizedText out;
  out.identity = false;
  out.base = io.base;
  out.text.reserve(io.text.size());
  const std::string& in = io.text;
  int len = 0;
  for (size_t i = 0; i < in.size(); i += static_cast<size_t>(len)) {
    const char32_t c = DecodeUtf8(in, i, len);
    rewrite(c, std::string_view(in).substr(i, static_cast<size_t>(len)), out.text);
    if (align) {
      out.begin.resize(out.text.size(), io.begin[i]);
      out.end.resize(out.text.size(), io.end[i + static_cast<size_t>(len) - 1]);
    }
  }
  if (!align && out.text == io.text) return;
  io = std::move(out);
}

bool NmtRemoves(char32_t c) {
  return (c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F;
}

bool NmtSpace(char32_t c) {
  return c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
         c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
}

}  // namespace

void StripAccents(NormalizedText& io, bool align) {
  RewriteChars(io, align, [](char32_t c, std::string_view bytes, std::string& out) {
    if (!IsMark(c)) out.append(bytes);
  });
}

void StripNonspacingMarks(NormalizedText& io, bool align, bool lowercase) {
  RewriteChars(io, align, [lowercase](char32_t c, std::string_view bytes, std::string& out) {
    if (IsNonspacingMark(c)) return;
    if (lowercase) {
      AppendLowercase(c, out);
    } else {
      out.append(bytes);
    }
  });
}

void NmtNormalize(NormalizedText& io, bool align) {
  RewriteChars(io, align, [](char32_t c, std::string_view bytes, std::string& out) {
    if (NmtRemoves(c)) return;
    if (NmtSpace(c)) {
      out.push_back(' ');
    } else {
      out.append(bytes);
    }
  });
}

void ByteLevelNormalize(NormalizedText& io, bool align) {
  RewriteChars(io, align, [](char32_t, std::string_view bytes, std::string& out) {
    for (const char b : bytes) AppendUtf8(ByteToUnicode(static_cast<uint8_t>(b)), out);
  });
}

}  // namespace tokenbatch::tokenizer::internal
