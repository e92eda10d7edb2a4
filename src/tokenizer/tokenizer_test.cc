// Behaviour of the Tokenizer API beyond id exactness (golden_test.cc covers that):
// load errors naming the unsupported component, invalid UTF-8, truncation that
// keeps special tokens, sliding windows, and concurrent use of one Tokenizer.
#include "tokenbatch/tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "nlohmann/json.hpp"
#include "testing/build_paths.h"
#include "testing/tokenizer_data.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::tokenizer {
namespace {

using ::testing::HasSubstr;

const std::string kData = tokenbatch::testing::TestDataDir() + "/tokenizer";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<Tokenizer> Load(const std::string& name) {
  const std::string path = testing::TestTokenizerPath(name);
  EXPECT_TRUE(std::filesystem::exists(path)) << path << " is missing: the tests read the shared tokenizer data (src/testing/tokenizer_data.h)";
  auto tok = Tokenizer::FromFile(path);
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? std::move(*tok) : nullptr;
}

// The small synthetic tokenizer with one field replaced.
std::string SyntheticWith(const std::string& field, const nlohmann::json& value) {
  auto j = nlohmann::json::parse(ReadFile(kData + "/synthetic/subword_prefix_bpe.json"));
  if (field.rfind("model.", 0) == 0) {
    j["model"][field.substr(6)] = value;
  } else {
    j[field] = value;
  }
  return j.dump();
}

std::string LoadError(const std::string& json) {
  auto tok = Tokenizer::FromJson(json);
  EXPECT_FALSE(tok.ok());
  if (tok.ok()) return "";
  EXPECT_EQ(GetErrorKind(tok.status()), ErrorKind::kInvalidArgument) << tok.status();
  return std::string(tok.status().message());
}

TEST(TokenizerLoadTest, RefusesUnsupportedComponentsByNameAndJsonPath) {
  EXPECT_THAT(LoadError(SyntheticWith("model", {{"type", "Bigram"}, {"vocab", nlohmann::json::array()}})),
              HasSubstr("unsupported model: Bigram at model.type"));
  EXPECT_THAT(LoadError(SyntheticWith("normalizer", {{"type", "Precompiledd"}})),
              HasSubstr("unsupported normalizer: Precompiledd at normalizer"));
  EXPECT_THAT(LoadError(SyntheticWith("normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Unknown"}}}}})),
              HasSubstr("unsupported normalizer: Unknown at normalizer.normalizers[1]"));
  EXPECT_THAT(LoadError(SyntheticWith("pre_tokenizer", {{"type", "Sequence"},
                                                        {"pretokenizers", {{{"type", "UnicodeScripts"}}, {{"type", "Scripts"}}}}})),
              HasSubstr("unsupported pre_tokenizer: Scripts at pre_tokenizer.pretokenizers[1]"));
  EXPECT_THAT(LoadError(SyntheticWith("decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "Fuse"}}, {{"type", "Wav"}}}}})),
              HasSubstr("unsupported decoder: Wav at decoder.decoders[1]"));
  EXPECT_THAT(LoadError(SyntheticWith("post_processor", {{"type", "Fancy"}})),
              HasSubstr("unsupported post_processor: Fancy at post_processor"));
  EXPECT_THAT(LoadError(SyntheticWith("normalizer", {{"type", "BertNormalizer"}, {"separate_numbers", true}})),
              HasSubstr("separate_numbers"));
  EXPECT_THAT(LoadError(SyntheticWith("pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}},
                                                        {"behavior", "Isolated"}})),
              HasSubstr("invalid regex"));
  EXPECT_THAT(LoadError(SyntheticWith("model.merges", nlohmann::json::array({nlohmann::json::array({"t", "##nothere"})}))), HasSubstr("not in vocab"));
}

// UnicodeScripts alone and in a Sequence; the ids and offsets are what
// tokenizers 0.23.2 gives for the same files.
TEST(TokenizerLoadTest, UnicodeScriptsSplitsAloneAndInASequence) {
  const nlohmann::json scripts = {{"type", "UnicodeScripts"}};
  auto alone = Tokenizer::FromJson(SyntheticWith("pre_tokenizer", scripts));
  auto sequence = Tokenizer::FromJson(SyntheticWith(
      "pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}, scripts}}}));
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_TRUE(sequence.ok()) << sequence.status();
  const EncodeOptions options{.add_special_tokens = false, .with_offsets = true};
  // Spaces join the Latin word before them; '-' and '.' are Common.
  auto e = (*sequence)->Encode("the world-the world.", options);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->ids, (std::vector<uint32_t>{31, 48, 0, 31, 48, 0}));
  EXPECT_EQ(e->offsets, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 3}, {4, 9}, {9, 10}, {10, 13}, {14, 19}, {19, 20}}));
  e = (*alone)->Encode("world  the", options);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->ids, (std::vector<uint32_t>{47, 10, 0, 6, 4, 30}));
  EXPECT_EQ(e->offsets, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 4}, {4, 5}, {5, 7}, {7, 8}, {8, 9}, {9, 10}}));
}

