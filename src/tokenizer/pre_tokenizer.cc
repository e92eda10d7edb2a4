// Pre-tokenizers; see pre_tokenizer.h. Behaviour follows Hugging Face tokenizers
// (tokenizers/src/pre_tokenizers/*.rs and SplitDelimiterBehavior in
// tokenizers/src/tokenizer/normalizer.rs); empty words are dropped as it does.
#include "tokenizer/pre_tokenizer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
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

absl::StatusOr<MetaspaceOptions> ParseMetaspaceOptions(const nlohmann::json& j, const std::string& path) {
  MetaspaceOptions out;
  out.replacement = j.at("replacement").get<std::string>();
  int len = 0;
  if (out.replacement.empty() || !ValidateUtf8(out.replacement).ok() ||
      (DecodeUtf8(out.replacement, 0, len), static_cast<size_t>(len) != out.replacement.size())) {
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
    if (behavior == "Removed") step.behavior = Behavior::kRemoved;
    else if (behavior == "Isolated") step.behavior = Behavior::kIsolated;
    else if (behavior == "MergedWithPrevious") step.behavior = Behavior::kMergedWithPrevious;
    else if (behavior == "MergedWithNext") step.behavior = Behavior::kMergedWithNext;
    else if (behavior == "Contiguous") step.behavior = Behavior::kContiguous;
    else return InvalidArgumentError(absl::StrCat("unsupported pre_tokenizer: Split behavior ", behavior, " at ", path));
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
    step.behavior = Behavior::kRemoved;
    step.invert = true;
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
