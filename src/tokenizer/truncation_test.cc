// EncodeTruncated, which tokenises only the part of a long text that holds the
// tokens it keeps, against Encode of the whole text followed by the cut: ids,
// byte offsets and the special mask, for every test tokenizer, both sides, and
// cuts at many places of long texts built to put hard cases near the cuts
// (whitespace runs longer than the cut margin, added tokens, combining marks,
// scripts without spaces).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/test_tokenizers.h"
#include "tokenizer/tokenizer_impl.h"

namespace tokenbatch::tokenizer {
namespace {

using testing::ReadJsonl;

// `all` (Encode of a text with special tokens and offsets) with as many text
// tokens removed from the cut end as leave max_tokens: what EncodeTruncated
// must equal.
Encoding Cut(const Encoding& all, size_t max_tokens, TruncationSide side) {
  Encoding out;
  size_t remove = all.ids.size() > max_tokens ? all.ids.size() - max_tokens : 0;
  std::vector<bool> removed(all.ids.size(), false);
  for (size_t k = 0; k < all.ids.size() && remove > 0; ++k) {
    const size_t i = side == TruncationSide::kRight ? all.ids.size() - 1 - k : k;
    if (all.special[i] == 0) removed[i] = true, --remove;
  }
  for (size_t i = 0; i < all.ids.size(); ++i) {
    if (removed[i]) continue;
    out.ids.push_back(all.ids[i]);
    out.offsets.push_back(all.offsets[i]);
    out.special.push_back(all.special[i]);
  }
  return out;
}

// Long texts (beyond what is encoded whole) from the committed real texts,
// joined by separators that are hard to cut near: runs of spaces and newlines
// up to past the cut margin, the tokenizer's added tokens as written,
// combining marks, emoji, runs of CJK without spaces, and runs of digits
// (which Llama 3 groups by threes from a run's first digit). Every other text is
// sparse in tokens (each separator a long whitespace run), so that the tokens
// kept reach the cut of a chunk and the words near it are tested.
std::vector<std::string> LongTexts(const nlohmann::json& tokenizer_json, unsigned seed, size_t smallest,
                                   int count) {
  static const std::vector<std::string> pieces = [] {
    std::vector<std::string> out;
    for (const char* file : {"corpus.jsonl", "realtext.jsonl", "realtext_multilingual.jsonl"}) {
      for (const auto& t : ReadJsonl(testing::kTokenizerTestData + "/" + file)) out.push_back(t.at("text"));
    }
    return out;
  }();
  std::vector<std::string> added;
  if (tokenizer_json.contains("added_tokens")) {
    for (const auto& t : tokenizer_json.at("added_tokens")) added.push_back(t.at("content"));
  }
  const std::vector<std::string> separators = {" ", "\n", "\n\n", "  ", "\t", " \u0301", "\u00e9\u0301\u0323",
                                               " \U0001F600 ", "\u4e2d\u6587\u6ca1\u6709\u7a7a\u683c", ". ", "\r\n"};
  std::mt19937 rng(seed);
  std::vector<std::string> texts;
  for (int k = 0; k < count; ++k) {
    std::string text;
    const size_t target = smallest + smallest * 3 / 4 * static_cast<size_t>(k);
    const bool sparse = k % 2 == 1;
    while (text.size() < target) {
      text += pieces[rng() % pieces.size()];
      if (sparse) {
        for (int words = 0; words < 8; ++words) text += " " + pieces[rng() % pieces.size()];
        text.append(20 + rng() % 600, " \n\t"[rng() % 3]);
        continue;
      }
      const unsigned pick = rng() % 20;
      if (pick == 0) {
        text.append(1 + rng() % 700, ' ');  // longer than the cut margin, sometimes
      } else if (pick == 1) {
        text.append(1 + rng() % 300, '\n');
      } else if (pick == 2 && !added.empty()) {
        text += added[rng() % added.size()];
      } else if (pick == 3) {
        for (size_t d = 1 + rng() % 900; d > 0; --d) text += static_cast<char>('0' + rng() % 10);
      } else {
        text += separators[rng() % separators.size()];
      }
    }
    texts.push_back(std::move(text));
  }
  return texts;
}

}  // namespace

// Reaches EncodeTruncated's chunk sizes (Tokenizer's friend).
struct TokenizerTestPeer {
  static TruncationPlan& Plan(Tokenizer& t) { return t.impl_->truncation_plan; }
};

namespace {

// EncodeTruncated of every text and budget against the whole text's encoding
// cut; returns how many results differed (ids, offsets or special mask), the
// first difference described in *first. A cut from the start (kLeft) is
// compared without offsets, the chunked path; with offsets it encodes the
// whole text (checked once per text).
size_t Mismatches(const Tokenizer& tok, const std::vector<std::string>& texts, const std::vector<size_t>& keeps,
                  std::string* first) {
  const size_t special = tok.NumSpecialTokens(true);
  size_t mismatches = 0;
  for (const std::string& text : texts) {
    const Encoding all = *tok.Encode(text, {.add_special_tokens = true, .with_offsets = true});
    for (size_t keep : keeps) {
      for (TruncationSide side : {TruncationSide::kRight, TruncationSide::kLeft}) {
        const Encoding want = Cut(all, keep + special, side);
        const bool offsets = side == TruncationSide::kRight || keep == keeps.front();
        auto got = tok.EncodeTruncated(text, keep + special, {.add_special_tokens = true, .with_offsets = offsets}, side);
        const bool same = got.ok() && got->ids == want.ids && got->special == want.special &&
                          (!offsets || got->offsets == want.offsets);
        if (!same && mismatches++ == 0) {
          *first = absl::StrCat(text.size(), "-byte text, keep ", keep,
                                side == TruncationSide::kRight ? ", right" : ", left");
        }
      }
    }
  }
  return mismatches;
}

// Budgets from 1 token up: every one to `dense`, so that for some the tokens
// kept just fill a chunk (the words at its cut decide), then growing by
// `ratio` to `most`.
std::vector<size_t> Budgets(size_t dense, size_t most, double ratio) {
  std::vector<size_t> keeps;
  for (size_t k = 1; k <= dense; ++k) keeps.push_back(k);
  for (double k = static_cast<double>(dense) * ratio; k < static_cast<double>(most); k *= ratio) {
    keeps.push_back(static_cast<size_t>(k));
  }
  return keeps;
}

class TruncationTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    json_ = testing::JsonOf(GetParam());
    ASSERT_FALSE(json_.empty()) << GetParam() << ": tokenizer file missing: run scripts/prepare_assets.sh";
    auto tok = Tokenizer::FromJson(json_);
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = std::move(*tok);
  }
  std::string json_;
  std::unique_ptr<Tokenizer> tok_;
};

