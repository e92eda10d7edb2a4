// The components that only generated tokenizers use (python/tests/
// test_tokenizer_differential.py fuzzes them against Hugging Face tokenizers):
// normalizers Nmt, StripAccents, ByteLevel; pre-tokenizers CharDelimiterSplit,
// Punctuation, Digits, FixedLength, UnicodeScripts; the WordLevel model; the CTC decoder; the
// word boundary of single_word added tokens; BPE's end_of_word_suffix on a
// byte-level vocabulary. Each expectation is what tokenizers 0.23.2 gives for
// the same tokenizer.json (its character offsets written here as bytes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::tokenizer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Offsets = std::vector<std::pair<uint32_t, uint32_t>>;

// A WordLevel tokenizer.json whose vocabulary is `words` (ids in order).
nlohmann::json WordLevelJson(const std::vector<std::string>& words, nlohmann::json normalizer,
                             nlohmann::json pre_tokenizer, nlohmann::json decoder = nullptr) {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < words.size(); ++i) vocab[words[i]] = i;
  return {{"version", "1.0"}, {"added_tokens", nlohmann::json::array()}, {"normalizer", std::move(normalizer)},
          {"pre_tokenizer", std::move(pre_tokenizer)}, {"post_processor", nullptr}, {"decoder", std::move(decoder)},
          {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
}

std::unique_ptr<Tokenizer> Load(const nlohmann::json& j) {
  auto tok = Tokenizer::FromJson(j.dump());
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? std::move(*tok) : nullptr;
}

Encoding Encode(const Tokenizer& tok, std::string_view text) {
  auto e = tok.Encode(text, {.add_special_tokens = false, .with_offsets = true});
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *e : Encoding{};
}

const nlohmann::json kCharByChar = {{"type", "FixedLength"}, {"length", 1}};

TEST(NormalizerComponentsTest, NmtRemovesControlsAndMakesSpaces) {
  auto tok = Load(WordLevelJson({"<unk>", "a", "b", " "}, {{"type", "Nmt"}}, kCharByChar));
  ASSERT_NE(tok, nullptr);
  const Encoding e = Encode(*tok, "a\x01" "b\tb\u200d" "b");
  EXPECT_THAT(e.ids, ElementsAre(1, 2, 3, 2, 3, 2));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {2, 3}, {3, 4}, {4, 5}, {5, 8}, {8, 9}}));
  EXPECT_THAT(Encode(*tok, "\ufeff" "a\u2581").ids, ElementsAre(3, 1, 3));
}

TEST(NormalizerComponentsTest, StripAccentsRemovesEveryMark) {
  const nlohmann::json nfd_strip = {{"type", "Sequence"},
                                    {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}}}};
  auto tok = Load(WordLevelJson({"<unk>", "a", "e"}, nfd_strip, kCharByChar));
  ASSERT_NE(tok, nullptr);
  const Encoding e = Encode(*tok, "\u00e0\u00e9\u0903");  // U+0903 is Mc: removed too
  EXPECT_THAT(e.ids, ElementsAre(1, 2));
  EXPECT_EQ(e.offsets, (Offsets{{0, 2}, {2, 4}}));
}

TEST(NormalizerComponentsTest, ByteLevelWritesEveryByteInGpt2sAlphabet) {
  auto tok = Load(WordLevelJson({"<unk>", "a", "\u00c3", "\u00a9"}, {{"type", "ByteLevel"}}, kCharByChar));
  ASSERT_NE(tok, nullptr);
  const Encoding e = Encode(*tok, "a\u00a9");  // bytes C2 A9: U+00C2 (not in vocab), U+00A9
  EXPECT_THAT(e.ids, ElementsAre(1, 0, 3));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 3}, {1, 3}}));
}

TEST(PreTokenizerComponentsTest, CharDelimiterSplitRemovesTheDelimiter) {
  auto tok = Load(WordLevelJson({"<unk>", "ab", "c", "d"}, nullptr, {{"type", "CharDelimiterSplit"}, {"delimiter", "|"}}));
  ASSERT_NE(tok, nullptr);
  const Encoding e = Encode(*tok, "ab|c||d");
  EXPECT_THAT(e.ids, ElementsAre(1, 2, 3));
  EXPECT_EQ(e.offsets, (Offsets{{0, 2}, {3, 4}, {6, 7}}));
}

TEST(PreTokenizerComponentsTest, PunctuationKeepsEveryBehaviour) {
  const std::vector<std::pair<std::string, std::vector<uint32_t>>> cases = {
      {"Removed", {1, 1}}, {"Isolated", {1, 2, 2, 1}}, {"MergedWithPrevious", {3, 2, 1}},
      {"MergedWithNext", {1, 2, 4}}, {"Contiguous", {1, 5, 1}}};
  for (const auto& [behavior, ids] : cases) {
    auto tok = Load(WordLevelJson({"<unk>", "a", "!", "a!", "!a", "!!"}, nullptr,
                                  {{"type", "Punctuation"}, {"behavior", behavior}}));
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(Encode(*tok, "a!!a").ids, ids) << behavior;
  }
}