// BPE dropout randomises training only: a file carrying it encodes as without it.
TEST(TokenizerLoadTest, BpeDropoutIsIgnoredAtInference) {
  auto with = Tokenizer::FromJson(SyntheticWith("model.dropout", 0.1));
  auto without = Tokenizer::FromJson(SyntheticWith("model.dropout", nullptr));
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_TRUE(without.ok()) << without.status();
  for (int i = 0; i < 20; ++i) EXPECT_EQ((*with)->Encode("the world the world")->ids, (*without)->Encode("the world the world")->ids);
  EXPECT_GT((*with)->Encode("the world the world")->ids.size(), 0u);
}

TEST(TokenizerLoadTest, ExposesTheFilesTruncationLengthWithoutApplyingIt) {
  auto plain = Tokenizer::FromJson(SyntheticWith("truncation", nullptr));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->FileMaxLength(), std::nullopt);
  auto limited = Tokenizer::FromJson(SyntheticWith(
      "truncation", {{"max_length", 3}, {"strategy", "LongestFirst"}, {"stride", 0}, {"direction", "Right"}}));
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_EQ((*limited)->FileMaxLength(), 3u);
  EXPECT_EQ(*(*limited)->Count("the world the world"), 4u);  // full count, not cut to 3
}

// Ids, indexes and lengths must be whole numbers in range: a float or a
// negative was converted with a cast (undefined behaviour for 1e300, found by
// fuzz/tokenizer_json_fuzz.cc), and is now refused naming the field.
TEST(TokenizerLoadTest, NumbersThatAreNotWholeOrInRangeAreRefused) {
  auto vocab_with = [](const nlohmann::json& id) {
    auto j = nlohmann::json::parse(SyntheticWith("truncation", nullptr));
    j["model"]["vocab"]["zzz"] = id;
    return j.dump();
  };
  for (const nlohmann::json& id :
       {nlohmann::json(1e300), nlohmann::json(-1), nlohmann::json(2.5), nlohmann::json(std::uint64_t{1} << 40)}) {
    EXPECT_THAT(LoadError(vocab_with(id)), HasSubstr("BPE vocab id of zzz must be a whole number")) << id;
  }
  EXPECT_THAT(LoadError(SyntheticWith("truncation", {{"max_length", -3}})),
              HasSubstr("truncation max_length must be a whole number"));
  EXPECT_THAT(LoadError(SyntheticWith("truncation", {{"max_length", 1e100}})),
              HasSubstr("truncation max_length must be a whole number"));
  EXPECT_THAT(LoadError(SyntheticWith("post_processor",
                                      {{"type", "BertProcessing"}, {"cls", {"[CLS]", 1e30}}, {"sep", {"[SEP]", 1}}})),
              HasSubstr("BertProcessing cls id must be a whole number"));
  EXPECT_THAT(LoadError(SyntheticWith("decoder", {{"type", "Strip"}, {"content", " "}, {"start", -1}, {"stop", 0}})),
              HasSubstr("(Strip) start must be a whole number"));
}

// A special token the post-processor adds must exist: an id outside the
// vocabulary would reach the model as a row it does not have.
TEST(TokenizerLoadTest, PostProcessorIdsOutsideTheVocabularyAreRefused) {
  EXPECT_THAT(LoadError(SyntheticWith("post_processor",
                                      {{"type", "BertProcessing"}, {"cls", {"[CLS]", 99999}}, {"sep", {"[SEP]", 1}}})),
              HasSubstr("post_processor special token id 99999 is neither in the model's vocabulary"));
}