// The sizes EncodeTruncated runs with: texts of 12 to 57 KB.
TEST_P(TruncationTest, TokenisingOnlyWhatIsKeptEqualsTheWholeTextCut) {
  std::string first;
  EXPECT_EQ(Mismatches(*tok_, LongTexts(nlohmann::json::parse(json_), 7, 12000, 3), Budgets(3, 4000, 1.6), &first), 0u)
      << GetParam() << ", first at " << first;
}

// Chunks of a few bytes per kept token and whole-text encoding from 64 bytes
// on, so that cuts fall everywhere in texts of 1 to 6 KB: the margin at each
// cut must hold for every tokenizer.
TEST_P(TruncationTest, SmallChunksPutTheCutEverywhereAndStillEqualTheWholeTextCut) {
  std::string first;
  // One byte per token: the kept tokens reach the margin for budgets near
  // (budget + margin) / (the text's bytes per token), every one of which is tried.
  TokenizerTestPeer::Plan(*tok_) = {.whole_text_bytes = 64, .bytes_per_token = 1, .margin_bytes = 256};
  EXPECT_EQ(Mismatches(*tok_, LongTexts(nlohmann::json::parse(json_), 11, 1000, 3), Budgets(130, 600, 1.5), &first), 0u)
      << GetParam() << ", first at " << first;
  TokenizerTestPeer::Plan(*tok_) = {.whole_text_bytes = 64, .bytes_per_token = 4, .margin_bytes = 256};
  EXPECT_EQ(Mismatches(*tok_, LongTexts(nlohmann::json::parse(json_), 13, 1000, 3), Budgets(3, 600, 1.25), &first), 0u)
      << GetParam() << ", 4 bytes per token, first at " << first;
}

