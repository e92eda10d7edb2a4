// BPE model; see bpe.h.
#include "tokenizer/bpe.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/json_number.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

std::string OptString(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? std::string() : it->get<std::string>();
}

// Maps a token written in GPT-2's byte alphabet to its raw bytes; nullopt when
// it contains a character outside that alphabet.
std::optional<std::string> ByteLevelToBytes(std::string_view token) {
  std::string out;
  int len = 0;
  for (size_t i = 0; i < token.size(); i += static_cast<size_t>(len)) {
    const int b = UnicodeToByte(DecodeUtf8(token, i, len));
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

// A pair of adjacent symbols that a merge would join, ordered by (rank, left).
struct Candidate {
  uint32_t rank;
  uint32_t left;
  uint32_t right;
  uint32_t new_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Bpe::Create(const nlohmann::json& j, bool byte_level) {
  auto bpe = std::unique_ptr<Bpe>(new Bpe());
  // "dropout" is read by nothing: it regularises training, and inference
  // encodes deterministically (every merge applies).
  bpe->byte_level_ = byte_level;
  bpe->ignore_merges_ = j.value("ignore_merges", false);
  bpe->byte_fallback_ = j.value("byte_fallback", false);
  bpe->fuse_unk_ = j.value("fuse_unk", false);
  bpe->prefix_ = OptString(j, "continuing_subword_prefix");
  bpe->suffix_ = OptString(j, "end_of_word_suffix");
  if (byte_level && bpe->byte_fallback_) {
    return InvalidArgumentError("unsupported model option: BPE byte_fallback with ByteLevel");
  }
  for (const auto& [token, id] : j.at("vocab").items()) {
    const absl::StatusOr<uint32_t> read =
        JsonWhole<uint32_t>(id, absl::StrCat("BPE vocab id of ", token), kMaxVocabId - 1);
    if (!read.ok()) return read.status();
    const uint32_t v = *read;
    bpe->json_vocab_.emplace(token, v);
    bpe->SetTokenOfId(v, token);
    if (byte_level) {
      if (auto bytes = ByteLevelToBytes(token)) {
        if (bytes->size() == 1) {
          const auto b = static_cast<uint8_t>((*bytes)[0]);
          bpe->byte_ids_[b] = v;
          bpe->has_byte_id_[b] = true;
        }
        bpe->vocab_.emplace(std::move(*bytes), v);
      }
    } else {
      bpe->vocab_.emplace(token, v);
    }
  }
  const std::string unk = OptString(j, "unk_token");
  if (!unk.empty()) {
    auto it = bpe->json_vocab_.find(unk);
    if (it == bpe->json_vocab_.end()) return InvalidArgumentError(absl::StrCat("BPE unk_token ", unk, " not in vocab"));
    bpe->unk_id_ = it->second;
  }
  const auto& merges = j.at("merges");
  bpe->merges_.reserve(merges.size());
  uint32_t rank = 0;
  for (const auto& m : merges) {
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos) return InvalidArgumentError(absl::StrCat("BPE merge without a space: ", s));
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      return InvalidArgumentError(absl::StrCat("BPE merge #", rank, " is neither \"a b\" nor [a, b]"));
    }
    const std::string merged = a + b.substr(std::min(bpe->prefix_.size(), b.size()));
    auto ia = bpe->json_vocab_.find(a), ib = bpe->json_vocab_.find(b), im = bpe->json_vocab_.find(merged);
    if (ia == bpe->json_vocab_.end() || ib == bpe->json_vocab_.end() || im == bpe->json_vocab_.end()) {
      return InvalidArgumentError(absl::StrCat("BPE merge #", rank, " (", a, " ", b, ") uses a token not in vocab"));
    }
    bpe->merges_.try_emplace(PairKey(ia->second, ib->second), Merge{rank, im->second});
    ++rank;
  }
  return std::unique_ptr<Model>(std::move(bpe));
}

std::optional<uint32_t> Bpe::TokenToId(std::string_view token) const {
  auto it = json_vocab_.find(token);
  if (it == json_vocab_.end()) return std::nullopt;
  return it->second;
}

void Bpe::InitialSymbols(std::string_view chars, bool one_byte_per_char, std::vector<uint32_t>& ids,
                         std::vector<uint32_t>& ends) const {
  const Vocab& vocab = byte_level_ ? json_vocab_ : vocab_;
  // Each symbol ends where the previous one did plus its length, in the order
  // they are added (Hugging Face's Word::add): an unknown character without an
  // unk token is dropped without a gap, and a pending unk is added only when a
  // known character follows.
  uint32_t pos = 0;
  // Bytes of the word read so far: ends never point past them.
  auto limit = static_cast<uint32_t>(one_byte_per_char ? 0 : chars.size());
  const auto add = [&](uint32_t id, uint32_t n) {
    pos += n;
    ids.push_back(id);
    ends.push_back(std::min(pos, limit));
  };
  bool unk_pending = false;  // an unk token of length unk_length waits to be added
  uint32_t unk_length = 0;
  std::string piece;
  int len = 0;
  for (size_t i = 0; i < chars.size(); i += static_cast<size_t>(len)) {
    DecodeUtf8(chars, i, len);
    const auto n = static_cast<uint32_t>(one_byte_per_char ? 1 : len);
    if (one_byte_per_char) limit += 1;
    piece.clear();
    if (i > 0) piece += prefix_;
    piece.append(chars.substr(i, static_cast<size_t>(len)));
    if (i + static_cast<size_t>(len) == chars.size()) piece += suffix_;
    if (auto it = vocab.find(piece); it != vocab.end()) {
      if (unk_pending) add(*unk_id_, unk_length);
      unk_pending = false;
      add(it->second, n);
      continue;
    }
    if (byte_fallback_) {
      // Hugging Face looks up the bytes of the piece, prefix and suffix included.
      std::vector<uint32_t> bytes;
      for (const char b : piece) {
        auto it = vocab.find(absl::StrFormat("<0x%02X>", static_cast<unsigned char>(b)));
        if (it == vocab.end()) break;
        bytes.push_back(it->second);
      }
      if (bytes.size() == piece.size()) {
        for (const uint32_t id : bytes) add(id, 1);
        continue;
      }
    }
    if (!unk_id_) continue;
    if (unk_pending && fuse_unk_) {
      unk_length += n;
    } else {
      if (unk_pending) add(*unk_id_, unk_length);
      unk_pending = true;
      unk_length = n;
    }
  }
  if (unk_pending) add(*unk_id_, unk_length);
}

bool Bpe::Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const {
  if (ignore_merges_) {
    if (auto it = vocab_.find(word); it != vocab_.end()) {
      ids.push_back(it->second);
      ends.push_back(static_cast<uint32_t>(word.size()));
      return true;
    }
  }
  // Symbols as a doubly linked list over [0, n).
  std::vector<uint32_t> sym_id, sym_end;
  if (byte_level_ && prefix_.empty() && suffix_.empty()) {
    sym_id.reserve(word.size());
    sym_end.reserve(word.size());
    for (size_t i = 0; i < word.size(); ++i) {
      const auto b = static_cast<uint8_t>(word[i]);
      if (!has_byte_id_[b]) continue;  // unreachable for a complete byte alphabet
      sym_id.push_back(byte_ids_[b]);
      sym_end.push_back(static_cast<uint32_t>(i + 1));
    }
  } else if (byte_level_) {
    // The word in GPT-2's byte alphabet, where prefix and suffix attach.
    std::string chars;
    for (const char b : word) AppendUtf8(ByteToUnicode(static_cast<uint8_t>(b)), chars);
    InitialSymbols(chars, /*one_byte_per_char=*/true, sym_id, sym_end);
  } else {
    InitialSymbols(word, /*one_byte_per_char=*/false, sym_id, sym_end);
  }
  const auto n = static_cast<uint32_t>(sym_id.size());
  if (n > 1) {
    std::vector<uint32_t> next(n), prev(n);
    std::vector<bool> alive(n, true);
    for (uint32_t i = 0; i < n; ++i) {
      next[i] = i + 1;
      prev[i] = i == 0 ? UINT32_MAX : i - 1;
    }
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    const auto push = [&](uint32_t l, uint32_t r) {
      auto it = merges_.find(PairKey(sym_id[l], sym_id[r]));
      if (it != merges_.end()) heap.push({it->second.rank, l, r, it->second.new_id});
    };
    for (uint32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
    while (!heap.empty()) {
      const Candidate c = heap.top();
      heap.pop();
      // Stale when either side was merged away or changed since the push.
      if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right) continue;
      auto it = merges_.find(PairKey(sym_id[c.left], sym_id[c.right]));
      if (it == merges_.end() || it->second.rank != c.rank) continue;
      sym_id[c.left] = c.new_id;
      sym_end[c.left] = sym_end[c.right];
      alive[c.right] = false;
      next[c.left] = next[c.right];
      if (next[c.left] < n) prev[next[c.left]] = c.left;
      if (prev[c.left] != UINT32_MAX) push(prev[c.left], c.left);
      if (next[c.left] < n) push(c.left, next[c.left]);
    }
    for (uint32_t i = 0; i < n; i = next[i]) {
      ids.push_back(sym_id[i]);
      ends.push_back(sym_end[i]);
    }
    return true;
  }
  ids.insert(ids.end(), sym_id.begin(), sym_id.end());
  ends.insert(ends.end(), sym_end.begin(), sym_end.end());
  return true;
}

}  // namespace tokenbatch::tokenizer::internal
