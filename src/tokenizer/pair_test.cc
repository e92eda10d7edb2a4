// EncodePair beyond the goldens (build_golden_test.cc compares ids and types
// with Hugging Face): the BERT template's layout and types, only_second and
// longest_first cuts from either end computed from the texts' own encodings,
// the refusal when the first text leaves no room, and the pair templates of each post-processor,
// including one that is not supported, which leaves single texts usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"
#include "testing/tokenizer_data.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::tokenizer {
namespace {

using ::testing::HasSubstr;

std::vector<uint32_t> Ids(const Tokenizer& tok, const std::string& text) {
  return tok.Encode(text, {.add_special_tokens = false, .with_offsets = false})->ids;
}

std::vector<uint32_t> Concat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Bert's tokenizer.json with its post_processor replaced.
std::unique_ptr<Tokenizer> BertWith(const nlohmann::json& post_processor) {
  std::ifstream in(testing::TestTokenizerPath("bert"));
  std::stringstream s;
  s << in.rdbuf();
  auto j = nlohmann::json::parse(s.str());
  j["post_processor"] = post_processor;
  auto tok = Tokenizer::FromJson(j.dump());
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? std::move(*tok) : nullptr;
}

TEST(TokenizerPairTest, BertTemplateTypesAndOnlySecondCuts) {
  auto tok = Tokenizer::FromFile(testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const Tokenizer& bert = **tok;
  const std::string query = "what is the capital of france";
  const std::string doc = "paris is the capital and most populous city of france";
  const auto q = Ids(bert, query), d = Ids(bert, doc);
  const uint32_t cls = *bert.TokenToId("[CLS]"), sep = *bert.TokenToId("[SEP]");
  EXPECT_EQ(bert.NumPairSpecialTokens(), 3u);

  auto whole = bert.EncodePair(query, doc);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->ids, Concat({{cls}, q, {sep}, d, {sep}}));
  std::vector<uint32_t> types(q.size() + 2, 0);
  types.resize(whole->ids.size(), 1);  // the document and its [SEP]
  EXPECT_EQ(whole->type_ids, types);
  EXPECT_EQ(whole->special.front(), 1);
  EXPECT_EQ(whole->special[q.size() + 1], 1);
  EXPECT_EQ(whole->special[q.size() + 2], 0);

  const size_t limit = q.size() + 3 + 4;  // room for four document tokens
  const auto only_second = PairTruncation::kOnlySecond;
  auto right = bert.EncodePair(query, doc, {.max_tokens = limit, .truncation = only_second});
  ASSERT_TRUE(right.ok()) << right.status();
  EXPECT_EQ(right->ids, Concat({{cls}, q, {sep}, {d.begin(), d.begin() + 4}, {sep}}));
  auto left =
      bert.EncodePair(query, doc, {.max_tokens = limit, .side = PairTruncationSide::kLeft, .truncation = only_second});
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(left->ids, Concat({{cls}, q, {sep}, {d.end() - 4, d.end()}, {sep}}));
  EXPECT_EQ(bert.EncodePair(query, doc, {.max_tokens = 10'000})->ids, whole->ids);

  // only_second never cuts the query: no room for one document token is refused.
  auto full = bert.EncodePair(query, doc, {.max_tokens = q.size() + 3, .truncation = only_second});
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(full.status().message(), HasSubstr("leave no room for the second text"));
  auto invalid = bert.EncodePair(query, std::string("bad \xff utf-8"));
  ASSERT_FALSE(invalid.ok());
  EXPECT_THAT(invalid.status().message(), HasSubstr("second text"));

  // The first text given as its encoding (a query encoded once for many
  // documents) gives the same encodings and the same refusals.
  const Encoding first = *bert.Encode(query, {.add_special_tokens = false, .with_offsets = false,
                                              .with_word_ends = true});
  for (const PairEncodeOptions& options :
       {PairEncodeOptions{}, PairEncodeOptions{.max_tokens = limit},
        PairEncodeOptions{.max_tokens = limit, .side = PairTruncationSide::kLeft},
        PairEncodeOptions{.max_tokens = limit, .side = PairTruncationSide::kLeft, .truncation = only_second}}) {
    auto from_ids = bert.EncodePair(first, doc, options);
    auto from_text = bert.EncodePair(query, doc, options);
    ASSERT_TRUE(from_ids.ok()) << from_ids.status();
    EXPECT_EQ(from_ids->ids, from_text->ids);
    EXPECT_EQ(from_ids->type_ids, from_text->type_ids);
    EXPECT_EQ(from_ids->special, from_text->special);
  }
  EXPECT_EQ(bert.EncodePair(first, doc, {.max_tokens = q.size() + 3, .truncation = only_second}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(TokenizerPairTest, LongestFirstCutsTheLongerTextThenBothToHalves) {
  auto tok = Tokenizer::FromFile(testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const Tokenizer& bert = **tok;
  const std::string query = "what is the capital of france";                            // 6 tokens
  const std::string doc = "paris is the capital and most populous city of france today";  // 11 tokens
  const auto q = Ids(bert, query), d = Ids(bert, doc);
  ASSERT_EQ(q.size(), 6u);
  ASSERT_EQ(d.size(), 11u);
  const uint32_t cls = *bert.TokenToId("[CLS]"), sep = *bert.TokenToId("[SEP]");
  auto pair = [&](size_t room, PairTruncationSide side = PairTruncationSide::kRight) {
    return bert.EncodePair(query, doc, {.max_tokens = room + 3, .side = side})->ids;
  };
  // Room for the query and more than it of the document: only the document is cut.
  EXPECT_EQ(pair(14), Concat({{cls}, q, {sep}, {d.begin(), d.begin() + 8}, {sep}}));
  // Less: both are cut to half the room, the longer (the document) getting the odd token.
  EXPECT_EQ(pair(11), Concat({{cls}, {q.begin(), q.begin() + 5}, {sep}, {d.begin(), d.begin() + 6}, {sep}}));
  EXPECT_EQ(pair(10, PairTruncationSide::kLeft),
            Concat({{cls}, {q.end() - 5, q.end()}, {sep}, {d.end() - 5, d.end()}, {sep}}));
  // A longer query is the one cut first.
  auto swapped = bert.EncodePair(doc, query, {.max_tokens = 14 + 3});
  ASSERT_TRUE(swapped.ok()) << swapped.status();
  EXPECT_EQ(swapped->ids, Concat({{cls}, {d.begin(), d.begin() + 8}, {sep}, q, {sep}}));
  // No room at all leaves the template; below it is refused.
  EXPECT_EQ(pair(0), (std::vector<uint32_t>{cls, sep, sep}));
  auto refused = bert.EncodePair(query, doc, {.max_tokens = 2});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kOutOfRange);
}

// tokenizers measures a text longer than the limit by its whole words up to
// the limit, from the end it cuts; that decides which text gets the odd token.
// The expected splits are Hugging Face tokenizers 0.23's on the same inputs.
TEST(TokenizerPairTest, LongestFirstMeasuresLongTextsByWholeWords) {
  auto tok = Tokenizer::FromFile(testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const Tokenizer& bert = **tok;
  ASSERT_EQ(Ids(bert, "unaffable").size(), 3u);  // una ##ffa ##ble
  auto repeat = [](const std::string& word, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += word + " ";
    return out;
  };
  const std::string doc = repeat("c", 15);
  // Kept (first, second) for max_tokens 14: room 11, split 5 and 6 one way or the other.
  auto split = [&](const std::string& first, PairTruncationSide side) {
    auto e = bert.EncodePair(first, doc, {.max_tokens = 14, .side = side});
    EXPECT_TRUE(e.ok()) << e.status();
    const auto second = static_cast<size_t>(std::count(e->type_ids.begin(), e->type_ids.end(), 1u)) - 1;
    return std::pair<size_t, size_t>(e->ids.size() - 3 - second, second);
  };
  using Split = std::pair<size_t, size_t>;
  const auto right = PairTruncationSide::kRight, left = PairTruncationSide::kLeft;
  EXPECT_EQ(split(repeat("b", 13) + "unaffable", right), Split(6, 5));  // 16 whole-word tokens > 14
  EXPECT_EQ(split(repeat("b", 14) + "unaffable", right), Split(5, 6));  // 14 = 14: the second gets it
  EXPECT_EQ(split(repeat("b", 13) + "unaffable", left), Split(5, 6));   // from the end: 3 + 11 = 14
  EXPECT_EQ(split("unaffable " + repeat("b", 13), left), Split(6, 5));  // from the end: 13 + 3 = 16
  EXPECT_EQ(split(repeat("unaffable", 5), right), Split(6, 5));         // 15 > 14
}

TEST(TokenizerPairTest, EachPostProcessorHasItsPairTemplate) {
  const std::string a = "hello", b = "world";
  auto roberta = BertWith({{"type", "RobertaProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", 101}}});
  ASSERT_NE(roberta, nullptr);
  auto r = roberta->EncodePair(a, b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ids, Concat({{101}, Ids(*roberta, a), {102, 102}, Ids(*roberta, b), {102}}));
  EXPECT_EQ(r->type_ids, std::vector<uint32_t>(r->ids.size(), 0));

  auto none = BertWith(nullptr);
  ASSERT_NE(none, nullptr);
  auto n = none->EncodePair(a, b);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->ids, Concat({Ids(*none, a), Ids(*none, b)}));
  EXPECT_EQ(n->type_ids, (std::vector<uint32_t>{0, 1}));  // Hugging Face: the second sequence is type 1
  EXPECT_EQ(none->NumPairSpecialTokens(), 0u);

  // B before A: single texts still encode; pairs are refused, naming why.
  const nlohmann::json special = {{"[CLS]", {{"id", "[CLS]"}, {"ids", {101}}, {"tokens", {"[CLS]"}}}}};
  auto swapped = BertWith(
      {{"type", "TemplateProcessing"},
       {"single",
        {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
       {"pair", {{{"Sequence", {{"id", "B"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 1}}}}}},
       {"special_tokens", special}});
  ASSERT_NE(swapped, nullptr);
  EXPECT_EQ(swapped->Encode(a)->ids, Concat({{101}, Ids(*swapped, a)}));
  auto refused = swapped->EncodePair(a, b);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("$A then $B"));

  // A malformed pair template (a type id that is not a number) is refused the same way.
  auto odd = BertWith(
      {{"type", "TemplateProcessing"},
       {"single", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
       {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", "zero"}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
       {"special_tokens", nlohmann::json::object()}});
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->EncodePair(a, b).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(odd->EncodePair(a, b).status().message(), HasSubstr("type_id"));

  // A template without a pair template: pairs would lose their special tokens.
  auto single_only = BertWith({{"type", "TemplateProcessing"},
                               {"single", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                               {"special_tokens", nlohmann::json::object()}});
  ASSERT_NE(single_only, nullptr);
  EXPECT_THAT(single_only->EncodePair(a, b).status().message(), HasSubstr("no pair template"));
}

}  // namespace
}  // namespace tokenbatch::tokenizer
