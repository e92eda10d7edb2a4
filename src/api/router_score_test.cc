// The cross-encoder routes through the Router, without sockets, over a real
// EmbeddingService: a noop classifier backend and the real BERT tokenizer (its
// pair template). Each route refuses the other model kind; rerank answers are
// the backend's scores of each pair, activated and sorted; a query that fills
// the model's limit and an over-long pair without truncation are refused; every
// pair is its own scheduler item; the routes are counted in /metrics.
#include <cmath>
#include <fstream>
#include <future>
#include <sstream>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/router.h"
#include "testing/tokenizer_data.h"
#include "tokenbatch/backend/noop_encoder.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr std::int64_t kMaxInputTokens = 32;

struct Fixture {
  std::unique_ptr<EmbeddingService> service;
  std::unique_ptr<Router> router;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // the service's, for expected values
};

Fixture Make(std::vector<std::string> labels,
             tokenizer::PairTruncation pair_truncation = tokenizer::PairTruncation::kLongestFirst) {
  Fixture f;
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  auto again = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  EXPECT_TRUE(tok.ok() && again.ok()) << tok.status();
  if (!tok.ok() || !again.ok()) return f;
  f.tokenizer = *std::move(again);
  ServiceOptions options;
  options.batcher.scheduler.max_input_tokens = kMaxInputTokens;
  options.pair_truncation = pair_truncation;
  auto service = EmbeddingService::Create(options, *std::move(tok),
                                          backend::MakeNoopEncoder({.hidden_size = 4, .labels = std::move(labels)}));
  EXPECT_TRUE(service.ok()) << service.status();
  if (!service.ok()) return f;
  f.service = *std::move(service);
  f.router = std::make_unique<Router>(ServerOptions{.model_name = "ce"}, f.service.get());
  return f;
}

HttpReply Call(Router& router, std::string target, std::string body) {
  auto promise = std::make_shared<std::promise<HttpReply>>();
  router.Handle(HttpRequest{.method = "POST", .target = std::move(target), .body = std::move(body)},
                [promise](HttpReply r) { promise->set_value(std::move(r)); });
  return promise->get_future().get();
}

// The noop classifier's first value for ids x_0..x_{n-1} with token types t_i:
// ((x_0 + 31 n + 7 Σ t_i) mod 97) / 97, here for the pair (query, document) as
// the tokenizer encodes it (BERT: the document's tokens are type 1).
double NoopLogit(const tokenizer::Tokenizer& tok, const std::string& query, const std::string& document,
                 const tokenizer::PairEncodeOptions& options = {}) {
  auto enc = tok.EncodePair(query, document, options);
  EXPECT_TRUE(enc.ok()) << enc.status();
  const auto n = static_cast<std::int64_t>(enc->ids.size());
  std::int64_t types = 0;
  for (std::uint32_t t : enc->type_ids) types += t;
  EXPECT_GT(types, 0);
  return static_cast<double>(static_cast<float>((enc->ids[0] + 31 * n + 7 * types) % 97) / 97.0f);
}

TEST(RouterScore, EachRouteRefusesTheOtherModelKind) {
  Fixture embedder = Make({});
  ASSERT_TRUE(embedder.router);
  for (const char* route : {"/rerank", "/v1/rerank", "/v2/rerank"}) {
    const HttpReply r = Call(*embedder.router, route, R"({"query":"q","texts":["a"]})");
    EXPECT_EQ(r.status, 400) << route;
    EXPECT_THAT(r.body, HasSubstr("is an embedding model: it embeds with /v1/embeddings and /embed, not with /")) << route;
  }
  EXPECT_EQ(Call(*embedder.router, "/predict", R"({"inputs":"a"})").status, 400);

  Fixture reranker = Make({"LABEL_0"});
  ASSERT_TRUE(reranker.router);
  for (const char* route : {"/embed", "/v1/embeddings"}) {
    const HttpReply r = Call(*reranker.router, route, R"({"inputs":"a","input":"a"})");
    EXPECT_EQ(r.status, 400) << route << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr("it scores with /rerank and /predict")) << route;
  }

  Fixture nli = Make({"contradiction", "entailment", "neutral"});
  ASSERT_TRUE(nli.router);
  const HttpReply r = Call(*nli.router, "/rerank", R"({"query":"q","texts":["a"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("classifier with 3 labels"));
  EXPECT_EQ(Call(*nli.router, "/predict", R"({"inputs":["a","b"]})").status, 200);
}

