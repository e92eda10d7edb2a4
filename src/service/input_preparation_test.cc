// PrepareInputs: one request to backend inputs, case by case, against the
// tokenizer's own encodings of the texts the inputs should read.
#include "service/input_preparation.h"

#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/tokenizer_data.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;

const tokenizer::Tokenizer& Bert() {
  static const auto* tok = [] {
    auto t = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? t->release() : nullptr;
  }();
  return *tok;
}

std::vector<std::int32_t> Ids(std::string_view text) {
  absl::StatusOr<tokenizer::Encoding> enc = Bert().Encode(text);
  EXPECT_TRUE(enc.ok()) << enc.status();
  return enc.ok() ? std::vector<std::int32_t>(enc->ids.begin(), enc->ids.end()) : std::vector<std::int32_t>{};
}

// An embedding model's preparation, with two prompts.
InputPreparation Embedder() {
  return InputPreparation{.vocab_size = 30522,
                          .max_input_tokens = 16,
                          .hidden_size = 8,
                          .prompts = {{"query", "query: "}, {"passage", "passage: "}}};
}

EmbedInput Text(std::string text) { return EmbedInput{.text = std::move(text)}; }

struct Case {
  std::string name;
  std::function<void(InputPreparation&)> how;  // changes to Embedder()
  EmbedRequest request;
  // The texts each input should read to the tokenizer (prompt included); the
  // expected ids are its encoding of them.
  std::vector<std::string> reads;
  std::vector<int> prompt_tokens;  // per input
  std::int64_t characters = 0;
};

TEST(PrepareInputs, EachInputReadsWhatTheTokenizerWouldAndCounts) {
  const int query_prompt = static_cast<int>(Ids("query: ").size()) - 1;  // less its [SEP]
  const int passage_prompt = static_cast<int>(Ids("passage: ").size()) - 1;
  const std::vector<Case> cases = {
      {"plain texts", nullptr, EmbedRequest{.inputs = {Text("hello world"), Text("héllo")}},
       {"hello world", "héllo"}, {0, 0}, 11 + 5},
      {"the default prompt before every text", [](InputPreparation& h) { h.default_prompt = "query: "; },
       EmbedRequest{.inputs = {Text("hello world"), Text("a b")}}, {"query: hello world", "query: a b"},
       {query_prompt, query_prompt}, 11 + 3},
      {"a named prompt over the default", [](InputPreparation& h) { h.default_prompt = "query: "; },
       EmbedRequest{.inputs = {Text("hello world")}, .prompt_name = "passage"}, {"passage: hello world"},
       {passage_prompt}, 11},
      {"a cross-encoder's texts get no prompt",
       [](InputPreparation& h) {
         h.default_prompt = "query: ";
         h.cross_encoder_token_types = true;
       },
       EmbedRequest{.inputs = {Text("hello world")}}, {"hello world"}, {0}, 11},
  };
  for (const Case& c : cases) {
    InputPreparation how = Embedder();
    if (c.how) c.how(how);
    absl::StatusOr<PreparedInputs> p = PrepareInputs(Bert(), how, c.request);
    ASSERT_TRUE(p.ok()) << c.name << ": " << p.status();
    ASSERT_EQ(p->inputs.size(), c.reads.size()) << c.name;
    std::int64_t tokens = 0;
    for (std::size_t i = 0; i < c.reads.size(); ++i) {
      const backend::EmbeddingInput& in = p->inputs[i];
      EXPECT_EQ(in.input_ids, Ids(c.reads[i])) << c.name << " input " << i;
      EXPECT_EQ(in.prompt_tokens, c.prompt_tokens[i]) << c.name << " input " << i;
      EXPECT_EQ(in.special_prefix, 1) << c.name;  // [CLS]
      EXPECT_EQ(in.special_suffix, 1) << c.name;  // [SEP]
      EXPECT_TRUE(in.token_type_ids.empty()) << c.name;
      tokens += static_cast<std::int64_t>(in.input_ids.size());
    }
    EXPECT_EQ(p->tokens, tokens) << c.name;
    EXPECT_EQ(p->characters, c.characters) << c.name;
  }
}

TEST(PrepareInputs, PromptLengthsCountedOnceGiveWhatEachRequestWouldCount) {
  InputPreparation per_request = Embedder();
  per_request.default_prompt = "query: ";
  InputPreparation counted = per_request;
  CountPromptTokens(Bert(), counted);
  ASSERT_EQ(counted.prompt_lengths.size(), 2u);  // "query: " and "passage: "
  EXPECT_EQ(*counted.prompt_lengths.at("passage: "), static_cast<std::int64_t>(Ids("passage: ").size()) - 1);
  for (const std::optional<std::string>& name : {std::optional<std::string>(), std::optional<std::string>("passage")}) {
    const EmbedRequest request{.inputs = {Text("hello world")}, .prompt_name = name};
    absl::StatusOr<PreparedInputs> a = PrepareInputs(Bert(), per_request, request);
    absl::StatusOr<PreparedInputs> b = PrepareInputs(Bert(), counted, request);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->inputs[0].prompt_tokens, b->inputs[0].prompt_tokens);
    EXPECT_EQ(a->inputs[0].input_ids, b->inputs[0].input_ids);
    EXPECT_GT(b->inputs[0].prompt_tokens, 1);
  }
}

