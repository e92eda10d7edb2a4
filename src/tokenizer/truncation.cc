// Truncation that tokenises only what it keeps, for the `truncate` policy and
// auto_truncate: a 1.5 MB text cut to 256 tokens should cost the 256 tokens,
// not the 1.5 MB.
//
// A long text is encoded in a chunk taken from its kept end (the start for
// TruncationSide::kRight, the end for kLeft), cut at a character boundary.
// The pipeline's decisions are local: a normaliser composes or maps a few
// characters, a pre-tokenizer's pattern looks a character or so ahead and
// restarts after whitespace, and an added token is matched where it is
// written. So a chunk from the end starts at a word that follows whitespace,
// a chunk's cut is measured from before the whitespace run it falls in (an
// added token with lstrip takes such a run whole), and the words of a chunk
// that lie more than a margin from its cut tokenise as in the whole text;
// those within it (a word cut in two, an added token cut in two, a prefix
// space the chunk's start gained) are dropped. When the words beyond the margin hold the tokens
// to keep, they are the whole text's first (or last) tokens; otherwise the
// chunk grows fourfold, up to the whole text. (A cut from the start, which
// keeps the end, is encoded whole where offsets are asked for or the
// pre-tokenizer's splits count from the start: see EncodeTruncated.) The differential test
// (truncation_test.cc) checks the result against Encode followed by the cut,
// over every test tokenizer, both sides and many cut positions.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer {
namespace {

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

size_t CharBoundaryAtOrBefore(std::string_view text, size_t i) {
  while (i > 0 && i < text.size() && IsContinuationByte(text[i])) --i;
  return i;
}

size_t CharBoundaryAtOrAfter(std::string_view text, size_t i) {
  while (i < text.size() && IsContinuationByte(text[i])) ++i;
  return i;
}

// Whether the character starting at text[i] is White_Space.
bool WhitespaceAt(std::string_view text, size_t i) {
  int len = 0;
  return internal::IsWhitespace(internal::DecodeUtf8(text, i, len));
}

// The start of the run of whitespace that ends at `end` (`end` itself when
// text[end - 1] is not whitespace). An added token with lstrip takes a
// whitespace run before it whole, however long, so a run the cut falls in
// may tokenise otherwise in the whole text.
size_t TrailingWhitespaceStart(std::string_view text, size_t end) {
  while (end > 0) {
    const size_t begin = CharBoundaryAtOrBefore(text, end - 1);
    if (!WhitespaceAt(text, begin)) break;
    end = begin;
  }
  return end;
}

// The first character at or after `i` that is not whitespace and follows
// whitespace; text.size() when there is none. A chunk from the end starts
// there: a pre-tokenizer's pattern restarts after whitespace (a run of digits
// is grouped by threes from its first digit, Llama 3's \p{N}{1,3}), and an
// added token with rstrip takes the whitespace before it, not this character.
size_t NextWordStart(std::string_view text, size_t i) {
  i = CharBoundaryAtOrAfter(text, i);
  bool after_space = false;
  while (i < text.size()) {
    const bool space = WhitespaceAt(text, i);
    if (after_space && !space) return i;
    after_space = space;
    i = CharBoundaryAtOrAfter(text, i + 1);
  }
  return text.size();
}

// Tokens [word_ends[w-1], word_ends[w]) of word w.
size_t WordBegin(const Encoding& enc, size_t w) { return w == 0 ? 0 : enc.word_ends[w - 1]; }

// The number of leading tokens of `enc` (a chunk text[0, size)) whose words
// end at or before byte `limit`.
size_t SafeLeadingTokens(const Encoding& enc, uint32_t limit) {
  size_t safe = 0;
  for (size_t w = 0; w < enc.word_ends.size(); ++w) {
    for (size_t t = WordBegin(enc, w); t < enc.word_ends[w]; ++t) {
      if (enc.offsets[t].second > limit) return safe;
    }
    safe = enc.word_ends[w];
  }
  return safe;
}

// The index of the first of the trailing tokens of `enc` whose words begin at
// or after byte `limit`.
size_t FirstSafeTrailingToken(const Encoding& enc, uint32_t limit) {
  size_t first = enc.ids.size();
  for (size_t w = enc.word_ends.size(); w-- > 0;) {
    for (size_t t = WordBegin(enc, w); t < enc.word_ends[w]; ++t) {
      if (enc.offsets[t].first < limit) return first;
    }
    first = WordBegin(enc, w);
  }
  return first;
}

}  // namespace

