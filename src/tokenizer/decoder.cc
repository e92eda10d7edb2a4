// Decoders; see decoder.h.
#include "tokenizer/decoder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/decode_text.h"
#include "tokenizer/json_number.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

std::string GetString(const nlohmann::json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<std::string>();
}

}  // namespace

absl::StatusOr<Decoder> Decoder::Parse(const nlohmann::json& j) {
  Decoder d;
  if (j.is_null()) return d;
  d.present_ = true;
  if (absl::Status s = ParseInto(j, "decoder", d.steps_); !s.ok()) return s;
  return d;
}

absl::Status Decoder::ParseInto(const nlohmann::json& j, const std::string& path, std::vector<Step>& steps) {
  if (!j.is_object() || !j.contains("type") || !j.at("type").is_string()) {
    return InvalidArgumentError(absl::StrCat(path, " has no \"type\""));
  }
  const std::string type = j.at("type").get<std::string>();
  Step step{Kind::kFuse, ""};
  if (type == "Sequence") {
    const auto& list = j.at("decoders");
    for (size_t i = 0; i < list.size(); ++i) {
      if (absl::Status s = ParseInto(list[i], absl::StrCat(path, ".decoders[", i, "]"), steps); !s.ok()) return s;
    }
    return absl::OkStatus();
  } else if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
  } else if (type == "WordPiece") {
    step.kind = Kind::kWordPiece;
    step.text = GetString(j, "prefix", "##");
    step.flag = j.value("cleanup", true);
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    auto options = ParseMetaspaceOptions(j, path);
    if (!options.ok()) return options.status();
    step.text = options->replacement;
    step.flag = options->prepend_scheme != "never";
  } else if (type == "BPEDecoder") {
    step.kind = Kind::kBpe;
    step.text = GetString(j, "suffix", "</w>");
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    auto regex = CompilePattern(j.at("pattern"), absl::StrCat(path, " (Replace)"));
    if (!regex.ok()) return regex.status();
    step.regex = std::move(*regex);
    step.text = j.at("content").get<std::string>();
  } else if (type == "CTC") {
    step.kind = Kind::kCtc;
    step.text = GetString(j, "pad_token", "<pad>");
    step.word_delimiter = GetString(j, "word_delimiter_token", "|");
    step.flag = j.value("cleanup", true);
  } else if (type == "ByteFallback") {
    step.kind = Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    const std::optional<char32_t> content = SingleCharacter(j.at("content").get<std::string>());
    if (!content) return InvalidArgumentError(absl::StrCat(path, " (Strip): content must be one character"));
    step.strip_char = *content;
    const absl::StatusOr<size_t> start = JsonWhole<size_t>(j.at("start"), absl::StrCat(path, " (Strip) start"));
    const absl::StatusOr<size_t> stop = JsonWhole<size_t>(j.at("stop"), absl::StrCat(path, " (Strip) stop"));
    if (!start.ok()) return start.status();
    if (!stop.ok()) return stop.status();
    step.strip_start = *start;
    step.strip_stop = *stop;
  } else {
    return InvalidArgumentError(absl::StrCat("unsupported decoder: ", type, " at ", path));
  }
  steps.push_back(std::move(step));
  return absl::OkStatus();
}