TEST(RouterScore, RerankScoresEveryPairAndSortsThem) {
  Fixture f = Make({"LABEL_0"});
  ASSERT_TRUE(f.router);
  const std::string query = "what is the capital of france";
  const std::vector<std::string> docs = {"paris", "the capital of france is paris", "a b c d e f g",
                                         "berlin is in germany"};
  json body = {{"query", query}, {"texts", docs}, {"return_text", true}};
  const HttpReply r = Call(*f.router, "/rerank", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json ranked = json::parse(r.body);
  ASSERT_EQ(ranked.size(), docs.size());
  double previous = 2.0;
  for (const json& item : ranked) {
    const std::size_t i = item["index"];
    const double want = 1.0 / (1.0 + std::exp(-NoopLogit(*f.tokenizer, query, docs[i])));  // sigmoid
    EXPECT_NEAR(item["score"].get<double>(), want, 1e-6) << i;
    EXPECT_EQ(item["text"], docs[i]);
    EXPECT_LE(item["score"].get<double>(), previous);
    previous = item["score"];
  }
  // The answer's token count is the pairs' (each [CLS] q [SEP] d [SEP]).
  std::int64_t tokens = 0;
  for (const auto& d : docs) tokens += static_cast<std::int64_t>(f.tokenizer->EncodePair(query, d)->ids.size());
  const json cohere =
      json::parse(Call(*f.router, "/v1/rerank", json{{"query", query}, {"documents", docs}}.dump()).body);
  EXPECT_EQ(cohere["usage"]["total_tokens"], tokens);
  EXPECT_EQ(cohere["model"], "ce");
  EXPECT_EQ(cohere["results"][0]["index"], ranked[0]["index"]);
}

// The x-compute-tokens header of a reply ("" when absent).
std::string ComputedTokens(const HttpReply& reply) {
  for (const auto& [name, value] : reply.headers) {
    if (name == "x-compute-tokens") return value;
  }
  return "";
}

TEST(RouterScore, LimitsCutLongestFirstByDefault) {
  Fixture f = Make({"LABEL_0"});
  ASSERT_TRUE(f.router);
  std::string long_doc, long_query;
  for (int i = 0; i < 60; ++i) long_doc += "word ";
  for (int i = 0; i < 40; ++i) long_query += "query ";
  // A pair over the limit is cut to it, the query too when it is long.
  for (const std::string& query : {std::string("short query"), long_query}) {
    const HttpReply cut = Call(*f.router, "/rerank", json{{"query", query}, {"texts", {long_doc}}}.dump());
    ASSERT_EQ(cut.status, 200) << cut.body;
    EXPECT_EQ(ComputedTokens(cut), std::to_string(kMaxInputTokens));
  }
  // The model sees the pair as the tokenizer cuts it longest_first: the
  // document's 15 tokens and [SEP] typed 1, not only_second's refusal.
  const HttpReply raw = Call(*f.router, "/rerank",
                             json{{"query", long_query}, {"texts", {long_doc}}, {"raw_scores", true}}.dump());
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_DOUBLE_EQ(json::parse(raw.body)[0]["score"].get<double>(),
                   NoopLogit(*f.tokenizer, long_query, long_doc, {.max_tokens = kMaxInputTokens}));
  // Without truncation the pair is refused.
  const HttpReply whole =
      Call(*f.router, "/rerank", json{{"query", "short query"}, {"texts", {long_doc}}, {"truncate", false}}.dump());
  EXPECT_EQ(whole.status, 413);
  EXPECT_THAT(whole.body, HasSubstr("send truncate: true"));
}

TEST(RouterScore, OnlySecondCutsTheDocumentNeverTheQuery) {
  Fixture f = Make({"LABEL_0"}, tokenizer::PairTruncation::kOnlySecond);
  ASSERT_TRUE(f.router);
  std::string long_doc, long_query;
  for (int i = 0; i < 60; ++i) long_doc += "word ";
  for (int i = 0; i < 40; ++i) long_query += "query ";
  const HttpReply cut = Call(*f.router, "/rerank", json{{"query", "short query"}, {"texts", {long_doc}}}.dump());
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(ComputedTokens(cut), std::to_string(kMaxInputTokens));
  // A query that fills the limit is always refused.
  for (const bool truncate : {true, false}) {
    const HttpReply query =
        Call(*f.router, "/v1/rerank", json{{"query", long_query}, {"documents", {"d"}}, {"truncate", truncate}}.dump());
    EXPECT_EQ(query.status, 413);
    EXPECT_THAT(query.body, HasSubstr("only_second truncation never cuts the query")) << truncate;
  }
}

TEST(RouterScore, ACrossEncoderRefusesSplitWindowsAndAPairlessTokenizer) {
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  ServiceOptions split;
  split.batcher.scheduler.oversize = OversizePolicy::kSplit;
  auto refused = EmbeddingService::Create(split, *std::move(tok), backend::MakeNoopEncoder({.labels = {"LABEL_0"}}));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("not split"));

  // BERT's tokenizer with a pair template that puts B before A.
  std::ifstream in(tokenbatch::testing::TestTokenizerPath("bert"));
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str());
  j["post_processor"]["pair"] = {{{"Sequence", {{"id", "B"}, {"type_id", 0}}}},
                                 {{"Sequence", {{"id", "A"}, {"type_id", 1}}}}};
  auto pairless = tokenizer::Tokenizer::FromJson(j.dump());
  ASSERT_TRUE(pairless.ok()) << pairless.status();
  auto no_pairs = EmbeddingService::Create({}, *std::move(pairless), backend::MakeNoopEncoder({.labels = {"LABEL_0"}}));
  ASSERT_FALSE(no_pairs.ok());
  EXPECT_THAT(no_pairs.status().message(), HasSubstr("the cross-encoder's tokenizer"));
}

TEST(RouterScore, EveryPairIsOneSchedulerItemAndRoutesAreCounted) {
  Fixture f = Make({"LABEL_0"});
  ASSERT_TRUE(f.router);
  const std::uint64_t before = f.service->metrics().requests_submitted;
  ASSERT_EQ(Call(*f.router, "/rerank", R"({"query":"q","texts":["a","bb","c c c"]})").status, 200);
  ASSERT_EQ(Call(*f.router, "/predict", R"({"inputs":[["a","b"],["c"]]})").status, 200);
  EXPECT_EQ(f.service->metrics().requests_submitted - before, 5u);
  const std::string metrics = f.router->MetricsText();
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_http_inputs_total{route=\"/rerank\"} 3\n"));
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_http_inputs_total{route=\"/predict\"} 2\n"));
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_http_request_duration_seconds_count{route=\"/rerank\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_http_requests_total{route=\"/predict\",code=\"200\"} 1\n"));
}

}  // namespace
}  // namespace tokenbatch::server
