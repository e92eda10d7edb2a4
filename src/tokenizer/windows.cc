// Sliding windows over one text, for the scheduler's `split` policy: the text is
// encoded once without special tokens, the token sequence is cut into windows,
// then the post-processor's special tokens are added to each, so a window never
// loses its [CLS]/[SEP]. (Truncation: truncation.cc.)
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace tokenbatch::tokenizer {

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