TEST(PreTokenizerComponentsTest, DigitsSplitsOnEveryNumericCharacter) {
  const std::vector<std::string> vocab = {"<unk>", "a", "1", "12", "\u0663"};
  auto each = Load(WordLevelJson(vocab, nullptr, {{"type", "Digits"}, {"individual_digits", true}}));
  auto runs = Load(WordLevelJson(vocab, nullptr, {{"type", "Digits"}, {"individual_digits", false}}));
  ASSERT_NE(each, nullptr);
  ASSERT_NE(runs, nullptr);
  // U+0663 ARABIC-INDIC DIGIT THREE (Nd) and U+2163 ROMAN NUMERAL FOUR (Nl) are numeric.
  const std::string text = "a12\u0663\u2163a";
  EXPECT_THAT(Encode(*each, text).ids, ElementsAre(1, 2, 0, 4, 0, 1));
  const Encoding e = Encode(*runs, text);
  EXPECT_THAT(e.ids, ElementsAre(1, 0, 1));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 8}, {8, 9}}));
}

TEST(PreTokenizerComponentsTest, FixedLengthCutsCharactersNotBytes) {
  auto tok = Load(WordLevelJson({"<unk>", "abc", "de", "\u65e5\u672c\u8a9e"}, nullptr, {{"type", "FixedLength"}, {"length", 3}}));
  ASSERT_NE(tok, nullptr);
  const Encoding e = Encode(*tok, "abcde\u65e5\u672c\u8a9ex");
  EXPECT_THAT(e.ids, ElementsAre(1, 0, 0));
  EXPECT_EQ(e.offsets, (Offsets{{0, 3}, {3, 8}, {8, 15}}));
}

// UnicodeScripts cuts where the script changes; ' ' and characters its table
// does not list (U+0378 is unassigned) join any script; Hiragana, Katakana and
// U+30FC count as Han; digits and punctuation are Common, combining marks
// Inherited. What comes before the first character of a script is dropped,
// as a word of spaces only is. Every expectation below is what tokenizers
// 0.23.2 gives for the same tokenizer.json.
const std::vector<std::string> kScriptVocab = {
    "<unk>", "Hello ", "\u043c\u0438\u0440 ", "\u4e16\u754c\u3072\u3089\u304c\u306a\u30ab\u30bf\u30ab\u30ca\u30fc ",
    "123 ", "ok", "e", "\u0301", "\u2581", "a", "\u0431"};
const nlohmann::json kUnicodeScripts = {{"type", "UnicodeScripts"}};

TEST(PreTokenizerComponentsTest, UnicodeScriptsCutsWhereTheScriptChanges) {
  auto tok = Load(WordLevelJson(kScriptVocab, nullptr, kUnicodeScripts));
  ASSERT_NE(tok, nullptr);
  Encoding e = Encode(*tok, "  Hello \u043c\u0438\u0440 \u4e16\u754c\u3072\u3089\u304c\u306a\u30ab\u30bf\u30ab\u30ca\u30fc 123 ok");
  EXPECT_THAT(e.ids, ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(e.offsets, (Offsets{{2, 8}, {8, 15}, {15, 49}, {49, 53}, {53, 55}}));
  e = Encode(*tok, "e\u0301");
  EXPECT_THAT(e.ids, ElementsAre(6, 7));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 3}}));
  e = Encode(*tok, "a \u0378\u0431\t a");
  EXPECT_THAT(e.ids, ElementsAre(0, 10, 0, 9));
  EXPECT_EQ(e.offsets, (Offsets{{0, 4}, {4, 6}, {6, 8}, {8, 9}}));
  EXPECT_THAT(Encode(*tok, "   ").ids, ElementsAre());
}

TEST(PreTokenizerComponentsTest, UnicodeScriptsInASequence) {
  const nlohmann::json split_then_scripts = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "WhitespaceSplit"}}, kUnicodeScripts, {{"type", "Digits"}, {"individual_digits", true}}}}};
  auto tok = Load(WordLevelJson(kScriptVocab, nullptr, split_then_scripts));
  ASSERT_NE(tok, nullptr);
  Encoding e = Encode(*tok, "Hello \u043c\u0438\u0440\u4e16\u754c a12\u0431 ok");
  EXPECT_THAT(e.ids, ElementsAre(0, 0, 0, 9, 0, 0, 10, 5));
  EXPECT_EQ(e.offsets, (Offsets{{0, 5}, {6, 12}, {12, 18}, {19, 20}, {20, 21}, {21, 22}, {22, 24}, {25, 27}}));
  // Metaspace's U+2581 is Common, so it cuts after the text is rewritten.
  const nlohmann::json metaspace_then_scripts = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", false}},
                         kUnicodeScripts}}};
  tok = Load(WordLevelJson(kScriptVocab, nullptr, metaspace_then_scripts));
  ASSERT_NE(tok, nullptr);
  e = Encode(*tok, "Hello \u043c\u0438\u0440 ok");
  EXPECT_THAT(e.ids, ElementsAre(8, 0, 8, 0, 8, 5));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {0, 5}, {5, 6}, {6, 12}, {12, 13}, {13, 15}}));
  // The leading space is dropped, so the first word no longer starts the input.
  const nlohmann::json scripts_then_metaspace = {
      {"type", "Sequence"},
      {"pretokenizers", {kUnicodeScripts, {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"},
                                           {"split", true}}}}};
  tok = Load(WordLevelJson(kScriptVocab, nullptr, scripts_then_metaspace));
  ASSERT_NE(tok, nullptr);
  e = Encode(*tok, " Hello \u043c\u0438\u0440 ok");
  EXPECT_THAT(e.ids, ElementsAre(0, 8, 0, 8, 5));
  EXPECT_EQ(e.offsets, (Offsets{{1, 6}, {6, 7}, {7, 13}, {13, 14}, {14, 16}}));
}

