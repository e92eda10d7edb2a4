// Normalizers; see normalizer.h. Behaviour follows Hugging Face tokenizers
// (tokenizers/src/normalizers/{unicode,utils,bert,strip,byte_level}.rs): BertNormalizer runs
// clean_text, then handle_chinese_chars, then strip_accents (NFD and drop Mn), then
// lowercase; strip_accents defaults to the value of lowercase.
#include "tokenizer/normalizer.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/char_normalizers.h"
#include "tokenizer/precompiled.h"
#include "tokenizer/regex.h"
#include "tokenizer/transform.h"
#include "tokenizer/unicode_forms.h"
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
  } else if (type == "StripAccents") {
    steps.push_back(Step{Kind::kStripAccents, false, false, false, false});
  } else if (type == "Nmt") {
    steps.push_back(Step{Kind::kNmt, false, false, false, false});
  } else if (type == "ByteLevel") {
    steps.push_back(Step{Kind::kByteLevel, false, false, false, false});
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
    case Kind::kStripAccents: StripAccents(io, align); return;
    case Kind::kNmt: NmtNormalize(io, align); return;
    case Kind::kByteLevel: ByteLevelNormalize(io, align); return;
    case Kind::kLowercase:
    case Kind::kBert: break;
  }
  const bool bert = step.kind == Kind::kBert;
  if (bert && step.strip_accents) {
    // Hugging Face strips accents from the NFD of the whole text, marks in
    // canonical order, then lowercases: clean_text and the CJK spaces first.
    Step before = step;
    before.strip_accents = false;
    before.lowercase = false;
    ApplyStep(before, io, align);
    ApplyUnicodeForm(io, align, /*compat=*/false, /*decompose=*/true);
    StripNonspacingMarks(io, align, step.lowercase);
    return;
  }
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
    if (step.lowercase) {
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
