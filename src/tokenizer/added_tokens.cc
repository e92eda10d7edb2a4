// Added-token matching; see added_tokens.h.
#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/model.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

char32_t LastChar(std::string_view s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  int len = 0;
  return DecodeUtf8(s, b, len);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  by_first_byte_.resize(256);
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

void AddedTokenMatcher::Split(std::string_view text, std::vector<Segment>& out) const {
  const auto emit_text = [&](size_t b, size_t e) {
    if (e > b) out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e), -1});
  };
  if (tokens_.empty()) {
    emit_text(0, text.size());
    return;
  }
  size_t done = 0;  // end of the last emitted segment
  size_t i = 0;
  while (i < text.size()) {
    // The longest token starting at i (Hugging Face: aho-corasick, leftmost-longest).
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[i])];
    const AddedToken* hit = nullptr;
    for (const uint32_t t : bucket) {
      const AddedToken& tok = tokens_[t];
      if (tok.content.size() <= text.size() - i &&
          std::memcmp(text.data() + i, tok.content.data(), tok.content.size()) == 0) {
        hit = &tok;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (hit->single_word) {
      // A match glued to a word character is discarded and the scan resumes after
      // it: no shorter token is tried in its place, none starts inside it.
      const size_t stop = i + hit->content.size();
      int len = 0;
      if ((i > 0 && IsRegexWordChar(LastChar(text, i))) ||
          (stop < text.size() && IsRegexWordChar(DecodeUtf8(text, stop, len)))) {
        i = stop;
        continue;
      }
    }
    size_t b = i, e = i + hit->content.size();
    if (hit->lstrip) {
      while (b > done && IsWhitespace(LastChar(text, b))) {
        size_t p = b - 1;
        while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        b = p;
      }
    }
    if (hit->rstrip) {
      int len = 0;
      while (e < text.size() && IsWhitespace(DecodeUtf8(text, e, len))) e += static_cast<size_t>(len);
    }
    emit_text(done, b);
    out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e), hit->id});
    done = e;
    i = e;
  }
  emit_text(done, text.size());
}

absl::StatusOr<AddedVocabulary> ParseAddedTokens(const nlohmann::json& j, const Normalizer& normalizer,
                                                 const Model& model) {
  AddedVocabulary vocab;
  std::vector<AddedToken> raw, normalized;
  if (j.is_null()) return vocab;
  const auto vocab_size = static_cast<uint32_t>(model.VocabSize());
  std::optional<uint32_t> max_added;
  for (const auto& t : j) {
    AddedToken tok;
    tok.content = t.at("content").get<std::string>();
    auto known = std::find_if(vocab.all.begin(), vocab.all.end(), [&](const AddedToken& a) { return a.content == tok.content; });
    if (known != vocab.all.end()) {
      tok.id = known->id;
    } else if (auto id = model.TokenToId(tok.content)) {
      tok.id = *id;
    } else {
      tok.id = max_added && *max_added >= vocab_size ? *max_added + 1 : vocab_size;
    }
    max_added = std::max(max_added.value_or(0), tok.id);
    if (absl::Status s = ValidateUtf8(tok.content); !s.ok()) return s;
    tok.single_word = t.value("single_word", false);
    tok.lstrip = t.value("lstrip", false);
    tok.rstrip = t.value("rstrip", false);
    tok.special = t.value("special", false);
    // Hugging Face's AddedToken defaults: special tokens are not normalised.
    tok.normalized = t.value("normalized", !tok.special);
    vocab.all.push_back(tok);
    vocab.content_by_id.insert_or_assign(tok.id, tok.content);
    vocab.decoded_by_id.insert_or_assign(
        tok.id, tok.normalized && !normalizer.IsIdentity() ? normalizer.ApplyToString(tok.content) : tok.content);
    if (tok.special) vocab.special_contents.insert(tok.content);
    if (tok.normalized) {
      tok.content = normalizer.ApplyToString(tok.content);
      normalized.push_back(std::move(tok));
    } else {
      raw.push_back(std::move(tok));
    }
  }
  vocab.raw = AddedTokenMatcher(std::move(raw));
  vocab.normalized = AddedTokenMatcher(std::move(normalized));
  return vocab;
}

}  // namespace tokenbatch::tokenizer::internal
