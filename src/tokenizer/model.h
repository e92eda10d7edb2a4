// The models of tokenizer.json: BPE and WordPiece. A model turns one word (the
// bytes of one pre-tokenized piece) into token ids.
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

class Model {
 public:
  virtual ~Model() = default;

  // Parses the "model" field. `byte_level` says that words arrive as raw bytes
  // and the vocabulary is written in GPT-2's byte alphabet (a ByteLevel
  // pre-tokenizer is present). Unknown types and options (BPE dropout, ...) are
  // refused with InvalidArgumentError naming them.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Model>> Parse(const nlohmann::json& j, bool byte_level);

  // Appends the ids of `word` (non-empty, valid UTF-8 unless byte-level) to `ids`
  // and, for each, the end of its bytes within `word` to `ends`.
  virtual void Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const = 0;

  // The id of a vocabulary token, written as in tokenizer.json.
  [[nodiscard]] virtual std::optional<uint32_t> TokenToId(std::string_view token) const = 0;

  // Number of entries in the model's vocabulary (added tokens not included).
  [[nodiscard]] virtual size_t VocabSize() const = 0;
};

}  // namespace tokenbatch::tokenizer::internal
