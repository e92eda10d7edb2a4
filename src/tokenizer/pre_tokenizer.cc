// Pre-tokenizers; see pre_tokenizer.h. Behaviour follows Hugging Face tokenizers
// (tokenizers/src/pre_tokenizers/*.rs and SplitDelimiterBehavior in
// tokenizers/src/tokenizer/normalizer.rs); empty words are dropped as it does.
#include "tokenizer/pre_tokenizer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// GPT-2's pre-tokenization pattern, used by ByteLevel when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// The Whitespace pre-tokenizer keeps the matches of \w+|[^\w\s]+ in Rust's regex
// crate, whose \w is Alphabetic, marks, decimal digits, connector punctuation and
// Join_Control (so a ZWJ inside an emoji sequence is a word character).
constexpr std::string_view kWhitespacePattern =
    R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\s]+)";

// Escapes a literal Split pattern ({"String": ...}) for Oniguruma.
std::string EscapeLiteral(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const Regex>> CompileShared(std::string_view pattern) {
  auto r = Regex::Compile(pattern);
  if (!r.ok()) return r.status();
  return std::shared_ptr<const Regex>(std::move(*r));
}

// Appends word w's sub-range [b, e) of its virtual string (" " + text when
// w.prefix_space) to `out`, dropping it when empty.
void Emit(const Word& w, size_t b, size_t e, std::vector<Word>& out) {
  if (e <= b) return;
  if (!w.prefix_space) {
    out.push_back({w.begin + static_cast<uint32_t>(b), w.begin + static_cast<uint32_t>(e), false});
    return;
  }
  const bool prefix = b == 0;
  const size_t rb = b == 0 ? 0 : b - 1;
  out.push_back({w.begin + static_cast<uint32_t>(rb), w.begin + static_cast<uint32_t>(e - 1), prefix});
}

}  // namespace

absl::StatusOr<PreTokenizer> PreTokenizer::Parse(const nlohmann::json& j) {
  PreTokenizer p;
  if (!j.is_null()) {
    if (absl::Status s = ParseInto(j, p.steps_, p.byte_level_); !s.ok()) return s;
  }
  return p;
}

absl::Status PreTokenizer::ParseInto(const nlohmann::json& j, std::vector<Step>& steps, bool& byte_level) {
  if (!j.is_object() || !j.contains("type")) return InvalidArgumentError("pre_tokenizer without a \"type\"");
  const std::string type = j.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const auto& sub : j.at("pretokenizers")) {
      if (absl::Status s = ParseInto(sub, steps, byte_level); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (byte_level) {
    return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: ", type, " after ByteLevel"));
  }
  Step step;
  step.kind = Kind::kSplit;
  if (type == "Split") {
    const auto& pattern = j.at("pattern");
    std::string regex;
    if (pattern.contains("Regex")) {
      regex = pattern.at("Regex").get<std::string>();
    } else if (pattern.contains("String")) {
      regex = EscapeLiteral(pattern.at("String").get<std::string>());
    } else {
      return InvalidArgumentError("unsupported pre_tokenizer: Split pattern is neither Regex nor String");
    }
    auto compiled = CompileShared(regex);
    if (!compiled.ok()) return compiled.status();
    step.regex = *compiled;
    const std::string behavior = j.at("behavior").get<std::string>();
    if (behavior == "Removed") step.behavior = Behavior::kRemoved;
    else if (behavior == "Isolated") step.behavior = Behavior::kIsolated;
    else if (behavior == "MergedWithPrevious") step.behavior = Behavior::kMergedWithPrevious;
    else if (behavior == "MergedWithNext") step.behavior = Behavior::kMergedWithNext;
    else if (behavior == "Contiguous") step.behavior = Behavior::kContiguous;
    else return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: Split behavior ", behavior));
    step.invert = j.value("invert", false);
  } else if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
    step.add_prefix_space = j.value("add_prefix_space", true);
    if (j.value("use_regex", true)) {
      auto compiled = CompileShared(kGpt2Pattern);
      if (!compiled.ok()) return compiled.status();
      step.regex = *compiled;
    }
    byte_level = true;
  } else if (type == "BertPreTokenizer") {
    step.kind = Kind::kBert;
  } else if (type == "WhitespaceSplit") {
    step.kind = Kind::kWhitespaceSplit;
  } else if (type == "Whitespace") {
    auto compiled = CompileShared(kWhitespacePattern);
    if (!compiled.ok()) return compiled.status();
    step.regex = *compiled;
    step.behavior = Behavior::kRemoved;
    step.invert = true;
  } else {
    return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: ", type));
  }
  steps.push_back(std::move(step));
  return absl::OkStatus();
}