TEST(ComponentOptionsTest, MalformedOptionsAreRefusedNamingTheComponent) {
  const auto error = [](const nlohmann::json& pre) {
    auto tok = Tokenizer::FromJson(WordLevelJson({"<unk>"}, nullptr, pre).dump());
    EXPECT_FALSE(tok.ok());
    return tok.ok() ? std::string() : std::string(tok.status().message());
  };
  EXPECT_THAT(error({{"type", "CharDelimiterSplit"}, {"delimiter", "ab"}}), HasSubstr("CharDelimiterSplit"));
  EXPECT_THAT(error({{"type", "FixedLength"}, {"length", 0}}), HasSubstr("FixedLength"));
  EXPECT_THAT(error({{"type", "Punctuation"}, {"behavior", "Sideways"}}), HasSubstr("Punctuation behavior Sideways"));
  EXPECT_THAT(error({{"type", "ByteLevel"}}), HasSubstr("WordLevel model with ByteLevel"));
}

TEST(WordLevelTest, UnknownWordsNeedTheUnkToken) {
  auto j = WordLevelJson({"a"}, nullptr, {{"type", "WhitespaceSplit"}});
  auto tok = Load(j);
  ASSERT_NE(tok, nullptr);
  EXPECT_THAT(Encode(*tok, "a a").ids, ElementsAre(0, 0));
  auto missing = tok->Encode("a b");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(GetErrorKind(missing.status()), ErrorKind::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("\"b\""));
}

TEST(CtcDecoderTest, CollapsesRepeatsThenDropsPadsAndMakesWordDelimitersSpaces) {
  auto tok = Load(WordLevelJson({"<unk>", "<pad>", "|", "h", "i"}, nullptr, nullptr, {{"type", "CTC"}}));
  ASSERT_NE(tok, nullptr);
  auto text = tok->Decode({3, 3, 1, 3, 4, 2, 2, 4, 1}, false);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "hhi i");
}

// Hugging Face's boundary is the regex crate's \w: Alphabetic (letter numbers,
// circled letters), marks, Nd, Pc and Join_Control, not only letters and digits.
TEST(AddedTokenTest, SingleWordBoundaryIsTheRegexCratesWordClass) {
  auto j = WordLevelJson({"<unk>", "x"}, nullptr, {{"type", "WhitespaceSplit"}});
  j["added_tokens"] = {{{"id", 2}, {"content", "<s>"}, {"single_word", true}, {"lstrip", false}, {"rstrip", false},
                        {"normalized", false}, {"special", false}}};
  auto tok = Load(j);
  ASSERT_NE(tok, nullptr);
  for (const std::string glued : {"<s>\u200d", "\u2163<s>", "\u24b6<s>", "\u3007<s>", "\u0301<s>", "_<s>",
                                  "\u203f<s>", "\u0663<s>"}) {
    EXPECT_THAT(Encode(*tok, glued).ids, ElementsAre(0)) << glued;
  }
  EXPECT_THAT(Encode(*tok, "x <s> x").ids, ElementsAre(1, 2, 1));
  EXPECT_THAT(Encode(*tok, "-<s>-").ids, ElementsAre(0, 2, 0));
}

TEST(AddedTokenTest, ADiscardedSingleWordMatchHidesShorterTokensInsideIt) {
  auto j = WordLevelJson({"<unk>", "x"}, nullptr, {{"type", "WhitespaceSplit"}});
  j["added_tokens"] = {{{"id", 2}, {"content", "ab"}, {"single_word", true}, {"normalized", false}, {"special", false}},
                       {{"id", 3}, {"content", "a"}, {"single_word", false}, {"normalized", false}, {"special", false}}};
  auto tok = Load(j);
  ASSERT_NE(tok, nullptr);
  const Encoding e = Encode(*tok, "abx");
  EXPECT_THAT(e.ids, ElementsAre(0));
  EXPECT_EQ(e.offsets, (Offsets{{0, 3}}));
  EXPECT_THAT(Encode(*tok, "ab").ids, ElementsAre(2));
}

}  // namespace
}  // namespace tokenbatch::tokenizer