std::string Decoder::Decode(std::vector<std::string> tokens) const {
  if (!present_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) absl::StrAppend(&out, i == 0 ? "" : " ", tokens[i]);
    return out;
  }
  for (const Step& step : steps_) ApplyStep(step, tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

void Decoder::ApplyStep(const Step& step, std::vector<std::string>& tokens) {
  switch (step.kind) {
    case Kind::kByteLevel: {
      std::string bytes;
      for (const std::string& t : tokens) {
        std::string mapped;
        bool all = true;
        int len = 0;
        for (size_t i = 0; i < t.size() && all; i += static_cast<size_t>(len)) {
          const int b = UnicodeToByte(DecodeUtf8(t, i, len));
          if (b < 0) all = false; else mapped.push_back(static_cast<char>(b));
        }
        bytes += all ? mapped : t;
      }
      tokens.assign(1, Utf8Lossy(bytes));
      return;
    }
    case Kind::kWordPiece:
      for (size_t i = 0; i < tokens.size(); ++i) {
        std::string& t = tokens[i];
        if (i != 0) {
          if (t.compare(0, step.text.size(), step.text) == 0) t.erase(0, step.text.size());
          else t = absl::StrCat(" ", t);
        }
        if (step.flag) t = WordPieceCleanup(std::move(t));
      }
      return;
    case Kind::kMetaspace:
      for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string_view with = (i == 0 && step.flag) ? "" : " ";
        tokens[i] = ReplaceAll(tokens[i], step.text, with);
      }
      return;
    case Kind::kBpe:
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = ReplaceAll(tokens[i], step.text, i + 1 == tokens.size() ? "" : " ");
      }
      return;
    case Kind::kReplace: {
      std::vector<std::pair<size_t, size_t>> matches;
      for (std::string& t : tokens) {
        if (t.empty()) continue;  // Hugging Face: no match in an empty string
        matches.clear();
        step.regex->FindAll(t, matches, /*report_empty=*/true);
        if (matches.empty()) continue;
        std::string out;
        size_t last = 0;
        for (const auto& [b, e] : matches) {
          out.append(t, last, b - last);
          out += step.text;
          last = e;
        }
        out.append(t, last, std::string::npos);
        t = std::move(out);
      }
      return;
    }
    case Kind::kByteFallback: {
      std::vector<std::string> out;
      std::string pending;
      const auto flush = [&] {
        if (pending.empty()) return;
        if (ValidateUtf8(pending).ok()) {
          out.push_back(pending);
        } else {
          for (size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementChar);
        }
        pending.clear();
      };
      for (std::string& t : tokens) {
        const auto hex = [](char c) {
          return (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        };
        if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0) {
          pending.push_back(static_cast<char>(hex(t[3]) * 16 + hex(t[4])));
          continue;
        }
        flush();
        out.push_back(std::move(t));
      }
      flush();
      tokens = std::move(out);
      return;
    }
    case Kind::kCtc: {
      // Repeated tokens collapse into one, then the pad token is removed and,
      // with cleanup, the word delimiter becomes a space; empty tokens go.
      std::vector<std::string> out;
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0 && tokens[i] == tokens[i - 1]) continue;
        std::string t = ReplaceAll(tokens[i], step.text, "");
        if (step.flag) t = ReplaceAll(WordPieceCleanup(std::move(t)), step.word_delimiter, " ");
        if (!t.empty()) out.push_back(std::move(t));
      }
      tokens = std::move(out);
      return;
    }
    case Kind::kFuse: {
      std::string all;
      for (const std::string& t : tokens) all += t;
      tokens.assign(1, std::move(all));
      return;
    }
    case Kind::kStrip:
      for (std::string& t : tokens) {
        std::vector<std::pair<char32_t, size_t>> chars;  // (char, byte offset)
        int len = 0;
        for (size_t i = 0; i < t.size(); i += static_cast<size_t>(len)) chars.emplace_back(DecodeUtf8(t, i, len), i);
        size_t start_cut = 0, stop_cut = chars.size();
        for (size_t i = 0; i < step.strip_start && i < chars.size() && chars[i].first == step.strip_char; ++i) start_cut = i + 1;
        for (size_t i = 0; i < step.strip_stop && i < chars.size() && chars[chars.size() - 1 - i].first == step.strip_char; ++i) {
          stop_cut = chars.size() - 1 - i;
        }
        if (start_cut >= stop_cut) { t.clear(); continue; }
        const size_t b = chars[start_cut].second;
        const size_t e = stop_cut == chars.size() ? t.size() : chars[stop_cut].second;
        t = t.substr(b, e - b);
      }
      return;
  }
}

}  // namespace tokenbatch::tokenizer::internal