void PreTokenizer::Split(std::string_view text, std::vector<Word>& words, std::vector<Word>& scratch) const {
  words.clear();
  if (text.empty()) return;
  words.push_back({0, static_cast<uint32_t>(text.size()), false});
  for (const Step& step : steps_) {
    scratch.clear();
    ApplyStep(step, text, words, scratch);
    words.swap(scratch);
  }
}

void PreTokenizer::ApplyStep(const Step& step, std::string_view text, const std::vector<Word>& in,
                             std::vector<Word>& out) {
  std::vector<std::pair<size_t, size_t>> matches;
  std::string virt;
  for (Word w : in) {
    if (step.kind == Kind::kByteLevel && step.add_prefix_space && !w.prefix_space &&
        (w.begin == w.end || text[w.begin] != ' ')) {
      w.prefix_space = true;
    }
    std::string_view s = text.substr(w.begin, w.end - w.begin);
    if (w.prefix_space) {
      virt.assign(1, ' ');
      virt.append(s);
      s = virt;
    }
    if (step.kind == Kind::kBert || step.kind == Kind::kWhitespaceSplit) {
      size_t start = 0;
      int len = 0;
      for (size_t i = 0; i < s.size(); i += static_cast<size_t>(len)) {
        const char32_t c = DecodeUtf8(s, i, len);
        if (IsWhitespace(c)) {
          Emit(w, start, i, out);
          start = i + static_cast<size_t>(len);
        } else if (step.kind == Kind::kBert && ((c < 0x80 && std::ispunct(static_cast<int>(c))) || IsPunctuation(c))) {
          Emit(w, start, i, out);
          Emit(w, i, i + static_cast<size_t>(len), out);
          start = i + static_cast<size_t>(len);
        }
      }
      Emit(w, start, s.size(), out);
      continue;
    }
    if (!step.regex) {  // ByteLevel without use_regex: no split
      Emit(w, 0, s.size(), out);
      continue;
    }
    matches.clear();
    step.regex->FindAll(s, matches);
    // Segments covering s, each flagged as delimiter (a match, or a gap when inverted).
    size_t pos = 0;
    size_t pending_begin = 0;  // kMergedWithNext / kContiguous: start of the open segment
    bool pending = false;
    bool pending_is_delim = false;
    const auto segment = [&](size_t b, size_t e, bool is_delim) {
      if (e <= b) return;
      switch (step.behavior) {
        case Behavior::kRemoved:
          if (!is_delim) Emit(w, b, e, out);
          break;
        case Behavior::kIsolated:
          Emit(w, b, e, out);
          break;
        case Behavior::kMergedWithPrevious:
          if (is_delim && pending) {
            Emit(w, pending_begin, e, out);
            pending = false;
          } else {
            if (pending) Emit(w, pending_begin, b, out);
            pending_begin = b;
            pending = true;
            if (is_delim) {
              Emit(w, b, e, out);
              pending = false;
            }
          }
          break;
        case Behavior::kMergedWithNext:
          if (is_delim) {
            if (pending) Emit(w, pending_begin, b, out);
            pending_begin = b;
            pending = true;
          } else {
            Emit(w, pending ? pending_begin : b, e, out);
            pending = false;
          }
          break;
        case Behavior::kContiguous:
          if (pending && pending_is_delim == is_delim) break;  // extend the open run
          if (pending) Emit(w, pending_begin, b, out);
          pending_begin = b;
          pending = true;
          pending_is_delim = is_delim;
          break;
      }
    };
    for (const auto& [mb, me] : matches) {
      segment(pos, mb, step.invert);
      segment(mb, me, !step.invert);
      pos = me;
    }
    segment(pos, s.size(), step.invert);
    if (pending) Emit(w, pending_begin, s.size(), out);
  }
}

}  // namespace tokenbatch::tokenizer::internal
