// Pair encoding for cross-encoders: two texts through the post-processor's pair
// template, cut to a token limit as Hugging Face's "longest_first" or
// "only_second" truncation cuts them.
#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace tokenbatch::tokenizer {

using internal::PairPiece;

size_t Tokenizer::NumPairSpecialTokens() const {
  size_t n = 0;
  for (const PairPiece& piece : impl_->post.pair) n += piece.ids.size();
  return n;
}

absl::StatusOr<Encoding> Tokenizer::EncodePair(std::string_view first, std::string_view second,
                                               const PairEncodeOptions& options) const {
  Encoding a;
  if (absl::Status s = impl_->Run(first, false, &a, nullptr, /*with_word_ends=*/true); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("first text: ", s.message()));
  }
  return EncodePair(a, second, options);
}

namespace {

// The length tokenizers (0.23) gives a text before it cuts a pair
// longest_first: it stops encoding at the first word that reaches `max_tokens`
// from the end it cuts, so the text counts as that whole-word prefix (or
// suffix). `word_ends` empty: each token is a word.
size_t LengthForLongestFirst(size_t tokens, const std::vector<uint32_t>& word_ends, size_t max_tokens,
                             PairTruncationSide side) {
  if (tokens <= max_tokens || word_ends.empty()) return std::min(tokens, max_tokens);
  if (side == PairTruncationSide::kRight) {
    for (const uint32_t end : word_ends) {
      if (end >= max_tokens) return end;
    }
    return tokens;
  }
  // From the end: the suffix after word k's end.
  for (size_t k = word_ends.size(); k-- > 0;) {
    if (tokens - word_ends[k] >= max_tokens) return tokens - word_ends[k];
  }
  return tokens;
}

// The `keep` tokens of `ids` that a cut from `side` leaves (all when fewer).
std::span<const uint32_t> Kept(std::span<const uint32_t> ids, size_t keep, PairTruncationSide side) {
  if (ids.size() <= keep) return ids;
  return side == PairTruncationSide::kRight ? ids.first(keep) : ids.last(keep);
}

}  // namespace

absl::StatusOr<Encoding> Tokenizer::EncodePair(const Encoding& first, std::string_view second,
                                               const PairEncodeOptions& options) const {
  if (impl_->post.pair.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("this tokenizer.json cannot encode pairs: ", impl_->post.pair_error));
  }
  Encoding b;
  if (absl::Status s = impl_->Run(second, false, &b, nullptr, /*with_word_ends=*/true); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("second text: ", s.message()));
  }
  const size_t specials = NumPairSpecialTokens();
  std::span<const uint32_t> a = first.ids;
  std::span<const uint32_t> second_ids = b.ids;
  if (options.max_tokens > 0 && a.size() + specials + b.ids.size() > options.max_tokens) {
    if (options.max_tokens < specials) {
      return absl::OutOfRangeError(absl::StrCat("the pair template's ", specials, " special tokens do not fit in ",
                                                options.max_tokens, " tokens"));
    }
    const size_t room = options.max_tokens - specials;
    size_t keep_a = a.size();
    size_t keep_b = room;
    if (options.truncation == PairTruncation::kOnlySecond) {
      // Hugging Face's only_second refuses, rather than cut the second to nothing.
      if (a.size() >= room) {
        return absl::OutOfRangeError(absl::StrCat("the first text's ", a.size(), " tokens and the ", specials,
                                                  " special tokens leave no room for the second text within ",
                                                  options.max_tokens, " tokens"));
      }
      keep_b = room - a.size();
    } else {
      // tokenizers' LongestFirst, on the lengths it measures: the shorter
      // keeps its length when the longer still gets as much; else each gets
      // half, the longer the odd token, the second when they are equal.
      const size_t len_a = LengthForLongestFirst(a.size(), first.word_ends, options.max_tokens, options.side);
      const size_t len_b = LengthForLongestFirst(b.ids.size(), b.word_ends, options.max_tokens, options.side);
      size_t shorter = std::min(len_a, len_b);
      size_t longer = shorter > room ? shorter : std::max(shorter, room - shorter);
      if (shorter + longer > room) {
        shorter = room / 2;
        longer = shorter + room % 2;
      }
      keep_a = len_a > len_b ? longer : shorter;
      keep_b = len_a > len_b ? shorter : longer;
    }
    a = Kept(a, keep_a, options.side);
    second_ids = Kept(second_ids, keep_b, options.side);
  }
  Encoding out;
  const size_t total = a.size() + second_ids.size() + specials;
  out.ids.reserve(total);
  out.special.reserve(total);
  out.type_ids.reserve(total);
  for (const PairPiece& piece : impl_->post.pair) {
    const std::span<const uint32_t> ids = piece.kind == PairPiece::Kind::kSpecial ? std::span<const uint32_t>(piece.ids)
                                          : piece.kind == PairPiece::Kind::kFirst ? a
                                                                                  : second_ids;
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    out.special.insert(out.special.end(), ids.size(), piece.kind == PairPiece::Kind::kSpecial ? 1 : 0);
    out.type_ids.insert(out.type_ids.end(), ids.size(), piece.type_id);
  }
  return out;
}

}  // namespace tokenbatch::tokenizer