TEST(PrepareInputs, TruncationKeepsTheSpecialTokensAndCutsThePromptFirstFromTheLeft) {
  const std::string text = "one two three four five six seven eight nine ten eleven twelve";
  const std::vector<std::int32_t> whole = Ids(text);
  ASSERT_GT(whole.size(), 8u);
  InputPreparation how = Embedder();
  how.max_input_tokens = 6;
  how.auto_truncate = true;
  absl::StatusOr<PreparedInputs> right = PrepareInputs(Bert(), how, EmbedRequest{.inputs = {Text(text)}});
  ASSERT_TRUE(right.ok()) << right.status();
  std::vector<std::int32_t> expected(whole.begin(), whole.begin() + 5);
  expected.push_back(whole.back());  // [CLS] + the first 4 words + [SEP]
  EXPECT_EQ(right->inputs[0].input_ids, expected);
  EXPECT_EQ(right->tokens, 6);

  // truncate: false wins over auto_truncate; the scheduler's oversize policy then decides.
  absl::StatusOr<PreparedInputs> whole_input =
      PrepareInputs(Bert(), how, EmbedRequest{.inputs = {Text(text)}, .truncate = false});
  ASSERT_TRUE(whole_input.ok());
  EXPECT_EQ(whole_input->inputs[0].input_ids, whole);

  // From the left with a prompt: the prompt's words go first, so fewer of its
  // tokens are left out of pooling, never fewer than the leading [CLS].
  how.default_prompt = "query: ";
  absl::StatusOr<PreparedInputs> left = PrepareInputs(
      Bert(), how, EmbedRequest{.inputs = {Text(text)}, .truncation_direction = TruncationDirection::kLeft});
  ASSERT_TRUE(left.ok()) << left.status();
  const std::vector<std::int32_t> prompted = Ids("query: " + text);
  expected.assign({prompted.front()});
  expected.insert(expected.end(), prompted.end() - 5, prompted.end());
  EXPECT_EQ(left->inputs[0].input_ids, expected);
  EXPECT_EQ(left->inputs[0].prompt_tokens, 1);
}

TEST(PrepareInputs, TokenIdsAndPairs) {
  InputPreparation how = Embedder();
  absl::StatusOr<PreparedInputs> ids = PrepareInputs(
      Bert(), how, EmbedRequest{.inputs = {EmbedInput{.is_ids = true, .ids = {101, 7592, 102}}}, .normalize = false,
                                .dimensions = 4});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->inputs[0].input_ids, (std::vector<std::int32_t>{101, 7592, 102}));
  EXPECT_EQ(ids->inputs[0].special_prefix, 0);  // used as given
  EXPECT_EQ(ids->inputs[0].special_suffix, 0);
  EXPECT_EQ(ids->inputs[0].normalize, std::optional<bool>(false));
  EXPECT_EQ(ids->inputs[0].dimensions, 4);
  EXPECT_EQ(ids->characters, 3);  // TEI counts a token-id input's ids

  how.cross_encoder_token_types = true;
  const EmbedInput pair{.text = "what is a cat", .text_pair = "a cat is an animal"};
  absl::StatusOr<PreparedInputs> scored = PrepareInputs(Bert(), how, EmbedRequest{.inputs = {pair}});
  ASSERT_TRUE(scored.ok()) << scored.status();
  absl::StatusOr<tokenizer::Encoding> reference = Bert().EncodePair(pair.text, *pair.text_pair);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(scored->inputs[0].input_ids, std::vector<std::int32_t>(reference->ids.begin(), reference->ids.end()));
  EXPECT_EQ(scored->inputs[0].token_type_ids,
            std::vector<std::int32_t>(reference->type_ids.begin(), reference->type_ids.end()));
  EXPECT_EQ(scored->characters, 13 + 18);
}

TEST(PrepareInputs, RefusesNamingTheInput) {
  struct Refusal {
    std::string name;
    bool cross_encoder;
    EmbedRequest request;
    std::string message;
  };
  const std::vector<Refusal> refusals = {
      {"dimensions", false, EmbedRequest{.inputs = {Text("a")}, .dimensions = 9}, "dimensions 9 outside [1, 8]"},
      {"unknown prompt", false, EmbedRequest{.inputs = {Text("a")}, .prompt_name = "title"},
       "prompt_name \"title\" is not one of the model's prompts (passage, query)"},
      {"prompt for ids", false,
       EmbedRequest{.inputs = {Text("a"), EmbedInput{.is_ids = true, .ids = {101}}}, .prompt_name = "query"},
       "input[1]: prompt_name applies to text inputs, not token ids"},
      {"pair for an embedder", false, EmbedRequest{.inputs = {EmbedInput{.text = "q", .text_pair = "d"}}},
       "input[0]: a (query, document) pair needs a cross-encoder model"},
      {"id outside the vocabulary", false,
       EmbedRequest{.inputs = {Text("a"), EmbedInput{.is_ids = true, .ids = {40000}}}},
       "input[1]: token id 40000 out of range [0, 30522)"},
      {"empty input", false, EmbedRequest{.inputs = {EmbedInput{.is_ids = true}}}, "input[0]: the input has no tokens"},
      {"invalid UTF-8", false, EmbedRequest{.inputs = {Text("ok"), Text("\xff")}}, "input[1]: "},
  };
  for (const Refusal& r : refusals) {
    InputPreparation how = Embedder();
    if (r.cross_encoder) how.cross_encoder_token_types = true;
    absl::StatusOr<PreparedInputs> p = PrepareInputs(Bert(), how, r.request);
    ASSERT_FALSE(p.ok()) << r.name;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << r.name;
    EXPECT_THAT(p.status().message(), HasSubstr(r.message)) << r.name;
  }
}

}  // namespace
}  // namespace tokenbatch::server
