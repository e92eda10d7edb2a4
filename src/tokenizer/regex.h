// A compiled Oniguruma regular expression (UTF-8, ONIG_SYNTAX_ONIGURUMA,
// ONIG_OPTION_CAPTURE_GROUP: the settings of the `onig` crate that Hugging Face
// tokenizers uses for its Split and ByteLevel pre-tokenizers).
//
// Thread-safety: a Regex is immutable after Compile; FindAll may be called from
// several threads at once (each call uses its own match region).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace tokenbatch::tokenizer::internal {

class Regex {
 public:
  // Compiles `pattern`; InvalidArgumentError with Oniguruma's message on failure.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends to `out` the [begin, end) byte ranges (relative to `text`) of all
  // non-overlapping leftmost matches, scanning left to right. An empty match
  // advances the scan by one code point; it is reported only with
  // `report_empty`, and then not when it starts where the previous match ended
  // (the `onig` crate's find_iter, which Hugging Face's Replace uses). `text`
  // must be valid UTF-8.
  void FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>>& out, bool report_empty = false) const;

 private:
  explicit Regex(void* regex) : regex_(regex) {}
  void* regex_;  // OnigRegex
};

// Escapes `literal` so that it matches itself as an Oniguruma pattern.
[[nodiscard]] std::string EscapeRegexLiteral(std::string_view literal);

// Compiles a tokenizer.json pattern object, {"String": literal} or {"Regex":
// pattern}. InvalidArgumentError prefixed with `component` (e.g. "normalizer
// Replace") for any other shape or a pattern Oniguruma refuses.
[[nodiscard]] absl::StatusOr<std::shared_ptr<const Regex>> CompilePattern(const nlohmann::json& pattern,
                                                                          std::string_view component);

}  // namespace tokenbatch::tokenizer::internal
