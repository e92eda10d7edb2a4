// Pair encoding for cross-encoders: two texts through the post-processor's pair
// template, the second cut to a token limit (Hugging Face's "only_second").
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
  if (absl::Status s = impl_->Run(first, false, &a, nullptr); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("first text: ", s.message()));
  }
  return EncodePair(a.ids, second, options);
}

absl::StatusOr<Encoding> Tokenizer::EncodePair(std::span<const uint32_t> first_ids, std::string_view second,
                                               const PairEncodeOptions& options) const {
  if (impl_->post.pair.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("this tokenizer.json cannot encode pairs: ", impl_->post.pair_error));
  }
  Encoding b;
  if (absl::Status s = impl_->Run(second, false, &b, nullptr); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("second text: ", s.message()));
  }
  const size_t specials = NumPairSpecialTokens();
  if (options.max_tokens > 0 && first_ids.size() + specials + b.ids.size() > options.max_tokens) {
    // Hugging Face's only_second refuses, rather than cut the second to nothing.
    if (first_ids.size() + specials >= options.max_tokens) {
      return absl::OutOfRangeError(absl::StrCat("the first text's ", first_ids.size(), " tokens and the ", specials,
                                                " special tokens leave no room for the second text within ",
                                                options.max_tokens, " tokens"));
    }
    const size_t keep = options.max_tokens - specials - first_ids.size();
    if (options.side == PairTruncationSide::kRight) {
      b.ids.resize(keep);
    } else {
      b.ids.erase(b.ids.begin(), b.ids.end() - static_cast<std::ptrdiff_t>(keep));
    }
  }
  Encoding out;
  const size_t total = first_ids.size() + b.ids.size() + specials;
  out.ids.reserve(total);
  out.special.reserve(total);
  out.type_ids.reserve(total);
  for (const PairPiece& piece : impl_->post.pair) {
    const std::span<const uint32_t> ids = piece.kind == PairPiece::Kind::kSpecial ? std::span<const uint32_t>(piece.ids)
                                          : piece.kind == PairPiece::Kind::kFirst ? first_ids
                                                                                  : std::span<const uint32_t>(b.ids);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    out.special.insert(out.special.end(), ids.size(), piece.kind == PairPiece::Kind::kSpecial ? 1 : 0);
    out.type_ids.insert(out.type_ids.end(), ids.size(), piece.type_id);
  }
  return out;
}

}  // namespace tokenbatch::tokenizer
