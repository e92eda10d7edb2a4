// Tests of input -> ids: truncation keeps special tokens; ids are range-checked.
#include "service/input_tokens.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/tokenizer_data.h"
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
    auto t = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("qwen3"));
    ASSERT_TRUE(t.ok()) << t.status();
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

namespace tokenbatch::server {
namespace {

TEST(WindowIds, InnerEdgesGetTheSpecialEnds) {
  // [CLS]=101 1..8 [SEP]=102; windows of 4 with an overlap of 1, as split forms them.
  const std::vector<std::int32_t> ids = {101, 1, 2, 3, 4, 5, 6, 7, 8, 102};
  const SpecialEnds bert{.prefix = 1, .suffix = 1};
  EXPECT_THAT(WindowIds(ids, {0, 4}, bert), ElementsAre(101, 1, 2, 102));    // first: [SEP] over 3
  EXPECT_THAT(WindowIds(ids, {3, 7}, bert), ElementsAre(101, 4, 5, 102));    // middle: both ends
  EXPECT_THAT(WindowIds(ids, {6, 10}, bert), ElementsAre(101, 7, 8, 102));   // last: [CLS] over 6
  EXPECT_THAT(WindowIds(ids, {0, 10}, bert), ElementsAre(101, 1, 2, 3, 4, 5, 6, 7, 8, 102));  // whole input
  // No special ends (token-id inputs): the plain slice.
  EXPECT_THAT(WindowIds(ids, {3, 7}, {}), ElementsAre(3, 4, 5, 6));
  // A window too short to hold both ends stays as it is.
  EXPECT_THAT(WindowIds(ids, {4, 6}, bert), ElementsAre(4, 5));
}

TEST(InputToTokens, CountsTheTokenizersSpecialEnds) {
  // bert-base-uncased adds [CLS] ... [SEP]; Qwen3 adds nothing; ids have none.
  auto bert = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(bert.ok()) << bert.status();
  auto with = InputToTokens(**bert, EmbedInput{.text = "hello world"}, {});
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->specials.prefix, 1);
  EXPECT_EQ(with->specials.suffix, 1);
  EXPECT_EQ(with->ids.front(), 101);  // [CLS]
  EXPECT_EQ(with->ids.back(), 102);   // [SEP]
  auto qwen = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("qwen3"));
  ASSERT_TRUE(qwen.ok());
  auto without = InputToTokens(**qwen, EmbedInput{.text = "hello world"}, {});
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->specials.prefix, 0);
  EXPECT_EQ(without->specials.suffix, 0);
  auto ids = InputToTokens(**qwen, EmbedInput{.is_ids = true, .ids = {101, 5, 102}}, {});
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->specials.prefix, 0);
  EXPECT_EQ(ids->specials.suffix, 0);
}

}  // namespace
}  // namespace tokenbatch::server
