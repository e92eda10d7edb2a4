// Unigram model; see unigram.h.
#include "tokenizer/unigram.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {
namespace {

// Hugging Face's K_UNK_PENALTY: the unknown piece scores this much below the
// lowest-scoring piece, so it is only chosen where nothing else fits.
constexpr double kUnknownPenalty = 10.0;

// The double Hugging Face's loader holds for a score written as `written`.
// serde_json (tokenizers' JSON parser, without its float_roundtrip feature) does
// not round decimal numbers correctly: it converts the decimal significand to a
// double and divides (or multiplies) by a power of ten, rounding twice, so many
// scores come out one ulp away from the correctly rounded value that
// nlohmann-json gives. Viterbi ties between equal-scoring segmentations are
// decided by those last bits, so the scores are re-derived the same way. The
// digits are the shortest ones that round-trip, which is what every tokenizer.json
// writer (serde_json, Python's json) puts in the file.
double AsHuggingFaceParsesIt(double written) {
  static const std::vector<double> kPow10 = [] {
    std::vector<double> p;
    for (int e = 0; e <= 308; ++e) p.push_back(std::strtod(absl::StrCat("1e", e).c_str(), nullptr));
    return p;
  }();
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), written);
  if (ec != std::errc()) return written;
  uint64_t significand = 0;
  int exponent = 0;
  bool negative = false, fraction = false;
  for (const char* p = buf; p != end; ++p) {
    if (*p == '-') {
      negative = true;
    } else if (*p == '.') {
      fraction = true;
    } else if (*p == 'e') {
      int written_exponent = 0;
      const char* digits = p + 1;
      if (digits != end && *digits == '+') ++digits;  // from_chars takes '-' but not '+'
      std::from_chars(digits, end, written_exponent);
      exponent += written_exponent;
      break;
    } else {
      significand = significand * 10 + static_cast<uint64_t>(*p - '0');
      if (fraction) --exponent;
    }
  }
  auto f = static_cast<double>(significand);
  while (true) {
    const int magnitude = exponent < 0 ? -exponent : exponent;
    if (magnitude < static_cast<int>(kPow10.size())) {
      f = exponent >= 0 ? f * kPow10[static_cast<size_t>(magnitude)] : f / kPow10[static_cast<size_t>(magnitude)];
      break;
    }
    if (f == 0 || exponent >= 0) break;
    f /= 1e308;
    exponent += 308;
  }
  return negative ? -f : f;
}

