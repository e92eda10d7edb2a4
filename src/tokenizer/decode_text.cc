// Text helpers of the decoders; see decode_text.h.
#include "tokenizer/decode_text.h"

#include <utility>

#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// Length of the well-formed prefix of a UTF-8 sequence starting at s[i] (1-4),
// or, when ill-formed, the length of its maximal subpart as a negative number.
int SequenceLength(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  int need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
  else if (b0 == 0xE0) { need = 2; lo = 0xA0; }
  else if (b0 >= 0xE1 && b0 <= 0xEC) need = 2;
  else if (b0 == 0xED) { need = 2; hi = 0x9F; }
  else if (b0 >= 0xEE && b0 <= 0xEF) need = 2;
  else if (b0 == 0xF0) { need = 3; lo = 0x90; }
  else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3;
  else if (b0 == 0xF4) { need = 3; hi = 0x8F; }
  else return -1;
  for (int k = 1; k <= need; ++k) {
    if (i + static_cast<size_t>(k) >= s.size()) return -k;
    const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return -k;
  }
  return need + 1;
}

}  // namespace

// `s` with every non-overlapping occurrence of `from`, scanning left to right,
// replaced by `to`; an empty `from` matches at every character boundary, both
// ends included (Rust's str::replace, which the decoders use).
std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  if (from.empty()) {
    out.append(to);
    int len = 0;
    for (size_t i = 0; i < s.size(); i += static_cast<size_t>(len)) {
      DecodeUtf8(s, i, len);
      out.append(s.substr(i, static_cast<size_t>(len)));
      out.append(to);
    }
    return out;
  }
  size_t last = 0;
  for (size_t pos = s.find(from); pos != std::string_view::npos; pos = s.find(from, last)) {
    out.append(s.substr(last, pos - last));
    out.append(to);
    last = pos + from.size();
  }
  out.append(s.substr(last));
  return out;
}

// WordPiece's cleanup (Hugging Face decoders/wordpiece.rs): spaces before
// punctuation and English contractions, replaced in this order.
std::string WordPieceCleanup(std::string s) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) s = ReplaceAll(s, from, to);
  return s;
}

std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const int n = SequenceLength(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    } else {
      out.append(kReplacementChar);
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

}  // namespace tokenbatch::tokenizer::internal