TEST(TokenizerLoadTest, MalformedJsonAndMissingFile) {
  EXPECT_THAT(LoadError("{not json"), HasSubstr("malformed tokenizer.json"));
  EXPECT_THAT(LoadError("[1, 2]"), HasSubstr("not a JSON object"));
  EXPECT_THAT(LoadError(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})"), HasSubstr("malformed"));  // no merges
  auto missing = Tokenizer::FromFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(TokenizerEncodeTest, InvalidUtf8IsAClearErrorNamingTheOffset) {
  auto tok = Load("qwen3");
  ASSERT_NE(tok, nullptr);
  const std::pair<std::string, std::string> cases[] = {
      {std::string("ok \xff"), "byte offset 3"},          // not a lead byte
      {std::string("ab\xe4\xbd"), "byte offset 2"},       // truncated 3-byte sequence
      {std::string("\xc0\xaf"), "byte offset 0"},         // overlong '/'
      {std::string("x\xed\xa0\x80y"), "byte offset 1"},  // UTF-16 surrogate
      {std::string("\xf4\x90\x80\x80"), "byte offset 0"}, // above U+10FFFF
  };
  for (const auto& [text, where] : cases) {
    auto enc = tok->Encode(text);
    ASSERT_FALSE(enc.ok());
    EXPECT_EQ(GetErrorKind(enc.status()), ErrorKind::kInvalidArgument);
    EXPECT_THAT(std::string(enc.status().message()), HasSubstr(where));
    auto count = tok->Count(text);
    ASSERT_FALSE(count.ok());
    EXPECT_EQ(GetErrorKind(count.status()), ErrorKind::kInvalidArgument);
  }
}

TEST(TokenizerEncodeTest, CountEqualsEncodeSizeAndSpecialTokenCount) {
  auto bert = Load("bert");
  ASSERT_NE(bert, nullptr);
  EXPECT_EQ(bert->NumSpecialTokens(), 2u);
  EXPECT_EQ(bert->NumSpecialTokens(false), 0u);
  auto enc = bert->Encode("Hello, world!");
  ASSERT_TRUE(enc.ok());
  // bert-base-uncased: [CLS] hello , world ! [SEP]
  EXPECT_EQ(enc->ids, (std::vector<uint32_t>{101, 7592, 1010, 2088, 999, 102}));
  EXPECT_EQ(enc->special, (std::vector<uint8_t>{1, 0, 0, 0, 0, 1}));
  EXPECT_EQ(enc->offsets[1], std::make_pair(0u, 5u));
  EXPECT_EQ(*bert->Count("Hello, world!"), 6u);
  EXPECT_EQ(*bert->Count("Hello, world!", false), 4u);
  EXPECT_EQ(*bert->Count(""), 2u);
  EXPECT_EQ(bert->TokenToId("[CLS]"), 101u);
  EXPECT_EQ(bert->TokenToId("hello"), 7592u);
  EXPECT_EQ(bert->TokenToId("no-such-token"), std::nullopt);
  EXPECT_EQ(bert->VocabSize(), 30522u);
}

TEST(TokenizerTruncateTest, KeepsSpecialTokensAndCutsTheText) {
  auto bert = Load("bert");
  ASSERT_NE(bert, nullptr);
  const std::string text = "the quick brown fox jumps over the lazy dog again and again";
  auto full = bert->Encode(text);
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->ids.size(), 8u);
  auto cut = bert->EncodeTruncated(text, 8);
  ASSERT_TRUE(cut.ok());
  ASSERT_EQ(cut->ids.size(), 8u);
  EXPECT_EQ(cut->ids.front(), 101u);
  EXPECT_EQ(cut->ids.back(), 102u);
  EXPECT_EQ(std::vector<uint32_t>(cut->ids.begin() + 1, cut->ids.end() - 1),
            std::vector<uint32_t>(full->ids.begin() + 1, full->ids.begin() + 7));
  EXPECT_EQ(cut->offsets[6], full->offsets[6]);
  // Room for everything: unchanged.
  EXPECT_EQ(bert->EncodeTruncated(text, 1000)->ids, full->ids);
  // Exactly the special tokens.
  EXPECT_EQ(bert->EncodeTruncated(text, 2)->ids, (std::vector<uint32_t>{101, 102}));
  auto too_small = bert->EncodeTruncated(text, 1);
  ASSERT_FALSE(too_small.ok());
  EXPECT_EQ(GetErrorKind(too_small.status()), ErrorKind::kInvalidArgument);
  // Without special tokens, max_tokens counts text tokens only.
  EXPECT_EQ(bert->EncodeTruncated(text, 3, {.add_special_tokens = false})->ids,
            std::vector<uint32_t>(full->ids.begin() + 1, full->ids.begin() + 4));
}