Encoding Slice(const Encoding& all, size_t b, size_t e, bool with_offsets, uint32_t offset_base) {
  Encoding out;
  out.ids.assign(all.ids.begin() + static_cast<std::ptrdiff_t>(b), all.ids.begin() + static_cast<std::ptrdiff_t>(e));
  if (with_offsets) {
    out.offsets.reserve(e - b);
    for (size_t i = b; i < e; ++i) {
      out.offsets.emplace_back(all.offsets[i].first + offset_base, all.offsets[i].second + offset_base);
    }
  }
  return out;
}

absl::StatusOr<Encoding> Tokenizer::EncodeTruncated(std::string_view text, size_t max_tokens,
                                                    const EncodeOptions& options, TruncationSide side) const {
  const size_t special = NumSpecialTokens(options.add_special_tokens);
  if (max_tokens < special) {
    return InvalidArgumentError(absl::StrCat("max_tokens ", max_tokens, " is below the ", special,
                                             " special tokens the post-processor adds"));
  }
  if (options.with_word_ends) return InvalidArgumentError("EncodeTruncated gives no word ends");
  const size_t keep = max_tokens - special;
  const bool right = side == TruncationSide::kRight;
  std::optional<Encoding> out;
  // The reference's offsets after some normalisers (SentencePiece's
  // Precompiled charsmap) drift by what precedes them, a character or so per
  // span they misalign: a chunk from the start has the whole text's drift, one
  // from the end does not. So a cut from the start with offsets encodes the
  // whole text; its ids never depend on what precedes. Past uint32 offsets,
  // Run refuses the text whole, below.
  // A pre-tokenizer whose splits count from a piece's start (FixedLength,
  // UnicodeScripts) can only be chunked from the start too.
  const bool chunked = right || (!options.with_offsets && !impl_->pre_tokenizer.splits_from_start());
  const TruncationPlan& plan = impl_->truncation_plan;
  if (chunked && text.size() > plan.whole_text_bytes && text.size() < std::numeric_limits<uint32_t>::max()) {
    // The whole text's UTF-8 is checked, as Encode checks it, though most of
    // it is not tokenised.
    if (absl::Status s = internal::ValidateUtf8(text); !s.ok()) return s;
    // An added token is matched where it is written: one cut in two is as long.
    size_t margin = plan.margin_bytes;
    if (plan.widen_for_added_tokens) {
      for (const internal::AddedToken& t : impl_->added.all) {
        margin = std::max(margin, plan.margin_bytes + t.content.size());
      }
    }
    for (size_t chunk = std::max({plan.whole_text_bytes, keep * plan.bytes_per_token + 2 * margin, size_t{1}});
         chunk < text.size(); chunk *= 4) {
      const size_t begin = right ? 0 : NextWordStart(text, text.size() - chunk);
      const size_t end = right ? CharBoundaryAtOrBefore(text, chunk) : text.size();
      if (begin >= end) continue;  // no word starts in the chunk: a larger one
      Encoding piece;
      if (absl::Status s = impl_->Run(text.substr(begin, end - begin), /*with_offsets=*/true, &piece, nullptr,
                                      /*with_word_ends=*/true);
          !s.ok()) {
        return s;
      }
      if (right) {
        const size_t kept_end = TrailingWhitespaceStart(text, end);
        const size_t safe = SafeLeadingTokens(piece, static_cast<uint32_t>(kept_end > margin ? kept_end - margin : 0));
        if (safe >= keep) out = Slice(piece, 0, keep, options.with_offsets);
      } else {
        const size_t first = FirstSafeTrailingToken(piece, static_cast<uint32_t>(margin));
        if (piece.ids.size() - first >= keep) {
          out = Slice(piece, piece.ids.size() - keep, piece.ids.size(), options.with_offsets,
                      static_cast<uint32_t>(begin));
        }
      }
      if (out) break;
    }
  }
  if (!out) {
    Encoding all;
    if (absl::Status s = impl_->Run(text, options.with_offsets, &all, nullptr); !s.ok()) return s;
    const size_t kept = std::min(all.ids.size(), keep);
    out = right ? Slice(all, 0, kept, options.with_offsets)
                : Slice(all, all.ids.size() - kept, all.ids.size(), options.with_offsets);
  }
  if (options.add_special_tokens) {
    impl_->AddSpecialTokens(*out, options.with_offsets);
  } else {
    out->special.assign(out->ids.size(), 0);
  }
  return *std::move(out);
}

}  // namespace tokenbatch::tokenizer
