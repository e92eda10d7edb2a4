// The SentencePiece-family components on small hand-made tokenizers whose right
// answers can be derived by hand (build_golden_test.cc compares real and trained
// files against Hugging Face), plus bad input: malformed Unigram vocabularies,
// corrupted Precompiled charsmaps, unknown ids in Decode.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "testing/build_paths.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::tokenizer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Offsets = std::vector<std::pair<uint32_t, uint32_t>>;

// A Unigram tokenizer over `pieces` (id = position) with a Metaspace
// pre-tokenizer and decoder; `<unk>` is id 0.
nlohmann::json UnigramJson(const std::vector<std::pair<std::string, double>>& pieces, bool byte_fallback = false) {
  nlohmann::json vocab = nlohmann::json::array();
  for (const auto& [p, s] : pieces) vocab.push_back({p, s});
  return {{"version", "1.0"},
          {"added_tokens", {{{"id", 0}, {"content", "<unk>"}, {"special", true}, {"normalized", false},
                             {"single_word", false}, {"lstrip", false}, {"rstrip", false}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}}},
          {"model", {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}, {"byte_fallback", byte_fallback}}}};
}

// `pieces` followed by SentencePiece's 256 byte pieces "<0x00>" .. "<0xFF>" (score 0).
std::vector<std::pair<std::string, double>> WithBytePieces(std::vector<std::pair<std::string, double>> pieces) {
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    pieces.emplace_back(name, 0);
  }
  return pieces;
}

std::unique_ptr<Tokenizer> FromJson(const nlohmann::json& j) {
  auto tok = Tokenizer::FromJson(j.dump());
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? std::move(*tok) : nullptr;
}

std::string LoadError(const nlohmann::json& j) {
  auto tok = Tokenizer::FromJson(j.dump());
  EXPECT_FALSE(tok.ok());
  if (tok.ok()) return "";
  EXPECT_EQ(GetErrorKind(tok.status()), ErrorKind::kInvalidArgument) << tok.status();
  return std::string(tok.status().message());
}

TEST(UnigramTest, ViterbiPicksTheHighestScoringSegmentation) {
  // "▁abc": ▁ab + c scores -1 - 1 = -2; ▁a + bc scores -1.5 - 0.4 = -1.9 (best);
  // ▁ + abc scores -3 - 0.5 = -3.5.
  auto tok = FromJson(UnigramJson({{"<unk>", 0}, {"\u2581ab", -1}, {"c", -1}, {"\u2581a", -1.5}, {"bc", -0.4},
                                   {"\u2581", -3}, {"abc", -0.5}, {"a", -5}, {"b", -5}}));
  ASSERT_NE(tok, nullptr);
  auto enc = tok->Encode("abc");
  ASSERT_TRUE(enc.ok());
  EXPECT_THAT(enc->ids, ElementsAre(3, 4));
  // The prepended ▁ has the first character's place: "▁a" covers "a".
  EXPECT_EQ(enc->offsets, (Offsets{{0, 1}, {1, 3}}));
}

TEST(UnigramTest, EqualScoresKeepTheFirstCandidateFound) {
  // "▁ab" (bytes: ▁ [0, 3), a [3, 4), b [4, 5)) is ▁ + ab or ▁a + b, both -2.
  // Positions are visited left to right, so the path ending in "ab" (from 3)
  // reaches the end before the one ending in "b" (from 4), and a tie keeps it.
  auto tok = FromJson(UnigramJson({{"<unk>", 0}, {"\u2581a", -1}, {"b", -1}, {"\u2581", -1}, {"ab", -1}}));
  ASSERT_NE(tok, nullptr);
  auto enc = tok->Encode("ab", {.add_special_tokens = false, .with_offsets = false});
  ASSERT_TRUE(enc.ok());
  EXPECT_THAT(enc->ids, ElementsAre(3, 4));
}

TEST(UnigramTest, UnknownCharactersAreFusedIntoOneToken) {
  auto tok = FromJson(UnigramJson({{"<unk>", 0}, {"\u2581", -1}, {"a", -1}}));
  ASSERT_NE(tok, nullptr);
  auto enc = tok->Encode("a\xC3\xA9\xC3\xA8" "a");  // a é è a
  ASSERT_TRUE(enc.ok());
  EXPECT_THAT(enc->ids, ElementsAre(1, 2, 0, 2));
  EXPECT_EQ(enc->offsets, (Offsets{{0, 1}, {0, 1}, {1, 5}, {5, 6}}));
}