// Length in bytes of the UTF-8 character whose first byte is `b` (valid UTF-8).
int CharLength(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

// Per-thread Viterbi tables, grown to the longest word seen.
struct Lattice {
  std::vector<double> best;      // best score of a segmentation of [0, i)
  std::vector<int32_t> start;    // where the last piece of that segmentation starts; -1: none yet
  std::vector<int32_t> piece;    // that piece's id; -1: the unknown piece
  std::vector<uint32_t> path;    // piece boundaries, filled backwards
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Unigram::Create(const nlohmann::json& j) {
  auto u = std::unique_ptr<Unigram>(new Unigram());
  const auto& vocab = j.at("vocab");
  if (!vocab.is_array()) return InvalidArgumentError("Unigram vocab is not a list of [piece, score] pairs");
  if (vocab.size() >= kMaxVocabId) return InvalidArgumentError(absl::StrCat("Unigram vocab of ", vocab.size(), " pieces is too large"));
  u->pieces_.reserve(vocab.size());
  u->scores_.reserve(vocab.size());
  double min_score = INFINITY;
  for (size_t i = 0; i < vocab.size(); ++i) {
    const auto& entry = vocab[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
      return InvalidArgumentError(absl::StrCat("Unigram vocab entry ", i, " is not a [piece, score] pair"));
    }
    const auto& piece = entry[0].get_ref<const std::string&>();
    const double score = AsHuggingFaceParsesIt(entry[1].get<double>());
    if (!std::isfinite(score)) return InvalidArgumentError(absl::StrCat("Unigram vocab entry ", i, " has a non-finite score"));
    if (piece.empty()) return InvalidArgumentError(absl::StrCat("Unigram vocab entry ", i, " is an empty piece"));
    if (!ValidateUtf8(piece).ok()) return InvalidArgumentError(absl::StrCat("Unigram vocab entry ", i, " is not valid UTF-8"));
    const auto id = static_cast<uint32_t>(i);
    u->pieces_.push_back(piece);
    u->scores_.push_back(score);
    u->piece_ids_.insert_or_assign(piece, id);
    u->SetTokenOfId(id, piece);
    min_score = std::min(min_score, score);
  }
  if (auto it = j.find("unk_id"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return InvalidArgumentError("Unigram unk_id is not an integer");
    const auto unk = it->get<int64_t>();
    if (unk < 0 || static_cast<size_t>(unk) >= u->pieces_.size()) {
      return InvalidArgumentError(absl::StrCat("Unigram unk_id ", unk, " is not in the vocab of ", u->pieces_.size(), " pieces"));
    }
    u->unk_id_ = static_cast<uint32_t>(unk);
  }
  u->byte_fallback_ = j.value("byte_fallback", false);
  u->unk_score_ = min_score - kUnknownPenalty;
  for (int b = 0; b < 256; ++b) {
    if (auto it = u->piece_ids_.find(absl::StrFormat("<0x%02X>", b)); it != u->piece_ids_.end()) {
      u->byte_piece_[b] = it->second;
      u->has_byte_piece_[b] = true;
    }
  }
  u->BuildTrie();
  return std::unique_ptr<Model>(std::move(u));
}

void Unigram::BuildTrie() {
  // A pointer trie first, then flattened: each node's children become one
  // contiguous run of labels sorted by byte.
  struct Temp {
    std::vector<std::pair<uint8_t, uint32_t>> children;
    int32_t piece = -1;
  };
  std::vector<Temp> temp(1);
  for (uint32_t id = 0; id < pieces_.size(); ++id) {
    // The text's id is its last entry; earlier duplicates are unreachable.
    if (piece_ids_.find(pieces_[id])->second != id) continue;
    uint32_t node = 0;
    for (const char ch : pieces_[id]) {
      const auto label = static_cast<uint8_t>(ch);
      auto& kids = temp[node].children;
      auto it = std::find_if(kids.begin(), kids.end(), [&](const auto& e) { return e.first == label; });
      if (it != kids.end()) {
        node = it->second;
      } else {
        const auto next = static_cast<uint32_t>(temp.size());
        kids.emplace_back(label, next);
        temp.emplace_back();
        node = next;
      }
    }
    temp[node].piece = static_cast<int32_t>(id);
  }
  nodes_.assign(temp.size(), Node{});
  std::fill(std::begin(root_child_), std::end(root_child_), -1);
  for (uint32_t n = 0; n < temp.size(); ++n) {
    auto& kids = temp[n].children;
    std::sort(kids.begin(), kids.end());
    nodes_[n].piece = temp[n].piece;
    nodes_[n].first_edge = static_cast<uint32_t>(labels_.size());
    nodes_[n].num_edges = static_cast<uint32_t>(kids.size());
    for (const auto& [label, child] : kids) {
      labels_.push_back(label);
      targets_.push_back(child);
      if (n == 0) root_child_[label] = child;
    }
  }
}

int64_t Unigram::Child(uint32_t node, uint8_t label) const {
  if (node == 0) return root_child_[label];
  const Node& n = nodes_[node];
  const uint8_t* first = labels_.data() + n.first_edge;
  const uint8_t* last = first + n.num_edges;
  if (n.num_edges <= 8) {
    for (const uint8_t* p = first; p != last; ++p) {
      if (*p == label) return targets_[static_cast<size_t>(p - labels_.data())];
      if (*p > label) return -1;
    }
    return -1;
  }
  const uint8_t* p = std::lower_bound(first, last, label);
  if (p == last || *p != label) return -1;
  return targets_[static_cast<size_t>(p - labels_.data())];
}

std::optional<uint32_t> Unigram::TokenToId(std::string_view token) const {
  auto it = piece_ids_.find(token);
  if (it == piece_ids_.end()) return std::nullopt;
  return it->second;
}

bool Unigram::EmitUnknown(std::string_view word, uint32_t b, uint32_t e, std::vector<uint32_t>& ids,
                          std::vector<uint32_t>& ends) const {
  const std::string_view text = word.substr(b, e - b);
  if (auto it = piece_ids_.find(text); it != piece_ids_.end()) {
    ids.push_back(it->second);
    ends.push_back(e);
    return true;
  }
  if (byte_fallback_ &&
      std::all_of(text.begin(), text.end(), [&](char c) { return has_byte_piece_[static_cast<uint8_t>(c)]; })) {
    for (size_t k = 0; k < text.size(); ++k) {
      ids.push_back(byte_piece_[static_cast<uint8_t>(text[k])]);
      ends.push_back(k == 0 ? e : (e | kSameBegin));
    }
    return true;
  }
  if (!unk_id_) return false;
  ids.push_back(*unk_id_);
  ends.push_back(e);
  return true;
}

bool Unigram::Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const {
  thread_local Lattice lat;
  const size_t n = word.size();
  lat.best.assign(n + 1, 0.0);
  lat.start.assign(n + 1, -1);
  lat.piece.assign(n + 1, -1);
  for (size_t pos = 0; pos < n;) {
    const size_t char_len = static_cast<size_t>(CharLength(static_cast<unsigned char>(word[pos])));
    const double here = lat.best[pos];
    bool covers_one_char = false;
    uint32_t node = 0;
    for (size_t k = pos; k < n; ++k) {
      const int64_t child = Child(node, static_cast<uint8_t>(word[k]));
      if (child < 0) break;
      node = static_cast<uint32_t>(child);
      const int32_t piece = nodes_[node].piece;
      if (piece < 0) continue;
      const size_t end = k + 1;
      const double score = scores_[static_cast<size_t>(piece)] + here;
      if (lat.start[end] < 0 || score > lat.best[end]) {
        lat.best[end] = score;
        lat.start[end] = static_cast<int32_t>(pos);
        lat.piece[end] = piece;
      }
      if (end - pos == char_len) covers_one_char = true;
    }
    if (!covers_one_char) {
      const size_t end = pos + char_len;
      const double score = unk_score_ + here;
      if (lat.start[end] < 0 || score > lat.best[end]) {
        if (!unk_id_) return false;  // Hugging Face: MissingUnkId
        lat.best[end] = score;
        lat.start[end] = static_cast<int32_t>(pos);
        lat.piece[end] = -1;
      }
    }
    pos += char_len;
  }
  // Walk back from the end; then emit forwards, fusing runs of unknown pieces.
  lat.path.clear();
  for (size_t end = n; end > 0; end = static_cast<size_t>(lat.start[end])) lat.path.push_back(static_cast<uint32_t>(end));
  const size_t mark = ids.size();
  uint32_t begin = 0;
  for (size_t k = lat.path.size(); k-- > 0;) {
    const uint32_t end = lat.path[k];
    const bool unknown = lat.piece[end] < 0 || static_cast<uint32_t>(lat.piece[end]) == unk_id_;
    if (unknown) {
      // Extend to the end of the run of unknown pieces.
      uint32_t run_end = end;
      while (k > 0) {
        const uint32_t next = lat.path[k - 1];
        if (!(lat.piece[next] < 0 || static_cast<uint32_t>(lat.piece[next]) == unk_id_)) break;
        run_end = next;
        --k;
      }
      if (!EmitUnknown(word, begin, run_end, ids, ends)) {
        ids.resize(mark);
        ends.resize(mark);
        return false;
      }
      begin = run_end;
      continue;
    }
    ids.push_back(static_cast<uint32_t>(lat.piece[end]));
    ends.push_back(end);
    begin = end;
  }
  return true;
}

}  // namespace tokenbatch::tokenizer::internal