// The margin is what makes small chunks right: without it (and without the
// added tokens' lengths that widen it), words cut in two at a chunk's cut are
// kept, and the comparison above sees it.
TEST(TruncationMarginTest, WithoutTheMarginTheCutWordsDiffer) {
  for (const char* name : {"qwen3", "bert", "xlmr_unigram"}) {
    auto tok = Tokenizer::FromJson(testing::JsonOf(name));
    ASSERT_TRUE(tok.ok()) << tok.status();
    size_t mismatches = 0;
    std::string first;
    TokenizerTestPeer::Plan(**tok) = {.whole_text_bytes = 64, .bytes_per_token = 1, .margin_bytes = 0,
                                      .widen_for_added_tokens = false};
    mismatches += Mismatches(**tok, LongTexts(nlohmann::json::parse(testing::JsonOf(name)), 11, 1000, 2),
                             Budgets(60, 60, 2), &first);
    EXPECT_GT(mismatches, 0u) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizers, TruncationTest,
    ::testing::Values("qwen3", "llama3", "bert", "bert_added_tokens", "bert_cased", "bert_nfd_lowercase",
                      "bert_nfkc_lower_wssplit", "bert_nochinese_strip", "llama3_merge_order", "qwen3_gpt2_style",
                      "qwen3_nfkc_split_behaviors", "char_bpe_byte_fallback", "subword_prefix_bpe",
                      "multilingual_e5_small", "mistral_v1", "xlmr_unigram", "xlmr_unigram_converter", "t5_unigram",
                      "t5_unigram_converter", "unigram_byte_fallback", "llama_bpe_legacy", "llama_bpe_byte_fallback",
                      "gemma_bpe", "unigram_metaspace_first", "unigram_metaspace_never_nosplit",
                      "unigram_metaspace_nosplit", "unigram_nfkd_strip_prepend", "unigram_bytes_nfd_metaspace_never",
                      "unigram_bytes_metaspace_decoder"));

// What EncodeTruncated does not tokenise it still checks: invalid UTF-8 far
// past the kept tokens is refused as Encode refuses it.
TEST(TruncationErrorsTest, InvalidUtf8BeyondTheKeptPartIsRefusedAsEncodeRefusesIt) {
  auto tok = Tokenizer::FromJson(testing::JsonOf("bert"));
  ASSERT_TRUE(tok.ok());
  std::string text(200000, 'a');
  for (size_t i = 0; i < text.size(); i += 6) text[i] = ' ';
  text[150000] = static_cast<char>(0xff);
  auto whole = (*tok)->Encode(text);
  auto cut = (*tok)->EncodeTruncated(text, 16);
  ASSERT_FALSE(whole.ok());
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status(), whole.status());
}

// A kept end that is one word longer than any chunk (no safe word before the
// cut) falls back to the whole text, still equal.
TEST(TruncationErrorsTest, OneLongWordAtTheKeptEndFallsBackToTheWholeText) {
  auto tok = Tokenizer::FromJson(testing::JsonOf("qwen3"));
  ASSERT_TRUE(tok.ok());
  std::string text(12000, 'x');
  text += " tail words";
  for (TruncationSide side : {TruncationSide::kRight, TruncationSide::kLeft}) {
    auto cut = (*tok)->EncodeTruncated(text, 8, {.with_offsets = true}, side);
    ASSERT_TRUE(cut.ok());
    EXPECT_EQ(cut->ids, Cut(*(*tok)->Encode(text, {.with_offsets = true}), 8, side).ids);
  }
}