TEST(UnigramTest, ByteFallbackGivesEveryByteTheWholeUnknownTextsOffsets) {
  auto tok = FromJson(UnigramJson(WithBytePieces({{"<unk>", 0}, {"\u2581", -1}, {"a", -1}}), /*byte_fallback=*/true));
  ASSERT_NE(tok, nullptr);
  auto enc = tok->Encode("a\xC3\xA9\xC3\xA8");  // a é è
  ASSERT_TRUE(enc.ok());
  // "éè" is unknown as a whole: its four bytes C3 A9 C3 A8, all at [1, 5).
  EXPECT_THAT(enc->ids, ElementsAre(1, 2, 3 + 0xC3, 3 + 0xA9, 3 + 0xC3, 3 + 0xA8));
  EXPECT_EQ(enc->offsets, (Offsets{{0, 1}, {0, 1}, {1, 5}, {1, 5}, {1, 5}, {1, 5}}));
  auto text = tok->Decode(enc->ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "a<0xC3><0xA9><0xC3><0xA8>");  // Metaspace alone does not turn <0xNN> back into bytes
}

TEST(UnigramTest, AModelWithoutUnkIdCannotEncodeUncoveredText) {
  auto j = UnigramJson({{"\u2581", -1}, {"a", -1}});
  j["model"]["unk_id"] = nullptr;
  j["added_tokens"] = nlohmann::json::array();
  auto tok = FromJson(j);
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->Encode("a a").ok());
  auto enc = tok->Encode("ab");
  ASSERT_FALSE(enc.ok());
  EXPECT_EQ(GetErrorKind(enc.status()), ErrorKind::kInvalidArgument);
  EXPECT_THAT(std::string(enc.status().message()), HasSubstr("no unk"));
  EXPECT_FALSE(tok->Count("ab").ok());
}

TEST(UnigramTest, MalformedVocabulariesAreRefused) {
  auto j = UnigramJson({{"<unk>", 0}, {"a", -1}});
  j["model"]["unk_id"] = 7;
  EXPECT_THAT(LoadError(j), HasSubstr("unk_id 7 is not in the vocab"));
  j = UnigramJson({{"<unk>", 0}, {"a", -1}});
  j["model"]["vocab"][1] = {"a"};
  EXPECT_THAT(LoadError(j), HasSubstr("entry 1 is not a [piece, score] pair"));
  j = UnigramJson({{"<unk>", 0}, {"", -1}});
  EXPECT_THAT(LoadError(j), HasSubstr("entry 1 is an empty piece"));
}

TEST(MetaspaceTest, PrependSchemesAndSplit) {
  auto j = UnigramJson({{"<unk>", 0}, {"\u2581", -1}, {"a", -1}, {"\u2581a", -1}, {"b", -1}});
  auto always = FromJson(j);
  j["pre_tokenizer"]["prepend_scheme"] = "never";
  auto never = FromJson(j);
  j["pre_tokenizer"]["prepend_scheme"] = "always";
  j["pre_tokenizer"]["split"] = false;
  auto whole = FromJson(j);
  ASSERT_TRUE(always && never && whole);
  EXPECT_THAT(always->Encode("a b", {.add_special_tokens = false})->ids, ElementsAre(3, 1, 4));
  EXPECT_THAT(never->Encode("a b", {.add_special_tokens = false})->ids, ElementsAre(2, 1, 4));
  EXPECT_THAT(whole->Encode("a b", {.add_special_tokens = false})->ids, ElementsAre(3, 1, 4));
  j["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  EXPECT_THAT(LoadError(j), HasSubstr("pre_tokenizer (Metaspace): unknown prepend_scheme sometimes"));
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}};
  EXPECT_THAT(LoadError(j), HasSubstr("replacement must be one character"));
  // The older add_prefix_space: false needs prepend_scheme "never" (which is not the default).
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"add_prefix_space", false}};
  EXPECT_THAT(LoadError(j), HasSubstr("add_prefix_space false contradicts prepend_scheme always"));
  j["pre_tokenizer"]["prepend_scheme"] = "never";
  EXPECT_NE(FromJson(j), nullptr);
}

