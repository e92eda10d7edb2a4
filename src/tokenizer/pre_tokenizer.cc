// Pre-tokenizers; see pre_tokenizer.h. Behaviour follows Hugging Face tokenizers
// (tokenizers/src/pre_tokenizers/*.rs and SplitDelimiterBehavior in
// tokenizers/src/tokenizer/normalizer.rs); empty words are dropped as it does.
#include "tokenizer/pre_tokenizer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/json_number.h"
#include "tokenizer/pre_tokenizer_rules.h"
#include "tokenizer/transform.h"
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

absl::StatusOr<std::shared_ptr<const Regex>> CompileShared(std::string_view pattern) {
  auto r = Regex::Compile(pattern);
  if (!r.ok()) return r.status();
  return std::shared_ptr<const Regex>(std::move(*r));
}

}  // namespace

absl::StatusOr<MetaspaceOptions> ParseMetaspaceOptions(const nlohmann::json& j, const std::string& path) {
  MetaspaceOptions out;
  out.replacement = j.at("replacement").get<std::string>();
  if (!SingleCharacter(out.replacement)) {
    return InvalidArgumentError(absl::StrCat(path, " (Metaspace): replacement must be one character"));
  }
  out.prepend_scheme = j.contains("prepend_scheme") ? j.at("prepend_scheme").get<std::string>() : "always";
  if (out.prepend_scheme != "always" && out.prepend_scheme != "first" && out.prepend_scheme != "never") {
    return InvalidArgumentError(absl::StrCat(path, " (Metaspace): unknown prepend_scheme ", out.prepend_scheme));
  }
  // The older add_prefix_space field: false requires prepend_scheme "never".
  if (j.contains("add_prefix_space") && !j.at("add_prefix_space").is_null() && !j.at("add_prefix_space").get<bool>() &&
      out.prepend_scheme != "never") {
    return InvalidArgumentError(absl::StrCat(path, " (Metaspace): add_prefix_space false contradicts prepend_scheme ",
                                             out.prepend_scheme));
  }
  out.split = j.contains("split") && !j.at("split").is_null() ? j.at("split").get<bool>() : true;
  return out;
}

absl::StatusOr<PreTokenizer> PreTokenizer::Parse(const nlohmann::json& j) {
  PreTokenizer p;
  if (!j.is_null()) {
    if (absl::Status s = ParseInto(j, "pre_tokenizer", p.steps_, p.byte_level_); !s.ok()) return s;
  }
  for (const Step& step : p.steps_) {
    p.splits_from_start_ = p.splits_from_start_ || step.kind == Kind::kFixedLength || step.kind == Kind::kUnicodeScripts;
    if (step.kind != Kind::kMetaspace) continue;
    p.rewrites_ = true;
    p.needs_alignment_ = p.needs_alignment_ || step.prepend == Prepend::kFirst;
  }
  return p;
}

