// The rerank and predict bodies (score_api.h): both rerank shapes, TEI's predict
// inputs, every refusal with its status and field, the scores from logits, and
// the answers' order, cut and fields.
#include "api/score_api.h"

#include <cmath>
#include <string>
#include <variant>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tokenbatch::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const ApiLimits kLimits{.max_client_batch_size = 3};

ApiError RerankError(const std::string& body) {
  auto r = ParseRerank(body, kLimits);
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(ScoreApi, RerankReadsTeisShape) {
  auto r = ParseRerank(R"({"query":"q","texts":["a",""],"raw_scores":true,"return_text":true,"truncate":false,)"
                       R"("truncation_direction":"Left"})",
                       kLimits);
  ASSERT_TRUE(std::holds_alternative<RerankRequest>(r)) << std::get<ApiError>(r).message;
  const RerankRequest& q = std::get<RerankRequest>(r);
  EXPECT_FALSE(q.cohere);
  EXPECT_EQ(q.query, "q");
  EXPECT_EQ(q.documents, (std::vector<std::string>{"a", ""}));  // an empty document is a valid pair
  EXPECT_TRUE(q.raw_scores);
  EXPECT_TRUE(q.return_documents);
  EXPECT_EQ(q.truncate, std::optional<bool>(false));
  EXPECT_EQ(q.truncation_direction, TruncationDirection::kLeft);
  EXPECT_FALSE(q.top_n.has_value());
}

TEST(ScoreApi, RerankReadsCoheresShapeWithDocumentObjects) {
  auto r = ParseRerank(R"({"model":"m","query":"q","documents":["a",{"text":"b"}],"top_n":1,"priority":5})", kLimits);
  ASSERT_TRUE(std::holds_alternative<RerankRequest>(r)) << std::get<ApiError>(r).message;
  const RerankRequest& q = std::get<RerankRequest>(r);
  EXPECT_TRUE(q.cohere);
  EXPECT_EQ(q.model, "m");
  EXPECT_EQ(q.documents, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(q.return_documents);  // Cohere's and Jina's default
  EXPECT_EQ(q.top_n, std::optional<std::int64_t>(1));
  EXPECT_EQ(q.priority, -5);
  auto quiet = ParseRerank(R"({"query":"q","documents":["a"],"return_documents":false})", kLimits);
  EXPECT_FALSE(std::get<RerankRequest>(quiet).return_documents);
}

TEST(ScoreApi, RerankRefusesBadInputNamingTheField) {
  struct Case {
    const char* body;
    int status;
    const char* says;
  };
  for (const Case& c : {
           Case{R"({"query":"","texts":["a"]})", 422, "`query` is an empty string"},
           Case{R"({"texts":["a"]})", 400, "missing required field `query`"},
           Case{R"({"query":"q"})", 400, "`texts` (TEI) or `documents`"},
           Case{R"({"query":"q","texts":[]})", 422, "`texts` must not be empty"},
           Case{R"({"query":"q","documents":[]})", 422, "`documents` must not be empty"},
           Case{R"({"query":"q","texts":["a","b","c","d"]})", 413, "at most 3"},
           Case{R"({"query":"q","texts":["a"],"top_n":0})", 422, "`top_n` must be in [1,"},
           Case{R"({"query":"q","texts":["a"],"top_n":-2})", 422, "`top_n`"},
           Case{R"({"query":"q","texts":[{"text":"a"}]})", 400, "`texts`[0] must be a string, found"},
           Case{R"({"query":"q","documents":[{"title":"a"}]})", 400, "or an object with a string `text`"},
           Case{R"({"query":3,"texts":["a"]})", 400, "query"},
           Case{R"({"query":"q","texts":"a"})", 400, "`texts` must be an array"},
           Case{R"({"query":"q","texts":["a"],"truncation_direction":"up"})", 422, "truncation_direction"},
       }) {
    const ApiError e = RerankError(c.body);
    EXPECT_EQ(e.status, c.status) << c.body << ": " << e.message;
    EXPECT_THAT(e.message, HasSubstr(c.says)) << c.body;
  }
}

TEST(ScoreApi, PredictReadsATextAPairAndBatches) {
  auto one = ParsePredict(R"({"inputs":"a text"})", kLimits);
  ASSERT_TRUE(std::holds_alternative<PredictRequest>(one));
  EXPECT_FALSE(std::get<PredictRequest>(one).batch);
  EXPECT_FALSE(std::get<PredictRequest>(one).inputs[0].text_pair.has_value());

  auto pair = ParsePredict(R"({"inputs":["first","second"],"raw_scores":true})", kLimits);
  ASSERT_TRUE(std::holds_alternative<PredictRequest>(pair));
  const PredictRequest& p = std::get<PredictRequest>(pair);
  ASSERT_EQ(p.inputs.size(), 1u);  // two strings are one pair, as TEI reads them
  EXPECT_EQ(p.inputs[0].text, "first");
  EXPECT_EQ(p.inputs[0].text_pair, std::optional<std::string>("second"));
  EXPECT_FALSE(p.batch);
  EXPECT_TRUE(p.raw_scores);

  auto batch = ParsePredict(R"({"inputs":[["a"],["b","c"]]})", kLimits);
  ASSERT_TRUE(std::holds_alternative<PredictRequest>(batch));
  const PredictRequest& b = std::get<PredictRequest>(batch);
  ASSERT_EQ(b.inputs.size(), 2u);
  EXPECT_TRUE(b.batch);
  EXPECT_FALSE(b.inputs[0].text_pair.has_value());
  EXPECT_EQ(b.inputs[1].text_pair, std::optional<std::string>("c"));

  auto three = ParsePredict(R"({"inputs":["a","b","c"]})", kLimits);
  ASSERT_TRUE(std::holds_alternative<PredictRequest>(three));
  EXPECT_EQ(std::get<PredictRequest>(three).inputs.size(), 3u);  // not two: a batch of texts
}

TEST(ScoreApi, PredictRefusesBadInput) {
  for (const auto& [body, status] : std::vector<std::pair<std::string, int>>{
           {R"({"inputs":""})", 422},
           {R"({"inputs":[]})", 422},
           {R"({"inputs":[["a","b","c"]]})", 400},
           {R"({"inputs":[[1]]})", 400},
           {R"({"inputs":[["","b"]]})", 422},
           {R"({"inputs":3})", 400},
           {R"({"inputs":["a","b","c","d"]})", 413},
           {R"({})", 400},
       }) {
    auto r = ParsePredict(body, kLimits);
    ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    EXPECT_EQ(std::get<ApiError>(r).status, status) << body << ": " << std::get<ApiError>(r).message;
  }
}

TEST(ScoreApi, ScoresApplyTheModelsActivationOrSoftmax) {
  const backend::ClassifierInfo sigmoid{.labels = {"LABEL_0"}, .activation = backend::ScoreActivation::kSigmoid};
  EXPECT_DOUBLE_EQ(RerankScore({2.0f}, sigmoid, false), 1.0 / (1.0 + std::exp(-2.0)));
  EXPECT_DOUBLE_EQ(RerankScore({2.0f}, sigmoid, true), 2.0);
  const backend::ClassifierInfo identity{.labels = {"LABEL_0"}, .activation = backend::ScoreActivation::kIdentity};
  EXPECT_DOUBLE_EQ(RerankScore({-3.5f}, identity, false), -3.5);
  const backend::ClassifierInfo tanh{.labels = {"LABEL_0"}, .activation = backend::ScoreActivation::kTanh};
  EXPECT_DOUBLE_EQ(PredictScores({0.5f}, tanh, false)[0], std::tanh(0.5));

  const backend::ClassifierInfo three{.labels = {"a", "b", "c"}, .activation = backend::ScoreActivation::kIdentity};
  const std::vector<double> p = PredictScores({1.0f, 2.0f, 1000.0f}, three, false);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-12);  // no overflow from the large logit
  EXPECT_NEAR(p[2], 1.0, 1e-12);
  const std::vector<double> q = PredictScores({1.0f, 2.0f, 3.0f}, three, false);
  EXPECT_NEAR(q[0], 1.0 / (1.0 + std::exp(1.0) + std::exp(2.0)), 1e-12);
  EXPECT_NEAR(q[2] / q[1], std::exp(1.0), 1e-9);
  EXPECT_EQ(PredictScores({1.0f, 2.0f, 3.0f}, three, true), (std::vector<double>{1.0, 2.0, 3.0}));
}

TEST(ScoreApi, SeveralLabelsAreScoredAsTheProblemTypeSays) {
  backend::ClassifierInfo multi{.labels = {"a", "b", "c"},
                                .activation = backend::ScoreActivation::kIdentity,
                                .label_scoring = backend::LabelScoring::kSigmoid};
  const std::vector<double> sig = PredictScores({0.25f, -1.0f, 3.0f}, multi, false);
  ASSERT_EQ(sig.size(), 3u);
  EXPECT_DOUBLE_EQ(sig[0], 1.0 / (1.0 + std::exp(-0.25)));
  EXPECT_DOUBLE_EQ(sig[1], 1.0 / (1.0 + std::exp(1.0)));
  EXPECT_GT(sig[0] + sig[1] + sig[2], 1.5);  // independent, not a distribution
  EXPECT_EQ(PredictScores({0.25f, -1.0f, 3.0f}, multi, true), (std::vector<double>{0.25, -1.0, 3.0}));
  multi.label_scoring = backend::LabelScoring::kIdentity;
  EXPECT_EQ(PredictScores({0.25f, -1.0f, 3.0f}, multi, false), (std::vector<double>{0.25, -1.0, 3.0}));
}

TEST(ScoreApi, RerankAnswersAreSortedCutAndShaped) {
  const backend::ClassifierInfo model{.labels = {"LABEL_0"}, .activation = backend::ScoreActivation::kIdentity};
  RerankRequest tei{.query = "q", .documents = {"d0", "d1", "d2"}, .return_documents = true};
  const std::vector<std::vector<float>> logits = {{0.5f}, {2.0f}, {0.5f}};
  const json a = json::parse(RerankBody(tei, logits, model, "m", 12, "r7"));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], (json{{"index", 1}, {"score", 2.0}, {"text", "d1"}}));
  EXPECT_EQ(a[1]["index"], 0);  // ties keep the documents' order
  EXPECT_EQ(a[2]["index"], 2);

  RerankRequest cohere = tei;
  cohere.cohere = true;
  cohere.top_n = 2;
  const json c = json::parse(RerankBody(cohere, logits, model, "served", 12, "r7"));
  EXPECT_EQ(c["id"], "r7");
  EXPECT_EQ(c["model"], "served");
  EXPECT_EQ(c["usage"], (json{{"prompt_tokens", 12}, {"total_tokens", 12}}));
  ASSERT_EQ(c["results"].size(), 2u);
  EXPECT_EQ(c["results"][0], (json{{"index", 1}, {"relevance_score", 2.0}, {"document", {{"text", "d1"}}}}));
  cohere.return_documents = false;
  EXPECT_FALSE(json::parse(RerankBody(cohere, logits, model, "m", 1, ""))["results"][0].contains("document"));
}

