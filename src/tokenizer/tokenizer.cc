// Tokenizer: the encode pipeline of Hugging Face tokenizers for one sequence:
//   added tokens cut out of the raw text -> normalizer on each remaining piece ->
//   normalised added tokens cut out -> pre-tokenizer (which may rewrite the
//   piece: Metaspace) -> model on each word (through the word cache) ->
//   post-processor special tokens. Decoding is in decode.cc.
#include "tokenbatch/tokenizer/tokenizer.h"

#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/json_number.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/load_options.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "tokenizer/word_cache.h"

namespace tokenbatch::tokenizer {

using internal::Segment;
using internal::Word;

namespace {

absl::Status UnencodableWord(std::string_view word) {
  // At most the first 64 bytes of the word, cut at a character boundary.
  size_t n = std::min<size_t>(word.size(), 64);
  while (n < word.size() && n > 0 && (static_cast<unsigned char>(word[n]) & 0xC0) == 0x80) --n;
  return InvalidArgumentError(absl::StrCat("the model has no piece for a character of \"", std::string(word.substr(0, n)),
                                           n < word.size() ? "...": "",
                                           "\" and no unk token (Unigram without unk_id, WordLevel without unk_token)"));
}

// Copies bytes [b, e) of `from` into `to`, with their alignments when `align`.
void CopyRange(const internal::NormalizedText& from, size_t b, size_t e, bool align, internal::NormalizedText& to) {
  to.text.assign(from.text, b, e - b);
  to.identity = from.identity;
  to.base = from.identity ? from.base + static_cast<uint32_t>(b) : from.base;
  to.begin.clear();
  to.end.clear();
  if (align && !from.identity) {
    to.begin.assign(from.begin.begin() + static_cast<std::ptrdiff_t>(b), from.begin.begin() + static_cast<std::ptrdiff_t>(e));
    to.end.assign(from.end.begin() + static_cast<std::ptrdiff_t>(b), from.end.begin() + static_cast<std::ptrdiff_t>(e));
  }
}

// Per-thread reusable buffers: Encode and Count allocate nothing per word once warm.
struct Scratch {
  std::vector<Segment> segments;
  std::vector<Segment> sub_segments;
  internal::NormalizedText norm;
  internal::NormalizedText rewritten;  // a sub-segment after Metaspace
  std::vector<Word> words;
  std::vector<Word> words_tmp;
  std::vector<uint32_t> ids;
  std::vector<uint32_t> ends;
  std::string word;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read tokenizer file ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  auto t = FromJson(buf.str(), options);
  if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
  return t;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json, const LoadOptions& options) {
  auto impl = std::make_unique<Impl>();
  try {
    nlohmann::json j = nlohmann::json::parse(json);
    if (!j.is_object()) return InvalidArgumentError("tokenizer.json is not a JSON object");
    if (options.lowercase) j["normalizer"] = internal::WithLowercaseFirst(j.value("normalizer", nlohmann::json()));
    auto normalizer = internal::Normalizer::Parse(j.value("normalizer", nlohmann::json()));
    if (!normalizer.ok()) return normalizer.status();
    impl->normalizer = std::move(*normalizer);
    auto pre = internal::PreTokenizer::Parse(j.value("pre_tokenizer", nlohmann::json()));
    if (!pre.ok()) return pre.status();
    impl->pre_tokenizer = std::move(*pre);
    auto model = internal::Model::Parse(j.value("model", nlohmann::json()), impl->pre_tokenizer.byte_level());
    if (!model.ok()) return model.status();
    impl->model = std::move(*model);
    auto post = internal::PostProcessor::Parse(j.value("post_processor", nlohmann::json()));
    if (!post.ok()) return post.status();
    impl->post = std::move(*post);
    auto decoder = internal::Decoder::Parse(j.value("decoder", nlohmann::json()));
    if (!decoder.ok()) return decoder.status();
    impl->decoder = std::move(*decoder);
    auto added = internal::ParseAddedTokens(j.value("added_tokens", nlohmann::json()), impl->normalizer, *impl->model);
    if (!added.ok()) return added.status();
    impl->added = std::move(*added);
    // The post-processor may only add tokens the tokenizer knows: an id outside
    // the vocabulary would reach the model as an embedding row it does not have.
    auto known = [&](uint32_t id) {
      return impl->added.content_by_id.contains(id) || impl->model->IdToToken(id).has_value();
    };
    std::vector<uint32_t> special_ids = impl->post.prefix_ids;
    special_ids.insert(special_ids.end(), impl->post.suffix_ids.begin(), impl->post.suffix_ids.end());
    for (const internal::PairPiece& piece : impl->post.pair) {
      special_ids.insert(special_ids.end(), piece.ids.begin(), piece.ids.end());
    }
    for (const uint32_t id : special_ids) {
      if (!known(id)) {
        return InvalidArgumentError(absl::StrCat("post_processor special token id ", id,
                                                 " is neither in the model's vocabulary nor an added token"));
      }
    }
    if (auto t = j.find("truncation"); t != j.end() && t->is_object() && t->contains("max_length")) {
      absl::StatusOr<size_t> max_length = internal::JsonWhole<size_t>(t->at("max_length"), "truncation max_length");
      if (!max_length.ok()) return max_length.status();
      impl->file_max_length = *max_length;
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(absl::StrCat("malformed tokenizer.json: ", e.what()));
  } catch (const std::bad_alloc&) {
    return InvalidArgumentError("tokenizer.json needs more memory than is available");
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

absl::Status Tokenizer::Impl::Run(std::string_view text, bool with_offsets, Encoding* enc, size_t* count,
                                  bool with_word_ends) const {
  if (text.size() >= std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError(absl::StrCat("text of ", text.size(), " bytes is too long (limit 4 GiB)"));
  }
  if (absl::Status s = internal::ValidateUtf8(text); !s.ok()) return s;
  thread_local Scratch sc;
  with_offsets = with_offsets && enc != nullptr;
  const bool align = with_offsets || pre_tokenizer.needs_alignment();
  sc.segments.clear();
  added.raw.Split(text, sc.segments);
  for (const Segment& seg : sc.segments) {
    if (seg.id >= 0) {
      if (enc != nullptr) {
        enc->ids.push_back(static_cast<uint32_t>(seg.id));
        if (with_offsets) {
          uint32_t ob = seg.begin, oe = seg.end;
          if (post.trim_offsets) TrimOffsets(text, text.substr(seg.begin, seg.end - seg.begin), false, enc->offsets.size(), ob, oe);
          enc->offsets.emplace_back(ob, oe);
        }
        if (with_word_ends) enc->word_ends.push_back(static_cast<uint32_t>(enc->ids.size()));
      } else {
        ++*count;
      }
      continue;
    }
    normalizer.Apply(text.substr(seg.begin, seg.end - seg.begin), seg.begin, align, sc.norm);
    const std::string& norm = sc.norm.text;
    sc.sub_segments.clear();
    added.normalized.Split(norm, sc.sub_segments);
    for (const Segment& sub : sc.sub_segments) {
      if (sub.id >= 0) {
        if (enc != nullptr) {
          enc->ids.push_back(static_cast<uint32_t>(sub.id));
          if (with_offsets) {
            uint32_t ob = sc.norm.OriginalBegin(sub.begin), oe = sc.norm.OriginalEnd(sub.end);
            if (post.trim_offsets) {
              TrimOffsets(text, std::string_view(norm).substr(sub.begin, sub.end - sub.begin), false, enc->offsets.size(), ob, oe);
            }
            enc->offsets.emplace_back(ob, oe);
          }
          if (with_word_ends) enc->word_ends.push_back(static_cast<uint32_t>(enc->ids.size()));
        } else {
          ++*count;
        }
        continue;
      }
      // Words index `wtext` from byte `wbase`.
      const internal::NormalizedText* wtext = &sc.norm;
      size_t wbase = sub.begin;
      if (pre_tokenizer.rewrites_text()) {
        CopyRange(sc.norm, sub.begin, sub.end, align, sc.rewritten);
        pre_tokenizer.SplitRewriting(sc.rewritten, align, sc.words, sc.words_tmp);
        wtext = &sc.rewritten;
        wbase = 0;
      } else {
        pre_tokenizer.Split(std::string_view(norm).substr(sub.begin, sub.end - sub.begin), sc.words, sc.words_tmp);
      }
      for (const Word& w : sc.words) {
        std::string_view word(wtext->text.data() + wbase + w.begin, w.end - w.begin);
        if (w.prefix_space) {
          sc.word.assign(1, ' ');
          sc.word.append(word);
          word = sc.word;
        }
        if (enc == nullptr) {
          int64_t n = cache.LookupCount(word);
          if (n < 0) {
            sc.ids.clear();
            sc.ends.clear();
            if (!model->Tokenize(word, sc.ids, sc.ends)) return UnencodableWord(word);
            cache.Insert(word, sc.ids.data(), sc.ends.data(), sc.ids.size());
            n = static_cast<int64_t>(sc.ids.size());
          }
          *count += static_cast<size_t>(n);
          continue;
        }
        sc.ids.clear();
        sc.ends.clear();
        if (!cache.Lookup(word, sc.ids, &sc.ends)) {
          if (!model->Tokenize(word, sc.ids, sc.ends)) return UnencodableWord(word);
          cache.Insert(word, sc.ids.data(), sc.ends.data(), sc.ids.size());
        }
        enc->ids.insert(enc->ids.end(), sc.ids.begin(), sc.ids.end());
        if (with_word_ends) enc->word_ends.push_back(static_cast<uint32_t>(enc->ids.size()));
        if (!with_offsets) continue;
        const uint32_t p = w.prefix_space ? 1 : 0;
        const size_t word_base = wbase + w.begin;  // byte of wtext for word[p]
        uint32_t vb = 0;
        for (size_t k = 0; k < sc.ids.size(); ++k) {
          const uint32_t ve = sc.ends[k] & ~internal::Model::kSameBegin;
          if (k > 0 && (sc.ends[k] & internal::Model::kSameBegin) == 0) vb = sc.ends[k - 1] & ~internal::Model::kSameBegin;
          uint32_t ob, oe;
          if (ve <= p || w.begin == w.end) {  // only the virtual prefix space
            // Hugging Face aligns the prepended space to the character after it
            // (the first of its word, or of the next word when it stands alone).
            ob = wtext->OriginalBegin(word_base);
            oe = word_base < wtext->text.size() ? wtext->OriginalEnd(word_base + 1) : ob;
          } else {
            ob = wtext->OriginalBegin(word_base + std::max(vb, p) - p);
            oe = wtext->OriginalEnd(word_base + ve - p);
          }
          if (post.trim_offsets) TrimOffsets(text, word.substr(vb, ve - vb), true, enc->offsets.size(), ob, oe);
          enc->offsets.emplace_back(ob, oe);
        }
      }
    }
  }
  return absl::OkStatus();
}

// Hugging Face's ByteLevel process_offsets: drop leading/trailing spaces of the
// token from its offsets (except the space add_prefix_space itself added to the
// first token). Hugging Face moves the offsets by that many characters of the
// original text (its offsets are in characters at that point), so a space that
// normalisation made from U+3000 drops all three bytes of it. A model token
// (`byte_level_token`: raw bytes of a byte-level word) counts its ' ' bytes, the
// bytes written as U+0120 in its vocabulary; an added token's text counts its
// White_Space characters and U+0120 itself.
void Tokenizer::Impl::TrimOffsets(std::string_view text, std::string_view token, bool byte_level_token, size_t index,
                                  uint32_t& b, uint32_t& e) const {
  const auto is_cont = [&](uint32_t i) { return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  size_t lead = 0, trail = 0;
  if (byte_level_token) {
    while (lead < token.size() && token[lead] == ' ') ++lead;
    while (trail < token.size() && token[token.size() - 1 - trail] == ' ') ++trail;
  } else {
    const auto space = [](char32_t c) { return c == 0x120 || internal::IsWhitespace(c); };
    std::vector<char32_t> chars;
    int len = 0;
    for (size_t i = 0; i < token.size(); i += static_cast<size_t>(len)) chars.push_back(internal::DecodeUtf8(token, i, len));
    while (lead < chars.size() && space(chars[lead])) ++lead;
    while (trail < chars.size() && space(chars[chars.size() - 1 - trail])) ++trail;
  }
  if (lead > 0) {
    const bool first = index == 0 || b == 0;
    if (first && post.trim_add_prefix_space && lead == 1) lead = 0;
    for (size_t k = 0; k < lead && b < e; ++k) {
      ++b;
      while (b < e && is_cont(b)) ++b;
    }
  }
  // Hugging Face only trims the end when it is at least `trail` characters in.
  uint32_t chars_before_end = 0;
  for (uint32_t i = 0; i < e && chars_before_end < trail; ++i) chars_before_end += is_cont(i) ? 0 : 1;
  if (trail > 0 && chars_before_end >= trail) {
    for (size_t k = 0; k < trail && e > b; ++k) {
      --e;
      while (e > b && is_cont(e)) --e;
    }
  }
}

void Tokenizer::Impl::AddSpecialTokens(Encoding& enc, bool with_offsets) const {
  const auto& pre = post.prefix_ids;
  const auto& suf = post.suffix_ids;
  enc.special.assign(enc.ids.size(), 0);
  if (pre.empty() && suf.empty()) return;
  enc.ids.insert(enc.ids.begin(), pre.begin(), pre.end());
  enc.ids.insert(enc.ids.end(), suf.begin(), suf.end());
  enc.special.insert(enc.special.begin(), pre.size(), 1);
  enc.special.insert(enc.special.end(), suf.size(), 1);
  if (with_offsets) {
    enc.offsets.insert(enc.offsets.begin(), pre.size(), {0, 0});
    enc.offsets.insert(enc.offsets.end(), suf.size(), {0, 0});
  }
}

absl::StatusOr<Encoding> Tokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  Encoding enc;
  if (options.with_word_ends && options.add_special_tokens) {
    return InvalidArgumentError("word ends are given without special tokens only");
  }
  if (absl::Status s = impl_->Run(text, options.with_offsets, &enc, nullptr, options.with_word_ends); !s.ok()) {
    return s;
  }
  if (options.add_special_tokens) {
    impl_->AddSpecialTokens(enc, options.with_offsets);
  } else {
    enc.special.assign(enc.ids.size(), 0);
  }
  return enc;
}

absl::StatusOr<size_t> Tokenizer::Count(std::string_view text, bool add_special_tokens) const {
  size_t count = 0;
  if (absl::Status s = impl_->Run(text, false, nullptr, &count); !s.ok()) return s;
  return count + NumSpecialTokens(add_special_tokens);
}

size_t Tokenizer::NumSpecialTokens(bool add_special_tokens) const {
  return add_special_tokens ? impl_->post.prefix_ids.size() + impl_->post.suffix_ids.size() : 0;
}

std::optional<uint32_t> Tokenizer::TokenToId(std::string_view token) const {
  for (const auto& t : impl_->added.all) {
    if (t.content == token) return t.id;
  }
  return impl_->model->TokenToId(token);
}

std::optional<size_t> Tokenizer::FileMaxLength() const { return impl_->file_max_length; }

size_t Tokenizer::VocabSize() const {
  size_t n = impl_->model->VocabSize();
  for (const auto& t : impl_->added.all) {
    if (!impl_->model->TokenToId(t.content)) ++n;
  }
  return n;
}

}  // namespace tokenbatch::tokenizer