TEST(DecodeTest, UnknownIdsAreAnErrorNamingThePosition) {
  auto tok = FromJson(UnigramJson({{"<unk>", 0}, {"\u2581", -1}, {"a", -1}}));
  ASSERT_NE(tok, nullptr);
  auto text = tok->Decode({1, 2, 3});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(GetErrorKind(text.status()), ErrorKind::kInvalidArgument);
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("id 3 at position 2"));
  EXPECT_EQ(*tok->Decode({}), "");
  EXPECT_EQ(*tok->Decode({0, 1, 2}, /*skip_special_tokens=*/true), "a");
  EXPECT_EQ(*tok->Decode({0, 1, 2}, /*skip_special_tokens=*/false), "<unk> a");
}

TEST(DecodeTest, ByteFallbackFuseAndStripDecoders) {
  auto j = UnigramJson(WithBytePieces({{"<unk>", 0}, {"\u2581", -1}, {"a", -1}}), true);
  // Llama's decoder: ▁ -> space, bytes back to text, one string, one leading space off.
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                {{"type", "ByteFallback"}},
                                {{"type", "Fuse"}},
                                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  auto tok = FromJson(j);
  ASSERT_NE(tok, nullptr);
  auto enc = tok->Encode("a \xC3\xA9");
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(*tok->Decode(enc->ids), "a \xC3\xA9");
  // Bytes that are not UTF-8 become one U+FFFD each.
  EXPECT_EQ(*tok->Decode({2, 3 + 0xC3, 2}), "a\xEF\xBF\xBD" "a");
}

TEST(ReplaceTest, EmptyMatchesInsertTheContentAsHuggingFaceDoes) {
  // Expected ids and offsets from Hugging Face tokenizers 0.23.2 on the same JSON.
  auto j = UnigramJson({{"<unk>", 0}, {"-", -1}, {"a", -1}, {"b", -1}});
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "x*"}}}, {"content", "-"}};
  j["pre_tokenizer"] = nullptr;
  j["decoder"] = nullptr;
  auto tok = FromJson(j);
  ASSERT_NE(tok, nullptr);
  auto ab = tok->Encode("ab");
  ASSERT_TRUE(ab.ok());
  EXPECT_THAT(ab->ids, ElementsAre(1, 2, 1, 3, 1));
  EXPECT_EQ(ab->offsets, (Offsets{{0, 0}, {0, 1}, {0, 1}, {1, 2}, {1, 2}}));
  auto axxb = tok->Encode("axxb");
  ASSERT_TRUE(axxb.ok());
  EXPECT_THAT(axxb->ids, ElementsAre(1, 2, 1, 3, 1));  // no empty match right after "xx"
  EXPECT_EQ(axxb->offsets, (Offsets{{0, 0}, {0, 1}, {2, 3}, {3, 4}, {3, 4}}));
  EXPECT_TRUE(tok->Encode("")->ids.empty());
}

TEST(DecodeTest, AnEmptyBpeSuffixMatchesEveryCharacterBoundary) {
  auto j = UnigramJson({{"<unk>", 0}, {"a", -1}, {"bc", -1}});
  j["decoder"] = {{"type", "BPEDecoder"}, {"suffix", ""}};
  auto tok = FromJson(j);
  ASSERT_NE(tok, nullptr);
  // Rust's str::replace("", " ") puts a space at every boundary of every token but the last.
  EXPECT_EQ(*tok->Decode({1, 1}, false), " a a");
  EXPECT_EQ(*tok->Decode({2, 1, 2}, false), " b c  a bc");
}

// A hand-built darts-clone charsmap mapping "a" to "b": root unit 0 leads to
// node 1; label 'a' sits at 1 ^ 'a' = 96 with a leaf whose value unit is at
// 96 ^ 98 = 2; the replacement blob is "b\0" (small enough to live inside a
// std::string object, so a view kept into it would dangle once the map moves).
std::string TinyCharsmap() {
  std::vector<uint32_t> units(97, 0);
  units[0] = 1u << 10;                                 // offset 1
  units[96] = (98u << 10) | (1u << 8) | 'a';           // offset 98, has a leaf, label 'a'
  units[2] = 0x80000000u;                              // leaf: value 0 (blob offset 0)
  std::string bytes;
  const auto put = [&](uint32_t v) { for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>((v >> (8 * k)) & 0xFF)); };
  put(static_cast<uint32_t>(units.size() * 4));
  for (const uint32_t u : units) put(u);
  bytes.append("b", 2);  // "b" and its NUL
  return bytes;
}

