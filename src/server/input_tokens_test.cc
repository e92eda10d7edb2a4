// Tests of input -> ids: truncation keeps special tokens; ids are range-checked.
#include "server/input_tokens.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

using ::testing::ElementsAre;

TEST(TruncateIds, RightAndLeftKeepSpecialTokens) {
  // [CLS]=101 a b c d [SEP]=102, specials marked.
  const std::vector<std::int32_t> ids = {101, 1, 2, 3, 4, 102};
  const std::vector<std::uint8_t> special = {1, 0, 0, 0, 0, 1};
  EXPECT_THAT(TruncateIds(ids, special, 4, TruncationDirection::kRight), ElementsAre(101, 1, 2, 102));
  EXPECT_THAT(TruncateIds(ids, special, 4, TruncationDirection::kLeft), ElementsAre(101, 3, 4, 102));
  EXPECT_THAT(TruncateIds(ids, special, 6, TruncationDirection::kRight), ElementsAre(101, 1, 2, 3, 4, 102));
  EXPECT_THAT(TruncateIds(ids, {}, 2, TruncationDirection::kLeft), ElementsAre(4, 102));
  EXPECT_THAT(TruncateIds(ids, {}, 0, TruncationDirection::kLeft), ElementsAre(101, 1, 2, 3, 4, 102));
}

class InputToIdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = tokenizer::Tokenizer::FromFile(TOKENBATCH_ASSET_DIR "/qwen3/tokenizer.json");
    ASSERT_TRUE(t.ok()) << t.status() << " (run scripts/setup.sh)";
    tok_ = *std::move(t);
  }
  std::unique_ptr<tokenizer::Tokenizer> tok_;
};

TEST_F(InputToIdsTest, TextMatchesTheTokenizerAndTruncates) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  auto enc = tok_->Encode(text);
  ASSERT_TRUE(enc.ok());
  auto ids = InputToIds(*tok_, EmbedInput{.text = text}, {});
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), enc->ids.size());
  for (std::size_t i = 0; i < ids->size(); ++i) EXPECT_EQ((*ids)[i], static_cast<std::int32_t>(enc->ids[i]));
  auto cut = InputToIds(*tok_, EmbedInput{.text = text}, {.truncate_to = 3, .direction = TruncationDirection::kLeft});
  ASSERT_TRUE(cut.ok());
  EXPECT_THAT(*cut, ElementsAre(enc->ids[enc->ids.size() - 3], enc->ids[enc->ids.size() - 2], enc->ids.back()));
}

TEST_F(InputToIdsTest, IdsAreRangeChecked) {
  auto ok = InputToIds(*tok_, EmbedInput{.is_ids = true, .ids = {0, 5, 999}}, {.vocab_size = 1000});
  ASSERT_TRUE(ok.ok());
  EXPECT_THAT(*ok, ElementsAre(0, 5, 999));
  auto bad = InputToIds(*tok_, EmbedInput{.is_ids = true, .ids = {0, 1000}}, {.vocab_size = 1000});
  EXPECT_EQ(GetErrorKind(bad.status()), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "token id 1000 out of range [0, 1000)");
  EXPECT_FALSE(InputToIds(*tok_, EmbedInput{.is_ids = true, .ids = {-1}}, {}).ok());
}

TEST_F(InputToIdsTest, InvalidUtf8AndEmptyAreInvalidArgument) {
  auto bad = InputToIds(*tok_, EmbedInput{.text = "ab\xff"}, {});
  EXPECT_EQ(GetErrorKind(bad.status()), ErrorKind::kInvalidArgument);
  auto empty = InputToIds(*tok_, EmbedInput{.text = ""}, {});
  EXPECT_EQ(GetErrorKind(empty.status()), ErrorKind::kInvalidArgument);
  EXPECT_EQ(empty.status().message(), "the input has no tokens");
}

}  // namespace
}  // namespace tokenbatch::server