TEST(ScoreApi, ANanScoreRanksLast) {
  const backend::ClassifierInfo model{.labels = {"LABEL_0"}, .activation = backend::ScoreActivation::kIdentity};
  RerankRequest tei{.query = "q", .documents = {"a", "b", "c"}};
  const json a = json::parse(RerankBody(tei, {{std::nanf("")}, {1.0f}, {-1.0f}}, model, "m", 3, ""));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0]["index"], 1);
  EXPECT_EQ(a[1]["index"], 2);
  EXPECT_EQ(a[2]["index"], 0);
  EXPECT_TRUE(a[2]["score"].is_null());  // JSON has no NaN
}

TEST(ScoreApi, PredictAnswersListLabelsByScore) {
  const backend::ClassifierInfo model{.labels = {"neg", "pos"}, .activation = backend::ScoreActivation::kIdentity};
  PredictRequest one{.raw_scores = true};
  const json a = json::parse(PredictBody(one, {{-1.0f, 3.0f}}, model));
  EXPECT_EQ(a, (json{{{"score", 3.0}, {"label", "pos"}}, {{"score", -1.0}, {"label", "neg"}}}));
  PredictRequest batch{.batch = true, .raw_scores = true};
  const json b = json::parse(PredictBody(batch, {{-1.0f, 3.0f}}, model));
  ASSERT_TRUE(b.is_array() && b.size() == 1 && b[0].is_array());  // a list per input, even for one
  EXPECT_EQ(b[0][0]["label"], "pos");
}

}  // namespace
}  // namespace tokenbatch::server