TEST(PrecompiledTest, ATinyCharsmapRewritesAfterTheTokenizerMoves) {
  auto j = UnigramJson({{"<unk>", 0}, {"\u2581", -1}, {"a", -1}, {"b", -1}, {"n", -1}});
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", absl::Base64Escape(TinyCharsmap())}};
  auto tok = FromJson(j);
  ASSERT_NE(tok, nullptr);
  auto enc = tok->Encode("banana", {.add_special_tokens = false});
  ASSERT_TRUE(enc.ok());
  EXPECT_THAT(enc->ids, ElementsAre(1, 3, 3, 4, 3, 4, 3));  // ▁ b b n b n b
  EXPECT_EQ(*tok->Decode(enc->ids), "bbnbnb");
}

// The charsmap of a real SentencePiece tokenizer (fetched by scripts/fetch_models.sh).
std::string RealCharsmap() {
  std::ifstream in(tokenbatch::testing::RealSentencePieceTokenizer());
  EXPECT_TRUE(in.good()) << tokenbatch::testing::RealSentencePieceTokenizer() << " is missing: run scripts/prepare_assets.sh";
  std::stringstream s;
  s << in.rdbuf();
  const auto j = nlohmann::json::parse(s.str());
  for (const auto& n : j.at("normalizer").at("normalizers")) {
    if (n.at("type") == "Precompiled") {
      std::string bytes;
      EXPECT_TRUE(absl::Base64Unescape(n.at("precompiled_charsmap").get<std::string>(), &bytes));
      return bytes;
    }
  }
  ADD_FAILURE() << "no Precompiled normalizer";
  return "";
}

nlohmann::json WithCharsmap(const std::string& bytes) {
  auto j = UnigramJson({{"<unk>", 0}, {"\u2581", -1}, {"a", -1}, {"fi", -1}, {"\u2581fi", -1}});
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", absl::Base64Escape(bytes)}};
  return j;
}

TEST(PrecompiledTest, TheRealCharsmapNormalisesAndAlignsToTheOriginal) {
  auto tok = FromJson(WithCharsmap(RealCharsmap()));
  ASSERT_NE(tok, nullptr);
  // U+FB01 (ﬁ, 3 bytes) becomes "fi" under NFKC; both characters point at it.
  auto enc = tok->Encode("\xEF\xAC\x81");
  ASSERT_TRUE(enc.ok());
  EXPECT_THAT(enc->ids, ElementsAre(4));
  EXPECT_EQ(enc->offsets, (Offsets{{0, 3}}));
}

TEST(PrecompiledTest, CorruptedCharsmapsAreErrorsNeverCrashes) {
  const std::string good = RealCharsmap();
  ASSERT_GT(good.size(), 1000u);
  EXPECT_THAT(LoadError(WithCharsmap(good.substr(0, 3))), HasSubstr("shorter than its 4-byte size field"));
  std::string big = good;
  big[3] = '\x7f';  // the trie size field claims ~2 GB
  EXPECT_THAT(LoadError(WithCharsmap(big)), HasSubstr("does not fit"));
  std::string bad_utf8 = good;
  bad_utf8.back() = '\xff';
  EXPECT_THAT(LoadError(WithCharsmap(bad_utf8)), HasSubstr("not valid UTF-8"));
  auto j = WithCharsmap(good);
  j["normalizer"]["precompiled_charsmap"] = "not base64!";
  EXPECT_THAT(LoadError(j), HasSubstr("not base64"));
  // Random corruption of the trie: each load either fails with a message or
  // gives a tokenizer that encodes without reading out of bounds (the
  // AddressSanitizer build of scripts/test.sh runs this test too).
  std::mt19937 rng(7);
  uint32_t trie_bytes = 0;
  for (int k = 3; k >= 0; --k) trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(good[static_cast<size_t>(k)]);
  int refused = 0;
  for (int round = 0; round < 200; ++round) {
    std::string bytes = good;
    for (int flips = 0; flips < 8; ++flips) {
      const size_t at = 4 + rng() % trie_bytes;
      bytes[at] = static_cast<char>(rng());
    }
    auto tok = Tokenizer::FromJson(WithCharsmap(bytes).dump());
    if (!tok.ok()) {
      ++refused;
      EXPECT_THAT(std::string(tok.status().message()), HasSubstr("precompiled_charsmap"));
      continue;
    }
    EXPECT_TRUE((*tok)->Encode("ﬁne Ｔｅｘｔ \xE2\x91\xA0 \xC3\xA9 caf\x65\xCC\x81 \t\r\n x").ok());
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace tokenbatch::tokenizer
