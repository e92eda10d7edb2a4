// Exactness against Hugging Face tokenizers: every id (and every offset) of our
// encoder must equal the goldens that scripts/tokenizer/generate_goldens.py wrote
// with PyPI's `tokenizers` (Hugging Face's Rust library), for the corpus
// of corner cases and, for Qwen3 / Llama 3 / BERT, for ~2,000 real texts. The only
// allowed differences are listed, each with its reason, in
// testdata/tokenizer/exceptions.json; an exception that no longer differs fails too.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "testing/tokenizer_data.h"
#include "tokenizer/test_tokenizers.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::tokenizer {
namespace {

using testing::ReadJsonl;

using testing::ReadFile;
using testing::TokenizerJson;
const std::string kData = testing::kTokenizerTestData;


// Same hash as generate_goldens.py: FNV-1a 64 folding one 32-bit value at a time.
std::string HashIds(const std::vector<uint32_t>& ids) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const uint32_t id : ids) {
    h ^= id;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::vector<uint32_t> FlattenOffsets(const Encoding& e) {
  std::vector<uint32_t> flat;
  for (const auto& [b, end] : e.offsets) {
    flat.push_back(b);
    flat.push_back(end);
  }
  return flat;
}

// (tokenizer, text name) pairs allowed to differ, from exceptions.json.
std::set<std::pair<std::string, std::string>> Exceptions() {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& e : nlohmann::json::parse(ReadFile(kData + "/exceptions.json"))) {
    EXPECT_FALSE(e.value("reason", "").empty()) << "exception without a reason: " << e.dump();
    out.insert({e.at("tokenizer").get<std::string>(), e.at("text").get<std::string>()});
  }
  return out;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string base = GetParam().substr(0, GetParam().find('_'));
    if (base == "qwen3" || base == "llama3" || base == "bert") {
      const std::string asset = tokenbatch::testing::TestTokenizerPath(base);
      ASSERT_TRUE(std::filesystem::exists(asset)) << asset << " is missing: the tests read the shared tokenizer data (src/testing/tokenizer_data.h)";
    }
    auto tok = Tokenizer::FromJson(TokenizerJson(GetParam()));
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = std::move(*tok);
    exceptions_ = Exceptions();
  }
  bool Excepted(const std::string& text_name) const { return exceptions_.count({GetParam(), text_name}) > 0; }

  std::unique_ptr<Tokenizer> tok_;
  std::set<std::pair<std::string, std::string>> exceptions_;
};

