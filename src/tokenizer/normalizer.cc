// Normalizers; see normalizer.h. Behaviour follows Hugging Face tokenizers
// (tokenizers/src/normalizers/{unicode,utils,bert}.rs): BertNormalizer runs
// clean_text, then handle_chinese_chars, then strip_accents (NFD and drop Mn), then
// lowercase; strip_accents defaults to the value of lowercase.
#include "tokenizer/normalizer.h"

#include <algorithm>
#include <array>
#include <utility>

#include <utf8proc.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/precompiled.h"
#include "tokenizer/regex.h"
#include "tokenizer/transform.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

bool GetBool(const nlohmann::json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<bool>();
}

// Appends to `out` the bytes that `emit` writes into `out.text`, aligning each to
// [b, e) of the original.
template <typename Emit>
void EmitAligned(NormalizedText& out, bool align, uint32_t b, uint32_t e, Emit&& emit) {
  emit(out.text);
  if (align) {
    out.begin.resize(out.text.size(), b);
    out.end.resize(out.text.size(), e);
  }
}

// Decomposes `c` canonically (or by compatibility when `compat`) into `out`.
void Decompose(char32_t c, bool compat, std::vector<char32_t>& out) {
  std::array<utf8proc_int32_t, 32> buf{};
  int boundclass = 0;
  const auto options = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf.data(),
                                                     static_cast<utf8proc_ssize_t>(buf.size()), options, &boundclass);
  if (n <= 0 || n > static_cast<utf8proc_ssize_t>(buf.size())) {
    out.push_back(c);
    return;
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) out.push_back(static_cast<char32_t>(buf[k]));
}

int CombiningClass(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

// NFC / NFKC / NFD with Hugging Face's alignments: every character of the
// decomposition stays aligned to the original character it came from, and a
// composed character takes the alignment of the first character it was composed
// from (the starter), as the unicode-normalization-alignments crate reports.
void ApplyUnicodeForm(NormalizedText& io, bool align, bool compat, bool decompose) {
  std::string whole = decompose ? DecomposeUnicode(io.text, compat) : NormalizeUnicode(io.text, compat);
  if (whole == io.text) return;
  if (!align) {
    io.text = std::move(whole);
    io.identity = false;
    return;
  }
  EnsureAlignment(io);
  // The (compatibility) decomposition in canonical order, each code point with the
  // byte index of the character of io.text it came from.
  std::vector<char32_t> cps, one;
  std::vector<uint32_t> src;
  const std::string& in = io.text;
  int len = 0;
  for (size_t i = 0; i < in.size(); i += static_cast<size_t>(len)) {
    one.clear();
    Decompose(DecodeUtf8(in, i, len), compat, one);
    for (const char32_t c : one) {
      cps.push_back(c);
      src.push_back(static_cast<uint32_t>(i));
    }
  }
  // Canonical ordering of each run of marks. The alignments stay in place (the
  // k-th mark of a run keeps the k-th original position), as Hugging Face does.
  for (size_t i = 0; i < cps.size();) {
    if (CombiningClass(cps[i]) == 0) { ++i; continue; }
    size_t j = i;
    while (j < cps.size() && CombiningClass(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return CombiningClass(a) < CombiningClass(b); });
    i = j;
  }
  NormalizedText out;
  out.identity = false;
  out.base = io.base;
  // Each output character stands for the next (canonical) decomposition length of
  // code points of that sequence.
  size_t pos = 0;
  for (size_t i = 0; i < whole.size(); i += static_cast<size_t>(len)) {
    const char32_t c = DecodeUtf8(whole, i, len);
    size_t n = 1;
    if (!decompose) {
      one.clear();
      Decompose(c, false, one);
      n = one.size();
    }
    const uint32_t s = src[std::min(pos, src.size() - 1)];
    out.text.append(whole, i, static_cast<size_t>(len));
    out.begin.resize(out.text.size(), io.begin[s]);
    out.end.resize(out.text.size(), io.end[s]);
    pos += n;
  }
  io = std::move(out);
}

}  // namespace