absl::Status PreTokenizer::ParseInto(const nlohmann::json& j, const std::string& path, std::vector<Step>& steps,
                                     bool& byte_level) {
  if (!j.is_object() || !j.contains("type")) return InvalidArgumentError(absl::StrCat(path, " has no \"type\""));
  const std::string type = j.at("type").get<std::string>();
  if (type == "Sequence") {
    const auto& list = j.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) {
      if (absl::Status s = ParseInto(list[i], absl::StrCat(path, ".pretokenizers[", i, "]"), steps, byte_level); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }
  if (byte_level) {
    return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: ", type, " after ByteLevel at ", path));
  }
  Step step;
  step.kind = Kind::kSplit;
  if (type == "Split") {
    auto compiled = CompilePattern(j.at("pattern"), absl::StrCat(path, " (Split)"));
    if (!compiled.ok()) return compiled.status();
    step.regex = std::move(*compiled);
    const std::string behavior = j.at("behavior").get<std::string>();
    const std::optional<SplitBehavior> parsed = ParseSplitBehavior(behavior);
    if (!parsed) return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: Split behavior ", behavior, " at ", path));
    step.behavior = *parsed;
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
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    auto options = ParseMetaspaceOptions(j, path);
    if (!options.ok()) return options.status();
    step.replacement = options->replacement;
    step.prepend = options->prepend_scheme == "always" ? Prepend::kAlways
                   : options->prepend_scheme == "first" ? Prepend::kFirst
                                                        : Prepend::kNever;
    step.split = options->split;
  } else if (type == "BertPreTokenizer") {
    step.kind = Kind::kBert;
  } else if (type == "WhitespaceSplit") {
    step.kind = Kind::kWhitespaceSplit;
  } else if (type == "Whitespace") {
    auto compiled = CompileShared(kWhitespacePattern);
    if (!compiled.ok()) return compiled.status();
    step.regex = *compiled;
    step.behavior = SplitBehavior::kRemoved;
    step.invert = true;
  } else if (type == "Punctuation" || type == "Digits" || type == "CharDelimiterSplit") {
    step.kind = Kind::kCharClass;
    if (type == "Punctuation") {
      const std::string behavior = j.value("behavior", std::string("Isolated"));
      const std::optional<SplitBehavior> parsed = ParseSplitBehavior(behavior);
      if (!parsed) {
        return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: Punctuation behavior ", behavior, " at ", path));
      }
      step.behavior = *parsed;
    } else if (type == "Digits") {
      step.char_class = CharClass::kNumeric;
      step.behavior = j.value("individual_digits", false) ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
    } else {
      step.char_class = CharClass::kDelimiter;
      step.behavior = SplitBehavior::kRemoved;
      const std::optional<char32_t> delimiter = SingleCharacter(j.at("delimiter").get<std::string>());
      if (!delimiter) {
        return InvalidArgumentError(absl::StrCat(path, " (CharDelimiterSplit): delimiter must be one character"));
      }
      step.delimiter = *delimiter;
    }
  } else if (type == "FixedLength") {
    step.kind = Kind::kFixedLength;
    const absl::StatusOr<size_t> length =
        j.contains("length") ? JsonWhole<size_t>(j.at("length"), absl::StrCat(path, " (FixedLength) length"))
                            : absl::StatusOr<size_t>(5);
    if (!length.ok()) return length.status();
    if (*length == 0) return InvalidArgumentError(absl::StrCat(path, " (FixedLength): length must be at least 1"));
    step.length = *length;
  } else if (type == "UnicodeScripts") {
    step.kind = Kind::kUnicodeScripts;
  } else {
    return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: ", type, " at ", path));
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

void PreTokenizer::SplitRewriting(NormalizedText& io, bool align, std::vector<Word>& words,
                                  std::vector<Word>& scratch) const {
  words.clear();
  if (io.text.empty()) return;
  words.push_back({0, static_cast<uint32_t>(io.text.size()), false});
  for (const Step& step : steps_) {
    scratch.clear();
    if (step.kind == Kind::kMetaspace) {
      ApplyMetaspace(step, io, align, words, scratch);
    } else {
      ApplyStep(step, io.text, words, scratch);
    }
    words.swap(scratch);
  }
}

void PreTokenizer::ApplyMetaspace(const Step& step, NormalizedText& io, bool align, const std::vector<Word>& in,
                                  std::vector<Word>& out) const {
  NormalizedText next;
  next.identity = false;
  next.base = io.base;
  NormalizedText piece;
  std::vector<std::pair<size_t, size_t>> spaces;
  const std::string& rep = step.replacement;
  for (const Word& w : in) {
    // The word as its own normalised string, with its alignments.
    piece.text.assign(io.text, w.begin, w.end - w.begin);
    piece.identity = io.identity;
    piece.base = io.base + w.begin;
    piece.begin.clear();
    piece.end.clear();
    if (align && !io.identity) {
      piece.begin.assign(io.begin.begin() + w.begin, io.begin.begin() + w.end);
      piece.end.assign(io.end.begin() + w.begin, io.end.begin() + w.end);
    }
    spaces.clear();
    for (size_t i = 0; i < piece.text.size(); ++i) {
      if (piece.text[i] == ' ') spaces.emplace_back(i, i + 1);
    }
    ReplaceRanges(piece, spaces, rep, align);
    const bool starts_with_rep = piece.text.compare(0, rep.size(), rep) == 0;
    if (!starts_with_rep && (step.prepend == Prepend::kAlways ||
                             (step.prepend == Prepend::kFirst && piece.OriginalBegin(0) == 0))) {
      PrependText(piece, rep, align);
    }
    const auto base = static_cast<uint32_t>(next.text.size());
    next.text += piece.text;
    if (align) {
      EnsureAlignment(piece);
      next.begin.insert(next.begin.end(), piece.begin.begin(), piece.begin.end());
      next.end.insert(next.end.end(), piece.end.begin(), piece.end.end());
    }
    if (!step.split) {
      out.push_back({base, static_cast<uint32_t>(next.text.size()), false});
      continue;
    }
    // Split before every replacement character (Hugging Face: MergedWithNext).
    size_t start = 0;
    for (size_t pos = piece.text.find(rep, 1); pos != std::string::npos; pos = piece.text.find(rep, pos + rep.size())) {
      out.push_back({base + static_cast<uint32_t>(start), base + static_cast<uint32_t>(pos), false});
      start = pos;
    }
    out.push_back({base + static_cast<uint32_t>(start), static_cast<uint32_t>(next.text.size()), false});
  }
  io = std::move(next);
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
          EmitWordPart(w, start, i, out);
          start = i + static_cast<size_t>(len);
        } else if (step.kind == Kind::kBert && ((c < 0x80 && std::ispunct(static_cast<int>(c))) || IsPunctuation(c))) {
          EmitWordPart(w, start, i, out);
          EmitWordPart(w, i, i + static_cast<size_t>(len), out);
          start = i + static_cast<size_t>(len);
        }
      }
      EmitWordPart(w, start, s.size(), out);
      continue;
    }
    if (step.kind == Kind::kFixedLength) {
      SplitFixedLength(w, s, step.length, out);
      continue;
    }
    if (step.kind == Kind::kUnicodeScripts) {
      SplitUnicodeScripts(w, s, out);
      continue;
    }
    if (step.kind == Kind::kCharClass) {
      FindCharMatches(s, step.char_class, step.delimiter, matches);
    } else if (step.regex) {
      matches.clear();
      step.regex->FindAll(s, matches);
    } else {  // ByteLevel without use_regex: no split
      EmitWordPart(w, 0, s.size(), out);
      continue;
    }
    SplitAtMatches(w, s.size(), matches, step.behavior, step.invert, out);
  }
}

}  // namespace tokenbatch::tokenizer::internal
