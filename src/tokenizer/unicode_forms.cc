// Normalization forms with alignments; see unicode_forms.h. The characters
// come from utf8proc (UAX #15 over its tables); only the alignment bookkeeping
// is ours, and the result is checked against utf8proc's own normal form.
#include "tokenizer/unicode_forms.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/transform.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// Appends the full (canonical, or compatibility when `compat`) decomposition of `c`.
void Decompose(char32_t c, bool compat, std::vector<char32_t>& out) {
  std::array<utf8proc_int32_t, 32> buf{};
  int boundclass = 0;
  const auto options = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf.data(),
                                                     static_cast<utf8proc_ssize_t>(buf.size()), options, &boundclass);
  if (n <= 0 || n > static_cast<utf8proc_ssize_t>(buf.size())) {
    out.push_back(c);
    return;
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) out.push_back(static_cast<char32_t>(buf[k]));
}

int CombiningClass(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

// The primary composite of `a` and `b`, or 0 when they do not compose (NFC of
// the pair is not one character).
char32_t ComposePair(char32_t a, char32_t b) {
  std::string pair;
  AppendUtf8(a, pair);
  AppendUtf8(b, pair);
  const std::string composed = NormalizeUnicode(pair, /*compat=*/false);
  int len = 0;
  const char32_t c = DecodeUtf8(composed, 0, len);
  return static_cast<size_t>(len) == composed.size() ? c : 0;
}

// Canonical composition (UAX #15) of decomposed pairs: a character joins the
// last starter unless blocked; the composite stands for both characters'
// input (its change adds theirs, less the character it absorbed).
std::vector<CharChange> Compose(const std::vector<CharChange>& in) {
  std::vector<CharChange> out;
  out.reserve(in.size());
  size_t starter = SIZE_MAX;
  for (const CharChange& p : in) {
    const int ccc = CombiningClass(p.c);
    // Nothing below U+0300 is the second character of a canonical composition.
    if (starter != SIZE_MAX && p.c >= 0x300) {
      const bool adjacent = out.size() == starter + 1;
      const int last = adjacent ? 0 : CombiningClass(out.back().c);
      if (adjacent || (last != 0 && last < ccc)) {
        if (const char32_t composite = ComposePair(out[starter].c, p.c); composite != 0) {
          out[starter].c = composite;
          out[starter].change += p.change - 1;
          continue;
        }
      }
    }
    if (ccc == 0) starter = out.size();
    out.push_back(p);
  }
  return out;
}

}  // namespace

void ApplyUnicodeForm(NormalizedText& io, bool align, bool compat, bool decompose) {
  std::string whole = decompose ? DecomposeUnicode(io.text, compat) : NormalizeUnicode(io.text, compat);
  if (whole == io.text) return;
  if (!align) {
    io.text = std::move(whole);
    io.identity = false;
    return;
  }
  std::vector<CharChange> pairs;
  std::vector<char32_t> one;
  int len = 0;
  for (size_t i = 0; i < io.text.size(); i += static_cast<size_t>(len)) {
    one.clear();
    Decompose(DecodeUtf8(io.text, i, len), compat, one);
    for (size_t k = 0; k < one.size(); ++k) pairs.push_back({one[k], k == 0 ? 0 : 1});
  }
  // Canonical ordering: each run of marks sorted by combining class, each
  // character keeping its change.
  for (size_t i = 0; i < pairs.size();) {
    if (CombiningClass(pairs[i].c) == 0) { ++i; continue; }
    size_t j = i;
    while (j < pairs.size() && CombiningClass(pairs[j].c) != 0) ++j;
    std::stable_sort(pairs.begin() + static_cast<std::ptrdiff_t>(i), pairs.begin() + static_cast<std::ptrdiff_t>(j),
                     [](const CharChange& a, const CharChange& b) { return CombiningClass(a.c) < CombiningClass(b.c); });
    i = j;
  }
  if (!decompose) pairs = Compose(pairs);
  std::string check;
  for (const CharChange& p : pairs) AppendUtf8(p.c, check);
  if (check != whole) {  // not expected: keep utf8proc's text, each character aligned to the whole input
    EnsureAlignment(io);
    const uint32_t b = io.begin.empty() ? io.base : io.begin.front();
    const uint32_t e = io.end.empty() ? io.base : io.end.back();
    io.text = std::move(whole);
    io.begin.assign(io.text.size(), b);
    io.end.assign(io.text.size(), e);
    return;
  }
  ApplyChanges(io, pairs, 0, /*align=*/true);
}

}  // namespace tokenbatch::tokenizer::internal