absl::StatusOr<Normalizer> Normalizer::Parse(const nlohmann::json& j) {
  Normalizer n;
  if (!j.is_null()) {
    if (absl::Status s = ParseInto(j, "normalizer", n.steps_); !s.ok()) return s;
  }
  return n;
}

absl::Status Normalizer::ParseInto(const nlohmann::json& j, const std::string& path, std::vector<Step>& steps) {
  if (!j.is_object() || !j.contains("type")) return InvalidArgumentError(absl::StrCat(path, " has no \"type\""));
  const std::string type = j.at("type").get<std::string>();
  if (type == "Sequence") {
    const auto& list = j.at("normalizers");
    for (size_t i = 0; i < list.size(); ++i) {
      if (absl::Status s = ParseInto(list[i], absl::StrCat(path, ".normalizers[", i, "]"), steps); !s.ok()) return s;
    }
  } else if (type == "NFC") {
    steps.push_back(Step{Kind::kNfc, false, false, false, false});
  } else if (type == "NFKC") {
    steps.push_back(Step{Kind::kNfkc, false, false, false, false});
  } else if (type == "NFD") {
    steps.push_back(Step{Kind::kNfd, false, false, false, false});
  } else if (type == "NFKD") {
    steps.push_back(Step{Kind::kNfkd, false, false, false, false});
  } else if (type == "Precompiled") {
    Step s{Kind::kPrecompiled, false, false, false, false};
    const auto& field = j.at("precompiled_charsmap");
    std::string bytes;
    if (!field.is_null() && !absl::Base64Unescape(field.get<std::string>(), &bytes)) {
      return InvalidArgumentError(absl::StrCat(path, " (Precompiled): precompiled_charsmap is not base64"));
    }
    auto map = PrecompiledCharsmap::Parse(bytes);
    if (!map.ok()) return InvalidArgumentError(absl::StrCat(path, " (Precompiled): ", map.status().message()));
    s.charsmap = std::make_shared<const PrecompiledCharsmap>(std::move(*map));
    steps.push_back(std::move(s));
  } else if (type == "Replace") {
    Step s{Kind::kReplace, false, false, false, false};
    auto regex = CompilePattern(j.at("pattern"), absl::StrCat(path, " (Replace)"));
    if (!regex.ok()) return regex.status();
    s.regex = std::move(*regex);
    s.text = j.at("content").get<std::string>();
    steps.push_back(std::move(s));
  } else if (type == "Prepend") {
    Step s{Kind::kPrepend, false, false, false, false};
    s.text = j.at("prepend").get<std::string>();
    steps.push_back(std::move(s));
  } else if (type == "Strip") {
    Step s{Kind::kStrip, false, false, false, false};
    s.strip_left = GetBool(j, "strip_left", true);
    s.strip_right = GetBool(j, "strip_right", true);
    steps.push_back(std::move(s));
  } else if (type == "Lowercase") {
    steps.push_back(Step{Kind::kLowercase, false, false, false, false});
  } else if (type == "BertNormalizer") {
    if (GetBool(j, "separate_numbers", false)) {
      return InvalidArgumentError(absl::StrCat("unsupported normalizer option: BertNormalizer.separate_numbers at ", path));
    }
    Step s{Kind::kBert, false, false, false, false};
    s.clean_text = GetBool(j, "clean_text", true);
    s.handle_chinese_chars = GetBool(j, "handle_chinese_chars", true);
    s.lowercase = GetBool(j, "lowercase", true);
    s.strip_accents = GetBool(j, "strip_accents", s.lowercase);
    steps.push_back(s);
  } else {
    return InvalidArgumentError(absl::StrCat("unsupported normalizer: ", type, " at ", path));
  }
  return absl::OkStatus();
}