TEST_P(GoldenTest, CorpusIdsOffsetsAndCountsMatchHuggingFace) {
  const auto corpus = ReadJsonl(kData + "/corpus.jsonl");
  const auto golden = ReadJsonl(kData + "/golden/" + GetParam() + ".corpus.jsonl");
  ASSERT_EQ(corpus.size(), golden.size()) << "goldens are stale: run build/venv/bin/python scripts/tokenizer/generate_goldens.py";
  int compared = 0;
  int truncations = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string name = corpus[i].at("name");
    const std::string text = corpus[i].at("text");
    ASSERT_EQ(golden[i].at("name"), name);
    auto with = tok_->Encode(text);
    auto without = tok_->Encode(text, {.add_special_tokens = false, .with_offsets = false});
    auto count = tok_->Count(text);
    auto count_without = tok_->Count(text, false);
    ASSERT_TRUE(with.ok() && without.ok() && count.ok() && count_without.ok()) << name << ": " << with.status();
    EXPECT_EQ(*count, with->ids.size()) << name;
    EXPECT_EQ(*count_without, without->ids.size()) << name;
    bool same;
    if (golden[i].contains("ids")) {
      const auto ids = golden[i].at("ids").get<std::vector<uint32_t>>();
      const auto ids_ns = golden[i].at("ids_no_special").get<std::vector<uint32_t>>();
      const auto offsets = golden[i].at("offsets").get<std::vector<std::pair<uint32_t, uint32_t>>>();
      same = with->ids == ids && without->ids == ids_ns;
      if (!Excepted(name)) {
        EXPECT_EQ(with->ids, ids) << GetParam() << " / " << name;
        EXPECT_EQ(without->ids, ids_ns) << GetParam() << " / " << name;
        EXPECT_EQ(with->offsets, offsets) << GetParam() << " / " << name;
      }
    } else {
      same = HashIds(with->ids) == golden[i].at("ids_hash") && HashIds(without->ids) == golden[i].at("ids_no_special_hash");
      if (!Excepted(name)) {
        EXPECT_EQ(with->ids.size(), golden[i].at("n")) << GetParam() << " / " << name;
        EXPECT_EQ(HashIds(with->ids), golden[i].at("ids_hash")) << GetParam() << " / " << name;
        EXPECT_EQ(without->ids.size(), golden[i].at("n_no_special")) << GetParam() << " / " << name;
        EXPECT_EQ(HashIds(without->ids), golden[i].at("ids_no_special_hash")) << GetParam() << " / " << name;
        EXPECT_EQ(HashIds(FlattenOffsets(*with)), golden[i].at("offsets_hash")) << GetParam() << " / " << name;
      }
    }
    if (golden[i].contains("truncated_16") && !Excepted(name)) {  // Hugging Face with setTruncation(16)
      auto cut = tok_->EncodeTruncated(text, 16, {.add_special_tokens = true, .with_offsets = false});
      ASSERT_TRUE(cut.ok());
      EXPECT_EQ(cut->ids, golden[i].at("truncated_16").get<std::vector<uint32_t>>()) << GetParam() << " / " << name;
      ++truncations;
    }
    if (Excepted(name)) {
      EXPECT_FALSE(same) << GetParam() << " / " << name << " matches now: remove it from exceptions.json";
    } else {
      ++compared;
    }
  }
  EXPECT_GT(compared, 40);
  if (GetParam() == "qwen3" || GetParam() == "llama3" || GetParam() == "bert") {
    EXPECT_GT(truncations, 40);
  }
}

// Real text is compared for the three real tokenizers (variants: corpus only).
using RealTextTest = GoldenTest;

TEST_P(RealTextTest, IdsMatchHuggingFace) {
  const std::string golden_path = kData + "/golden/" + GetParam() + ".realtext.jsonl";
  const auto texts = ReadJsonl(kData + "/realtext.jsonl");
  const auto golden = ReadJsonl(golden_path);
  ASSERT_EQ(texts.size(), golden.size()) << "goldens are stale: run build/venv/bin/python scripts/tokenizer/generate_goldens.py";
  ASSERT_GT(texts.size(), 2000u);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string name = texts[i].at("name");
    const std::string text = texts[i].at("text");
    ASSERT_EQ(golden[i].at("name"), name);
    auto enc = tok_->Encode(text, {.add_special_tokens = true, .with_offsets = false});
    auto count = tok_->Count(text);
    ASSERT_TRUE(enc.ok() && count.ok()) << name;
    if (Excepted(name)) continue;
    EXPECT_EQ(*count, golden[i].at("n").get<size_t>()) << GetParam() << " / " << name;
    EXPECT_EQ(HashIds(enc->ids), golden[i].at("hash")) << GetParam() << " / " << name << ": " << nlohmann::json(enc->ids).dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, RealTextTest, ::testing::Values("qwen3", "llama3", "bert"));
INSTANTIATE_TEST_SUITE_P(Tokenizers, GoldenTest,
                         ::testing::Values("qwen3", "llama3", "bert", "bert_added_tokens", "bert_cased",
                                           "bert_nfd_lowercase", "bert_nfkc_lower_wssplit", "bert_nochinese_strip", "llama3_merge_order",
                                           "qwen3_gpt2_style", "qwen3_nfkc_split_behaviors",
                                           "char_bpe_byte_fallback", "subword_prefix_bpe"));

}  // namespace
}  // namespace tokenbatch::tokenizer
