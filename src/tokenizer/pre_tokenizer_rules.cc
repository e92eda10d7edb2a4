// Shared splitting rules; see pre_tokenizer_rules.h.
#include "tokenizer/pre_tokenizer_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>

#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// Inclusive code point range [first, last] of one script class.
struct ScriptRange {
  char32_t first;
  char32_t last;
  uint8_t script;
};

// The reference's script table is its own (an old Unicode version that no
// library here carries), so it was measured from the reference wheel by
// probing its UnicodeScripts (scripts/tokenizer/gen_script_table.py), and
// python/tests/test_tokenizer_differential.py checks it over every code point.
#include "tokenizer/unicode_scripts.inc"
static_assert(kScriptClassCount <= 256, "script classes must fit ScriptRange::script");

}  // namespace

std::optional<SplitBehavior> ParseSplitBehavior(std::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return std::nullopt;
}

void EmitWordPart(const Word& w, size_t b, size_t e, std::vector<Word>& out) {
  if (e <= b) return;
  if (!w.prefix_space) {
    out.push_back({w.begin + static_cast<uint32_t>(b), w.begin + static_cast<uint32_t>(e), false});
    return;
  }
  const bool prefix = b == 0;
  const size_t rb = b == 0 ? 0 : b - 1;
  out.push_back({w.begin + static_cast<uint32_t>(rb), w.begin + static_cast<uint32_t>(e - 1), prefix});
}

void SplitAtMatches(const Word& w, size_t size, const std::vector<std::pair<size_t, size_t>>& matches,
                    SplitBehavior behavior, bool invert, std::vector<Word>& out) {
  size_t pending_begin = 0;  // kMergedWith* / kContiguous: start of the open segment
  bool pending = false;
  bool pending_is_delim = false;
  const auto segment = [&](size_t b, size_t e, bool is_delim) {
    if (e <= b) return;
    switch (behavior) {
      case SplitBehavior::kRemoved:
        if (!is_delim) EmitWordPart(w, b, e, out);
        break;
      case SplitBehavior::kIsolated:
        EmitWordPart(w, b, e, out);
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (is_delim && pending) {
          EmitWordPart(w, pending_begin, e, out);
          pending = false;
        } else {
          if (pending) EmitWordPart(w, pending_begin, b, out);
          pending_begin = b;
          pending = true;
          if (is_delim) {
            EmitWordPart(w, b, e, out);
            pending = false;
          }
        }
        break;
      case SplitBehavior::kMergedWithNext:
        if (is_delim) {
          if (pending) EmitWordPart(w, pending_begin, b, out);
          pending_begin = b;
          pending = true;
        } else {
          EmitWordPart(w, pending ? pending_begin : b, e, out);
          pending = false;
        }
        break;
      case SplitBehavior::kContiguous:
        if (pending && pending_is_delim == is_delim) break;  // extend the open run
        if (pending) EmitWordPart(w, pending_begin, b, out);
        pending_begin = b;
        pending = true;
        pending_is_delim = is_delim;
        break;
    }
  };
  size_t pos = 0;
  for (const auto& [mb, me] : matches) {
    segment(pos, mb, invert);
    segment(mb, me, !invert);
    pos = me;
  }
  segment(pos, size, invert);
  if (pending) EmitWordPart(w, pending_begin, size, out);
}

void FindCharMatches(std::string_view s, CharClass cls, char32_t delimiter,
                     std::vector<std::pair<size_t, size_t>>& matches) {
  matches.clear();
  int len = 0;
  for (size_t i = 0; i < s.size(); i += static_cast<size_t>(len)) {
    const char32_t c = DecodeUtf8(s, i, len);
    bool hit = false;
    switch (cls) {
      case CharClass::kPunctuation: hit = (c < 0x80 && std::ispunct(static_cast<int>(c))) || IsPunctuation(c); break;
      case CharClass::kNumeric: hit = IsNumeric(c); break;
      case CharClass::kDelimiter: hit = c == delimiter; break;
    }
    if (hit) matches.emplace_back(i, i + static_cast<size_t>(len));
  }
}

void SplitFixedLength(const Word& w, std::string_view s, size_t length, std::vector<Word>& out) {
  size_t start = 0;
  size_t chars = 0;
  int len = 0;
  for (size_t i = 0; i < s.size(); i += static_cast<size_t>(len)) {
    DecodeUtf8(s, i, len);
    if (chars == length) {
      EmitWordPart(w, start, i, out);
      start = i;
      chars = 0;
    }
    ++chars;
  }
  EmitWordPart(w, start, s.size(), out);
}

int UnicodeScriptClass(char32_t c) {
  const auto* next = std::upper_bound(std::begin(kScriptRanges), std::end(kScriptRanges), c,
                                      [](char32_t v, const ScriptRange& r) { return v < r.first; });
  if (next == std::begin(kScriptRanges)) return 0;
  const ScriptRange& r = *std::prev(next);
  return c <= r.last ? r.script : 0;
}

void SplitUnicodeScripts(const Word& w, std::string_view s, std::vector<Word>& out) {
  int last = 0;  // the last class other than Any; 0 before the first
  size_t start = 0;
  int len = 0;
  for (size_t i = 0; i < s.size(); i += static_cast<size_t>(len)) {
    const int script = UnicodeScriptClass(DecodeUtf8(s, i, len));
    if (script == 0 || script == last) continue;
    if (last != 0) EmitWordPart(w, start, i, out);
    start = i;
    last = script;
  }
  if (last != 0) EmitWordPart(w, start, s.size(), out);
}

}  // namespace tokenbatch::tokenizer::internal
