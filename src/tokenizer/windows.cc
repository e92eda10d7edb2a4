// Truncation and sliding windows over one text, for the scheduler's `truncate`
// and `split` policies. Both encode the text once without special tokens, cut the
// token sequence, then add the post-processor's special tokens to each cut, so a
// window never loses its [CLS]/[SEP].
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace tokenbatch::tokenizer {
namespace {

// Copies text tokens [b, e) of `all` into a new encoding.
Encoding Slice(const Encoding& all, size_t b, size_t e, bool with_offsets) {
  Encoding out;
  out.ids.assign(all.ids.begin() + static_cast<std::ptrdiff_t>(b), all.ids.begin() + static_cast<std::ptrdiff_t>(e));
  if (with_offsets) {
    out.offsets.assign(all.offsets.begin() + static_cast<std::ptrdiff_t>(b),
                       all.offsets.begin() + static_cast<std::ptrdiff_t>(e));
  }
  return out;
}

}  // namespace

absl::StatusOr<Encoding> Tokenizer::EncodeTruncated(std::string_view text, size_t max_tokens,
                                                    const EncodeOptions& options) const {
  const size_t special = NumSpecialTokens(options.add_special_tokens);
  if (max_tokens < special) {
    return InvalidArgumentError(absl::StrCat("max_tokens ", max_tokens, " is below the ", special,
                                             " special tokens the post-processor adds"));
  }
  Encoding all;
  if (absl::Status s = impl_->Run(text, options.with_offsets, &all, nullptr); !s.ok()) return s;
  Encoding out = Slice(all, 0, std::min(all.ids.size(), max_tokens - special), options.with_offsets);
  if (options.add_special_tokens) {
    impl_->AddSpecialTokens(out, options.with_offsets);
  } else {
    out.special.assign(out.ids.size(), 0);
  }
  return out;
}

absl::StatusOr<std::vector<Encoding>> Tokenizer::EncodeWindows(std::string_view text, size_t window_tokens,
                                                               size_t overlap_tokens, bool add_special_tokens) const {
  const size_t special = NumSpecialTokens(add_special_tokens);
  if (window_tokens <= special) {
    return InvalidArgumentError(absl::StrCat("window of ", window_tokens, " tokens leaves no room for text after ",
                                             special, " special tokens"));
  }
  const size_t content = window_tokens - special;
  if (overlap_tokens >= content) {
    return InvalidArgumentError(absl::StrCat("overlap of ", overlap_tokens, " tokens must be below the ", content,
                                             " text tokens of a window"));
  }
  const size_t stride = content - overlap_tokens;
  Encoding all;
  if (absl::Status s = impl_->Run(text, true, &all, nullptr); !s.ok()) return s;
  std::vector<Encoding> windows;
  size_t begin = 0;
  do {
    const size_t end = std::min(all.ids.size(), begin + content);
    Encoding w = Slice(all, begin, end, true);
    if (add_special_tokens) {
      impl_->AddSpecialTokens(w, true);
    } else {
      w.special.assign(w.ids.size(), 0);
    }
    windows.push_back(std::move(w));
    if (end == all.ids.size()) break;
    begin += stride;
  } while (true);
  return windows;
}

}  // namespace tokenbatch::tokenizer
