// SentencePiece's precompiled charsmap; see precompiled.h.
#include "tokenizer/precompiled.h"

#include <cstring>
#include <utility>

#include <utf8proc.h>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenizer/transform.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// darts-clone's unit layout (darts.h, DoubleArrayUnit).
bool HasLeaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t Value(uint32_t unit) { return unit & 0x7FFFFFFFu; }
uint32_t Label(uint32_t unit) { return unit & 0x800000FFu; }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

// Keys are at most one grapheme of under 6 bytes or one character: a deeper
// walk never happens at run time, so validation stops there too.
constexpr int kMaxKeyBytes = 6;

}  // namespace

absl::StatusOr<PrecompiledCharsmap> PrecompiledCharsmap::Parse(std::string_view bytes) {
  PrecompiledCharsmap map;
  if (!bytes.empty()) {
    if (bytes.size() < 4) return InvalidArgumentError("precompiled_charsmap is shorter than its 4-byte size field");
    uint32_t trie_bytes = 0;
    for (int k = 3; k >= 0; --k) trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(k)]);
    if (trie_bytes % 4 != 0 || trie_bytes > bytes.size() - 4) {
      return InvalidArgumentError(absl::StrCat("precompiled_charsmap trie size ", trie_bytes, " does not fit its ",
                                               bytes.size(), " bytes"));
    }
    map.units_.resize(trie_bytes / 4);
    for (size_t i = 0; i < map.units_.size(); ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + 4 + 4 * i);
      map.units_[i] = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                      (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
    }
    map.blob_ = std::string(bytes.substr(4 + trie_bytes));
    if (!ValidateUtf8(map.blob_).ok()) return InvalidArgumentError("precompiled_charsmap replacements are not valid UTF-8");
  }
  if (!map.units_.empty()) {
    // Walk every node reachable within kMaxKeyBytes labels and check each index.
    struct Item { uint32_t pos; int depth; };
    std::vector<Item> stack{{Offset(map.units_[0]), 0}};
    size_t visits = 0;
    const size_t n = map.units_.size();
    while (!stack.empty()) {
      const Item it = stack.back();
      stack.pop_back();
      if (++visits > 64 * n + 1024) {
        return InvalidArgumentError("precompiled_charsmap trie reaches more nodes than it has units (a cycle)");
      }
      for (uint32_t label = 1; label < 256; ++label) {
        const uint32_t child = it.pos ^ label;
        if (child >= n || Label(map.units_[child]) != label) continue;
        const uint32_t next = child ^ Offset(map.units_[child]);
        if (next >= n) return InvalidArgumentError(absl::StrCat("precompiled_charsmap trie unit ", child, " points outside the trie"));
        if (HasLeaf(map.units_[child]) && Value(map.units_[next]) >= map.blob_.size()) {
          return InvalidArgumentError(absl::StrCat("precompiled_charsmap value at unit ", next, " is outside the replacements"));
        }
        if (it.depth + 1 < kMaxKeyBytes) stack.push_back({next, it.depth + 1});
      }
    }
  }
  for (int c = 1; c < 128; ++c) {
    const char ch = static_cast<char>(c);
    if (const auto r = map.Transform(std::string_view(&ch, 1))) {
      map.ascii_[c] = {true, static_cast<uint32_t>(r->data() - map.blob_.data()), static_cast<uint32_t>(r->size())};
    }
  }
  return map;
}

std::optional<std::string_view> PrecompiledCharsmap::Transform(std::string_view chunk) const {
  if (units_.empty()) return std::nullopt;
  const size_t n = units_.size();
  uint32_t pos = Offset(units_[0]);
  for (size_t k = 0; k < chunk.size() && k < static_cast<size_t>(kMaxKeyBytes); ++k) {
    const auto c = static_cast<unsigned char>(chunk[k]);
    if (c == 0) break;
    pos ^= c;
    if (pos >= n || Label(units_[pos]) != c) return std::nullopt;
    const uint32_t unit = units_[pos];
    pos ^= Offset(unit);
    if (pos >= n) return std::nullopt;
    if (HasLeaf(unit)) {
      const uint32_t v = Value(units_[pos]);
      if (v >= blob_.size()) return std::nullopt;
      const char* s = blob_.data() + v;
      return std::string_view(s, strnlen(s, blob_.size() - v));
    }
  }
  return std::nullopt;
}

void PrecompiledCharsmap::Apply(NormalizedText& io, bool align) const {
  const std::string& s = io.text;
  std::vector<CharChange> changes;
  bool modified = false;
  // Hugging Face's `replace`: the new characters replace the old ones in order;
  // extra new characters are insertions, and missing ones make the last
  // character so far remove the rest.
  const auto replace = [&](std::string_view old_part, std::string_view new_part) {
    modified = true;
    const auto count = [](std::string_view t) {
      int n = 0;
      for (const char c : t) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      return n;
    };
    const int diff = count(new_part) - count(old_part);
    const size_t first = changes.size();
    int len = 0;
    for (size_t i = 0; i < new_part.size(); i += static_cast<size_t>(len)) {
      changes.push_back({DecodeUtf8(new_part, i, len), 0});
    }
    if (diff > 0) {
      for (size_t k = changes.size() - static_cast<size_t>(diff); k < changes.size(); ++k) {
        if (k >= first) changes[k].change = 1;
      }
    } else if (diff < 0 && !changes.empty()) {
      changes.back().change += diff;
    }
  };
  int len = 0;
  utf8proc_int32_t state = 0;
  size_t g = 0;  // start of the current grapheme
  while (g < s.size()) {
    // Find the end of the grapheme starting at g.
    char32_t c = DecodeUtf8(s, g, len);
    size_t e = g + static_cast<size_t>(len);
    if (c < 0x80 && (e == s.size() || (static_cast<unsigned char>(s[e]) < 0x80 && !(c == '\r' && s[e] == '\n')))) {
      if (const Replacement& r = ascii_[c]; r.present) {
        replace(std::string_view(s).substr(g, 1), std::string_view(blob_).substr(r.offset, r.size));
      } else {
        changes.push_back({c, 0});
      }
      g = e;
      continue;
    }
    state = 0;
    char32_t prev = c;
    while (e < s.size()) {
      const char32_t next = DecodeUtf8(s, e, len);
      if (utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(prev), static_cast<utf8proc_int32_t>(next), &state)) break;
      prev = next;
      e += static_cast<size_t>(len);
    }
    const std::string_view grapheme = std::string_view(s).substr(g, e - g);
    if (grapheme.size() < 6) {
      if (auto norm = Transform(grapheme)) {
        replace(grapheme, *norm);
        g = e;
        continue;
      }
    }
    for (size_t i = 0; i < grapheme.size(); i += static_cast<size_t>(len)) {
      const char32_t ch = DecodeUtf8(grapheme, i, len);
      const std::string_view part = grapheme.substr(i, static_cast<size_t>(len));
      if (auto norm = Transform(part)) {
        replace(part, *norm);
      } else {
        changes.push_back({ch, 0});
      }
    }
    g = e;
  }
  if (modified) ApplyChanges(io, changes, 0, align);
}

}  // namespace tokenbatch::tokenizer::internal
