// Client input -> backend ids (see input_tokens.h).
#include "service/input_tokens.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {

std::vector<std::int32_t> TruncateIds(const std::vector<std::int32_t>& ids, const std::vector<std::uint8_t>& special,
                                      std::int64_t max_tokens, TruncationDirection direction) {
  const auto n = static_cast<std::int64_t>(ids.size());
  if (max_tokens <= 0 || n <= max_tokens) return ids;
  std::int64_t to_remove = n - max_tokens;
  std::vector<bool> removed(ids.size(), false);
  auto is_special = [&](std::size_t i) { return i < special.size() && special[i] != 0; };
  if (direction == TruncationDirection::kRight) {
    for (std::int64_t i = n - 1; i >= 0 && to_remove > 0; --i) {
      if (!is_special(static_cast<std::size_t>(i))) removed[i] = true, --to_remove;
    }
  } else {
    for (std::int64_t i = 0; i < n && to_remove > 0; ++i) {
      if (!is_special(static_cast<std::size_t>(i))) removed[i] = true, --to_remove;
    }
  }
  std::vector<std::int32_t> out;
  out.reserve(static_cast<std::size_t>(max_tokens));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!removed[i]) out.push_back(ids[i]);
  }
  return out;
}

absl::StatusOr<InputTokens> InputToTokens(const tokenizer::Tokenizer& tokenizer, const EmbedInput& input,
                                          const InputTokenLimits& limits) {
  std::vector<std::int32_t> ids;
  std::vector<std::uint8_t> special;
  if (input.is_ids) {
    const std::int64_t limit = limits.vocab_size > 0 ? limits.vocab_size : (std::int64_t{1} << 31);
    ids.reserve(input.ids.size());
    for (std::int64_t id : input.ids) {
      if (id < 0 || id >= limit) {
        return InvalidArgumentError(absl::StrCat("token id ", id, " out of range [0, ", limit, ")"));
      }
      ids.push_back(static_cast<std::int32_t>(id));
    }
  } else {
    // A text to be cut is tokenised only as far as what is kept (EncodeTruncated).
    const bool cut = limits.truncate_to > 0 &&
                     static_cast<std::size_t>(limits.truncate_to) >= tokenizer.NumSpecialTokens(true);
    const tokenizer::TruncationSide side = limits.direction == TruncationDirection::kLeft
                                               ? tokenizer::TruncationSide::kLeft
                                               : tokenizer::TruncationSide::kRight;
    absl::StatusOr<tokenizer::Encoding> enc =
        cut ? tokenizer.EncodeTruncated(input.text, static_cast<std::size_t>(limits.truncate_to),
                                        {.with_offsets = false}, side)
            : tokenizer.Encode(input.text, {.with_offsets = false});
    if (!enc.ok()) {
      // The tokenizer's own status carries no ErrorKind; tag it (qualified: ADL
      // would pick absl::InvalidArgumentError for an absl::string_view).
      const absl::string_view m = enc.status().message();
      return tokenbatch::InvalidArgumentError(std::string_view(m.data(), m.size()));
    }
    ids.reserve(enc->ids.size());
    for (std::uint32_t id : enc->ids) {
      if (limits.vocab_size > 0 && id >= limits.vocab_size) {
        return InvalidArgumentError(absl::StrCat("token id ", id, " from the tokenizer is outside the model's ",
                                                 "vocabulary of ", limits.vocab_size,
                                                 " (tokenizer and model do not match)"));
      }
      ids.push_back(static_cast<std::int32_t>(id));
    }
    special = std::move(enc->special);
  }
  if (ids.empty()) return InvalidArgumentError("the input has no tokens");
  InputTokens out;
  // Leading and trailing runs of special tokens; truncation keeps every special
  // token, so the runs survive it.
  const std::size_t n = ids.size();
  auto is_special = [&](std::size_t i) { return i < special.size() && special[i] != 0; };
  std::size_t prefix = 0, suffix = 0;
  while (prefix < n && is_special(prefix)) ++prefix;
  while (suffix < n - prefix && is_special(n - 1 - suffix)) ++suffix;
  out.specials = {.prefix = static_cast<std::int64_t>(prefix), .suffix = static_cast<std::int64_t>(suffix)};
  out.ids = TruncateIds(ids, special, limits.truncate_to, limits.direction);
  return out;
}

absl::StatusOr<std::vector<std::int32_t>> InputToIds(const tokenizer::Tokenizer& tokenizer, const EmbedInput& input,
                                                     const InputTokenLimits& limits) {
  absl::StatusOr<InputTokens> tokens = InputToTokens(tokenizer, input, limits);
  if (!tokens.ok()) return tokens.status();
  return std::move(tokens->ids);
}

std::vector<std::int32_t> WindowIds(const std::vector<std::int32_t>& ids, TokenWindow window, SpecialEnds specials) {
  const auto n = static_cast<std::int64_t>(ids.size());
  std::vector<std::int32_t> out(ids.begin() + window.begin, ids.begin() + window.end);
  const auto size = static_cast<std::int64_t>(out.size());
  if (size <= specials.prefix + specials.suffix) return out;
  if (window.begin > 0) std::copy(ids.begin(), ids.begin() + specials.prefix, out.begin());
  if (window.end < n) std::copy(ids.end() - specials.suffix, ids.end(), out.end() - specials.suffix);
  return out;
}

}  // namespace tokenbatch::server
