// EncodePair beyond the goldens (build_golden_test.cc compares ids and types
// with Hugging Face): the BERT template's layout and types, only_second cuts
// from either end computed from the texts' own encodings, the refusal when the
// first text leaves no room, and the pair templates of each post-processor,
// including one that is not supported, which leaves single texts usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  auto right = bert.EncodePair(query, doc, {.max_tokens = limit});
  ASSERT_TRUE(right.ok()) << right.status();
  EXPECT_EQ(right->ids, Concat({{cls}, q, {sep}, {d.begin(), d.begin() + 4}, {sep}}));
  auto left = bert.EncodePair(query, doc, {.max_tokens = limit, .side = PairTruncationSide::kLeft});
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(left->ids, Concat({{cls}, q, {sep}, {d.end() - 4, d.end()}, {sep}}));
  EXPECT_EQ(bert.EncodePair(query, doc, {.max_tokens = 10'000})->ids, whole->ids);

  // The query is never cut: no room for one document token is refused.
  auto full = bert.EncodePair(query, doc, {.max_tokens = q.size() + 3});
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(full.status().message(), HasSubstr("leave no room for the second text"));
  auto invalid = bert.EncodePair(query, std::string("bad \xff utf-8"));
  ASSERT_FALSE(invalid.ok());
  EXPECT_THAT(invalid.status().message(), HasSubstr("second text"));

  // The first text given as its ids (a query encoded once for many documents)
  // gives the same encodings and the same refusals.
  for (const PairEncodeOptions& options : {PairEncodeOptions{}, PairEncodeOptions{.max_tokens = limit},
                                           PairEncodeOptions{.max_tokens = limit, .side = PairTruncationSide::kLeft}}) {
    auto from_ids = bert.EncodePair(q, doc, options);
    auto from_text = bert.EncodePair(query, doc, options);
    ASSERT_TRUE(from_ids.ok()) << from_ids.status();
    EXPECT_EQ(from_ids->ids, from_text->ids);
    EXPECT_EQ(from_ids->type_ids, from_text->type_ids);
    EXPECT_EQ(from_ids->special, from_text->special);
  }
  EXPECT_EQ(bert.EncodePair(q, doc, {.max_tokens = q.size() + 3}).status().code(), absl::StatusCode::kOutOfRange);
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