void Normalizer::Apply(std::string_view piece, uint32_t base, bool align, NormalizedText& out) const {
  out.text.assign(piece);
  out.identity = true;
  out.base = base;
  out.begin.clear();
  out.end.clear();
  for (const Step& step : steps_) ApplyStep(step, out, align);
}

uint32_t NormalizedText::OriginalBegin(size_t b) const {
  if (!identity) return begin[b];
  while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
  return base + static_cast<uint32_t>(b);
}

uint32_t NormalizedText::OriginalEnd(size_t e) const {
  if (!identity) return end[e - 1];
  while (e < text.size() && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) ++e;
  return base + static_cast<uint32_t>(e);
}

std::string Normalizer::ApplyToString(std::string_view s) const {
  NormalizedText t;
  Apply(s, 0, false, t);
  return std::move(t.text);
}

void Normalizer::ApplyStep(const Step& step, NormalizedText& io, bool align) {
  switch (step.kind) {
    case Kind::kNfc: ApplyUnicodeForm(io, align, false, false); return;
    case Kind::kNfkc: ApplyUnicodeForm(io, align, true, false); return;
    case Kind::kNfd: ApplyUnicodeForm(io, align, false, true); return;
    case Kind::kNfkd: ApplyUnicodeForm(io, align, true, true); return;
    case Kind::kPrecompiled: step.charsmap->Apply(io, align); return;
    case Kind::kReplace: {
      if (io.text.empty()) return;  // Hugging Face: no match in an empty string
      std::vector<std::pair<size_t, size_t>> matches;
      step.regex->FindAll(io.text, matches, /*report_empty=*/true);
      ReplaceRanges(io, matches, step.text, align);
      return;
    }
    case Kind::kPrepend: PrependText(io, step.text, align); return;
    case Kind::kStrip: StripWhitespace(io, step.strip_left, step.strip_right, align); return;
    case Kind::kLowercase:
    case Kind::kBert: break;
  }
  const bool bert = step.kind == Kind::kBert;
  if (align) EnsureAlignment(io);
  NormalizedText out;
  out.identity = false;
  out.base = io.base;
  out.text.reserve(io.text.size() + 8);
  const std::string& in = io.text;
  std::string scratch;
  int len = 0;
  for (size_t i = 0; i < in.size(); i += static_cast<size_t>(len)) {
    const char32_t c = DecodeUtf8(in, i, len);
    const uint32_t b = align ? io.begin[i] : 0;
    const uint32_t e = align ? io.end[i + len - 1] : 0;
    if (!bert) {
      EmitAligned(out, align, b, e, [&](std::string& t) { AppendLowercase(c, t); });
      continue;
    }
    if (step.clean_text) {
      if (c == 0 || c == 0xFFFD || (c != '\t' && c != '\n' && c != '\r' && IsOther(c))) continue;
      if (c == '\t' || c == '\n' || c == '\r' || IsWhitespace(c)) {
        EmitAligned(out, align, b, e, [](std::string& t) { t.push_back(' '); });
        continue;
      }
    }
    scratch.clear();
    if (step.strip_accents) {
      std::string nfd;
      AppendNfd(c, nfd);
      int l2 = 0;
      for (size_t k = 0; k < nfd.size(); k += static_cast<size_t>(l2)) {
        const char32_t d = DecodeUtf8(nfd, k, l2);
        if (IsNonspacingMark(d)) continue;
        if (step.lowercase) AppendLowercase(d, scratch); else AppendUtf8(d, scratch);
      }
    } else if (step.lowercase) {
      AppendLowercase(c, scratch);
    } else {
      AppendUtf8(c, scratch);
    }
    const bool cjk = step.handle_chinese_chars && IsChineseChar(c);
    EmitAligned(out, align, b, e, [&](std::string& t) {
      if (cjk) t.push_back(' ');
      t += scratch;
      if (cjk) t.push_back(' ');
    });
  }
  if (!align && out.text == io.text) return;  // e.g. lowercase of lowercase text
  io = std::move(out);
}

}  // namespace tokenbatch::tokenizer::internal
