// Tokenizer::FromJson's LoadOptions: do_lower_case's Lowercase normalizer,
// where it goes, and what the tokenizer then encodes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"
#include "testing/tokenizer_data.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/load_options.h"

namespace tokenbatch::tokenizer {
namespace {

using nlohmann::json;

std::string Text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<uint32_t> Ids(const Tokenizer& tok, const std::string& text, bool special = true) {
  return tok.Encode(text, {.add_special_tokens = special, .with_offsets = false})->ids;
}

TEST(LoadOptionsTest, LowercaseGoesFirstUnlessTheNormalizerHasOne) {
  EXPECT_EQ(internal::WithLowercaseFirst(nullptr), json::parse(R"({"type":"Sequence","normalizers":[{"type":"Lowercase"}]})"));
  EXPECT_EQ(internal::WithLowercaseFirst(json{{"type", "NFC"}}),
            json::parse(R"({"type":"Sequence","normalizers":[{"type":"Lowercase"},{"type":"NFC"}]})"));
  const json sequence = json::parse(R"({"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Strip"}]})");
  EXPECT_EQ(internal::WithLowercaseFirst(sequence)["normalizers"].size(), 3u);
  EXPECT_EQ(internal::WithLowercaseFirst(sequence)["normalizers"][0]["type"], "Lowercase");
  const json has = json::parse(R"({"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]})");
  EXPECT_EQ(internal::WithLowercaseFirst(has), has);
  // sentence-transformers adds one in front of BertNormalizer even when it lowercases.
  EXPECT_EQ(internal::WithLowercaseFirst(json{{"type", "BertNormalizer"}})["normalizers"].size(), 2u);
}

TEST(LoadOptionsTest, QwenLowercasedEncodesTheLowercasedText) {
  const std::string qwen = Text(testing::TestTokenizerPath("qwen3"));
  auto plain = Tokenizer::FromJson(qwen);
  auto lower = Tokenizer::FromJson(qwen, {.lowercase = true});
  ASSERT_TRUE(plain.ok() && lower.ok()) << lower.status();
  EXPECT_EQ(Ids(**lower, "Hello WORLD Ünïcode ΣΑΣ"), Ids(**plain, "hello world ünïcode σασ"));
  EXPECT_NE(Ids(**plain, "Hello WORLD"), Ids(**plain, "hello world"));
}

}  // namespace
}  // namespace tokenbatch::tokenizer
