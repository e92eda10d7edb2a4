// The models of tokenizer.json: BPE, WordPiece, WordLevel and Unigram. A model turns one
// word (the bytes of one pre-tokenized piece) into token ids.
//
// Models are immutable after Parse and safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace tokenbatch::tokenizer::internal {

// Transparent hashing so that maps keyed by std::string accept std::string_view
// lookups without a copy (Debian's abseil has its own absl::string_view).
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct StringViewEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};
template <typename V>
using StringMap = absl::flat_hash_map<std::string, V, StringViewHash, StringViewEq>;
using Vocab = StringMap<uint32_t>;

// Vocabulary ids must be below this (tokenizer.json files use a few hundred
// thousand at most); a larger id is refused at load rather than sized for.
inline constexpr uint32_t kMaxVocabId = 1u << 26;

class Model {
 public:
  virtual ~Model() = default;

  // Parses the "model" field. `byte_level` says that words arrive as raw bytes
  // and the vocabulary is written in GPT-2's byte alphabet (a ByteLevel
  // pre-tokenizer is present). Unknown types and options are
  // refused with InvalidArgumentError naming them.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Model>> Parse(const nlohmann::json& j, bool byte_level);

  // Flag in an `ends` entry: the token begins where the previous token began
  // (not where it ended). Unigram's byte fallback gives every "<0xNN>" token of
  // an unknown text that whole text's offsets.
  static constexpr uint32_t kSameBegin = 1u << 31;

  // Appends the ids of `word` (non-empty, valid UTF-8 unless byte-level) to `ids`
  // and, for each, the end of its bytes within `word` to `ends` (possibly with
  // kSameBegin set). Returns false, with `ids`/`ends` as they were, when the
  // model cannot encode the word (a Unigram model without unk_id meeting an
  // uncovered character).
  virtual bool Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const = 0;

  // The id of a vocabulary token, written as in tokenizer.json.
  [[nodiscard]] virtual std::optional<uint32_t> TokenToId(std::string_view token) const = 0;

  // The vocabulary token of `id` as written in tokenizer.json, or nullopt when no
  // entry has that id.
  [[nodiscard]] std::optional<std::string_view> IdToToken(uint32_t id) const {
    auto it = tokens_by_id_.find(id);
    if (it == tokens_by_id_.end()) return std::nullopt;
    return it->second;
  }

  // Number of entries in the model's vocabulary (added tokens not included).
  [[nodiscard]] virtual size_t VocabSize() const = 0;

 protected:
  // Records `token` as the text of `id` (for IdToToken); a later call for the
  // same id replaces it. A map, not a vector: ids in a file may be sparse.
  void SetTokenOfId(uint32_t id, std::string_view token) { tokens_by_id_.insert_or_assign(id, std::string(token)); }

 private:
  absl::flat_hash_map<uint32_t, std::string> tokens_by_id_;
};

}  // namespace tokenbatch::tokenizer::internal