// Pre-tokenizers whose splits count from a piece's start cannot be chunked
// from the end: FixedLength's words are counted from the start, and
// UnicodeScripts carries the last script across any run of spaces.
TEST(TruncationErrorsTest, SplitsThatCountFromTheStartAreNotChunkedFromTheEnd) {
  const auto word_level = [](const nlohmann::json& vocab, const nlohmann::json& pre_tokenizer) {
    return nlohmann::json{{"version", "1.0"},
                          {"added_tokens", nlohmann::json::array()},
                          {"normalizer", nullptr},
                          {"pre_tokenizer", pre_tokenizer},
                          {"post_processor", nullptr},
                          {"decoder", nullptr},
                          {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}}
        .dump();
  };
  struct Case {
    std::string json, text;
  };
  const Case cases[] = {
      {word_level({{"<unk>", 0}, {"aaaaa", 1}, {"aaa", 2}}, {{"type", "FixedLength"}, {"length", 5}}),
       std::string(20003, 'a')},
      {word_level({{"<unk>", 0}, {"a", 1}, {"b", 2}}, {{"type", "UnicodeScripts"}}),
       "x" + std::string(20000, ' ') + "a b"},
  };
  for (const Case& c : cases) {
    auto tok = Tokenizer::FromJson(c.json);
    ASSERT_TRUE(tok.ok()) << tok.status();
    const Encoding all = *(*tok)->Encode(c.text, {.with_offsets = true});
    for (size_t keep : {1, 2, 3}) {
      auto cut = (*tok)->EncodeTruncated(c.text, keep, {.with_offsets = false}, TruncationSide::kLeft);
      ASSERT_TRUE(cut.ok()) << cut.status();
      EXPECT_EQ(cut->ids, Cut(all, keep, TruncationSide::kLeft).ids) << c.json;
    }
  }
}

// An added token with lstrip (rstrip) takes the whitespace run before (after)
// it whole, however long: a cut inside such a run must not keep the run's own
// tokens. The tokens ▁ of a Metaspace that makes every space a word show it.
TEST(TruncationErrorsTest, WhitespaceAnAddedTokenStripsIsNotCutApart) {
  const std::string json = nlohmann::json{
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 4}, {"content", "<m>"}, {"single_word", false}, {"lstrip", true}, {"rstrip", true},
         {"normalized", false}, {"special", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"},
                         {"split", true}}},
      {"post_processor", nullptr},
      {"decoder", nullptr},
      {"model", {{"type", "WordLevel"},
                 {"vocab", {{"<unk>", 0}, {"\u2581a", 1}, {"\u2581b", 2}, {"\u2581", 3}, {"<m>", 4}}},
                 {"unk_token", "<unk>"}}}}.dump();
  auto tok = Tokenizer::FromJson(json);
  ASSERT_TRUE(tok.ok()) << tok.status();
  std::string repeated_a, repeated_b;
  for (int i = 0; i < 3000; ++i) repeated_a += "a ", repeated_b += " b";
  const std::string spaces(9000, ' ');
  struct Case {
    std::string text;
    TruncationSide side;
  };
  const Case cases[] = {
      {repeated_a.substr(0, 1000) + spaces + "<m>" + repeated_b, TruncationSide::kRight},
      {repeated_a + "<m>" + spaces + repeated_b.substr(0, 1000), TruncationSide::kLeft},
  };
  for (const Case& c : cases) {
    const Encoding all = *(*tok)->Encode(c.text, {.with_offsets = true});
    for (size_t keep : {400, 600, 900}) {
      auto cut = (*tok)->EncodeTruncated(c.text, keep, {.with_offsets = false}, c.side);
      ASSERT_TRUE(cut.ok()) << cut.status();
      EXPECT_EQ(cut->ids, Cut(all, keep, c.side).ids) << "keep " << keep;
    }
  }
}

// Llama 3 groups digits by threes from a run's first digit (\p{N}{1,3}): a
// chunk from the end that starts inside a long run would group it out of step.
TEST(TruncationErrorsTest, ALongDigitRunIsGroupedFromItsFirstDigit) {
  auto tok = Tokenizer::FromJson(testing::JsonOf("llama3"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const size_t special = (*tok)->NumSpecialTokens(true);
  for (size_t length : {10000, 10001, 10002, 30001}) {
    std::string text = "numbers: ";
    for (size_t i = 0; i < length; ++i) text += static_cast<char>('0' + i % 10);
    const Encoding all = *(*tok)->Encode(text, {.with_offsets = true});
    for (size_t keep : {1, 64, 500}) {
      auto cut = (*tok)->EncodeTruncated(text, keep + special, {.with_offsets = false}, TruncationSide::kLeft);
      ASSERT_TRUE(cut.ok()) << cut.status();
      EXPECT_EQ(cut->ids, Cut(all, keep + special, TruncationSide::kLeft).ids) << length << " digits, keep " << keep;
    }
  }
}

}  // namespace
}  // namespace tokenbatch::tokenizer