TEST(TokenizerWindowsTest, OverlappingWindowsCoverTheTextWithSpecialTokens) {
  auto bert = Load("bert");
  ASSERT_NE(bert, nullptr);
  std::string text;
  for (int i = 0; i < 12; ++i) text += "token batching packs requests by budget. ";
  auto plain = bert->Encode(text, {.add_special_tokens = false});
  ASSERT_TRUE(plain.ok());
  const size_t n = plain->ids.size();
  ASSERT_GT(n, 60u);
  auto windows = bert->EncodeWindows(text, 12, 3);  // 10 text tokens per window, stride 7
  ASSERT_TRUE(windows.ok()) << windows.status();
  ASSERT_EQ(windows->size(), (n - 10 + 6) / 7 + 1);
  for (size_t k = 0; k < windows->size(); ++k) {
    const Encoding& w = (*windows)[k];
    ASSERT_LE(w.ids.size(), 12u);
    EXPECT_EQ(w.ids.front(), 101u);
    EXPECT_EQ(w.ids.back(), 102u);
    const size_t begin = k * 7;
    const size_t end = std::min(n, begin + 10);
    EXPECT_EQ(std::vector<uint32_t>(w.ids.begin() + 1, w.ids.end() - 1),
              std::vector<uint32_t>(plain->ids.begin() + begin, plain->ids.begin() + end));
    EXPECT_EQ(w.offsets[1], plain->offsets[begin]);
    if (k + 1 == windows->size()) {
      EXPECT_EQ(end, n);
    }
  }
  // A short text is one window; an empty text is one window of special tokens.
  EXPECT_EQ(bert->EncodeWindows("hi", 12, 3)->size(), 1u);
  EXPECT_EQ(bert->EncodeWindows("", 12, 3)->front().ids, (std::vector<uint32_t>{101, 102}));
  EXPECT_EQ(GetErrorKind(bert->EncodeWindows(text, 2, 0).status()), ErrorKind::kInvalidArgument);
  EXPECT_EQ(GetErrorKind(bert->EncodeWindows(text, 12, 10).status()), ErrorKind::kInvalidArgument);
}

// Random valid UTF-8 from a mix of scripts, marks, emoji, whitespace and special
// strings: Count must equal Encode's size, and every offset must lie inside the
// text, begin <= end, with text tokens in non-decreasing order.
TEST(TokenizerEncodeTest, RandomTextKeepsCountAndOffsetInvariants) {
  const std::vector<std::string> decoded = {
      "a", "Z", "q", " ", "  ", "\t", "\n", "\r\n", "'s", "'LL", "1", "42", "中", "文", "。", "é", "e\u0301",
      "\u0308", "👍", "🏽", "\u200d", "👩", "ｆ", "\u3000", "\u00a0", "ß", "İ", "Σ", "[SEP]", "<|im_end|>", "<|", "!",
      "...", "\u2028", std::string(1, '\0'), "\ufffd", "\U0002A700", "\U0001FAE8", "\uF900", "ﬁ", "한", "\u1100\u1161"};
  uint64_t state = 12345;
  const auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>(state >> 33);
  };
  for (const std::string name : {"qwen3", "llama3", "bert"}) {
    auto tok = Load(name);
    ASSERT_NE(tok, nullptr);
    for (int iter = 0; iter < 300; ++iter) {
      std::string text;
      const size_t n = next() % 40;
      for (size_t k = 0; k < n; ++k) text += decoded[next() % decoded.size()];
      auto enc = tok->Encode(text);
      auto count = tok->Count(text);
      ASSERT_TRUE(enc.ok() && count.ok()) << name << ": " << nlohmann::json(text).dump();
      EXPECT_EQ(*count, enc->ids.size()) << name << ": " << nlohmann::json(text).dump();
      ASSERT_EQ(enc->offsets.size(), enc->ids.size());
      uint32_t last_begin = 0;
      for (size_t i = 0; i < enc->ids.size(); ++i) {
        const auto [b, e] = enc->offsets[i];
        EXPECT_LE(b, e);
        EXPECT_LE(e, text.size());
        if (enc->special[i] == 0) {
          EXPECT_GE(b, last_begin) << name << ": " << nlohmann::json(text).dump();
          last_begin = b;
        }
      }
    }
  }
}

TEST(TokenizerConcurrencyTest, SharedTokenizerGivesTheSameCountsFromManyThreads) {
  auto qwen = Load("qwen3");
  ASSERT_NE(qwen, nullptr);
  std::vector<std::string> texts;
  std::ifstream in(kData + "/realtext.jsonl");
  std::string line;
  while (std::getline(in, line) && texts.size() < 400) texts.push_back(nlohmann::json::parse(line).at("text"));
  ASSERT_EQ(texts.size(), 400u);
  // Reference: a fresh tokenizer, one thread, Encode (no cache hits yet).
  auto fresh = Load("qwen3");
  std::vector<std::vector<uint32_t>> expected;
  for (const auto& t : texts) expected.push_back(fresh->Encode(t, {.with_offsets = false})->ids);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (size_t i = 0; i < texts.size(); ++i) {
        const size_t k = (i * 7 + static_cast<size_t>(th) * 101) % texts.size();  // different orders per thread
        auto c = qwen->Count(texts[k]);
        auto e = qwen->Encode(texts[k], {.with_offsets = false});
        if (!c.ok() || !e.ok() || *c != expected[k].size() || e->ids != expected[k]) ++mismatches[th];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace tokenbatch::tokenizer
