// Several models behind one Router, without sockets: an embedder, a one-label
// cross-encoder and a sparse model (noop backends, real tokenizers) sharing a
// device memory. Requests choose by `model`; an unknown name is 404 listing the
// served ones; a route of another kind is 400 naming the model; /embed_sparse
// answers (index, value) pairs; /v1/models, /info and /metrics describe every
// model.
#include <future>
#include <map>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/router.h"
#include "testing/tokenizer_data.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "tokenbatch/runtime/shared_device_memory.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct Models {
  std::shared_ptr<SharedDeviceMemory> device;
  std::vector<std::unique_ptr<EmbeddingService>> services;
  std::unique_ptr<Router> router;
  std::unique_ptr<tokenizer::Tokenizer> qwen3;  // the sparse model's, for expected values
};

std::unique_ptr<tokenizer::Tokenizer> Tokenizer(const char* name) {
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath(name));
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? *std::move(tok) : nullptr;
}

// embed (the default), rerank and sparse on one device memory of 1 MB, each
// batch costing 100 bytes per padded token.
Models Make() {
  Models m;
  auto device = SharedDeviceMemory::Create(
      {1'000'000, {{.name = "embed"}, {.name = "rerank", .guaranteed_bytes = 100'000}, {.name = "sparse"}}});
  EXPECT_TRUE(device.ok()) << device.status();
  m.device = *device;
  const backend::NoopEncoderOptions encoders[] = {
      {.hidden_size = 4}, {.labels = {"LABEL_0"}}, {.sparse = true}};
  const char* tokenizers[] = {"qwen3", "bert", "qwen3"};
  const char* names[] = {"embed", "rerank", "sparse"};
  std::vector<ServedModel> served;
  for (std::size_t i = 0; i < 3; ++i) {
    ServiceOptions options;
    options.batcher.scheduler.max_input_tokens = 512;
    options.batcher.device_memory =
        DeviceMemoryShare{.device = m.device, .model = i, .memory_model = *CostModel::Memory(0, 100, 0)};
    auto service = EmbeddingService::Create(options, Tokenizer(tokenizers[i]), backend::MakeNoopEncoder(encoders[i]));
    EXPECT_TRUE(service.ok()) << service.status();
    if (!service.ok()) return m;
    m.services.push_back(*std::move(service));
    served.push_back({names[i], m.services.back().get()});
  }
  m.router = std::make_unique<Router>(ServerOptions{}, std::move(served));
  m.qwen3 = Tokenizer("qwen3");
  return m;
}

HttpReply Call(Router& router, std::string method, std::string target, std::string body = "") {
  auto promise = std::make_shared<std::promise<HttpReply>>();
  router.Handle(HttpRequest{.method = std::move(method), .target = std::move(target), .body = std::move(body)},
                [promise](HttpReply r) { promise->set_value(std::move(r)); });
  return promise->get_future().get();
}
HttpReply Post(Router& router, std::string target, const json& body) {
  return Call(router, "POST", std::move(target), body.dump());
}

TEST(RouterModels, RequestsChooseTheirModelAndTheFirstIsTheDefault) {
  Models m = Make();
  ASSERT_TRUE(m.router);
  HttpReply r = Post(*m.router, "/v1/embeddings", {{"input", "hello"}, {"model", "embed"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "embed");
  EXPECT_EQ(Post(*m.router, "/embed", {{"inputs", "hello"}}).status, 200);  // no model: the default
  r = Post(*m.router, "/v1/rerank", {{"model", "rerank"}, {"query", "q"}, {"documents", {"a", "b"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "rerank");
  EXPECT_EQ(json::parse(r.body)["results"].size(), 2u);
  // TEI's rerank shape names no model: `model` picks it all the same.
  EXPECT_EQ(Post(*m.router, "/rerank", {{"model", "rerank"}, {"query", "q"}, {"texts", {"a"}}}).status, 200);
  EXPECT_EQ(Post(*m.router, "/predict", {{"model", "rerank"}, {"inputs", "a"}}).status, 200);
  EXPECT_EQ(Post(*m.router, "/tokenize", {{"model", "rerank"}, {"inputs", "hello"}}).status, 200);
}

TEST(RouterModels, AnUnknownModelIs404ListingTheServedOnes) {
  Models m = Make();
  ASSERT_TRUE(m.router);
  for (const char* route : {"/v1/embeddings", "/embed", "/embed_sparse", "/v1/rerank", "/predict", "/tokenize"}) {
    const HttpReply r =
        Post(*m.router, route,
             {{"model", "text-embedding-3-small"}, {"input", "a"}, {"inputs", "a"}, {"query", "q"}, {"documents", {"a"}}});
    EXPECT_EQ(r.status, 404) << route << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr("model \\\"text-embedding-3-small\\\" is not served here; the models served are: "
                                  "embed, rerank, sparse"))
        << route;
  }
}

TEST(RouterModels, ARouteOfAnotherKindIs400NamingTheModel) {
  Models m = Make();
  ASSERT_TRUE(m.router);
  HttpReply r = Post(*m.router, "/v1/embeddings", {{"input", "a"}, {"model", "rerank"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("model \\\"rerank\\\" is a cross-encoder (a reranker): it scores with /rerank and "
                                "/predict, not with /v1/embeddings"));
  r = Post(*m.router, "/rerank", {{"query", "q"}, {"texts", {"a"}}});  // the default is the embedder
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("model \\\"embed\\\" is an embedding model"));
  r = Post(*m.router, "/embed", {{"inputs", "a"}, {"model", "sparse"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("is a sparse (SPLADE) model: it embeds with /embed_sparse, not with /embed"));
  r = Post(*m.router, "/embed_sparse", {{"inputs", "a"}, {"model", "embed"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("not with /embed_sparse"));
}

TEST(RouterModels, SparseEmbeddingsAreIndexValuePairsCutByTopKAndThreshold) {
  Models m = Make();
  ASSERT_TRUE(m.router);
  const std::string text = "the cat and the hat and the bat";
  auto enc = m.qwen3->Encode(text);
  ASSERT_TRUE(enc.ok());
  std::map<std::uint32_t, int> counts;  // the noop sparse model's weights: each id's count
  for (std::uint32_t id : enc->ids) ++counts[id];
  HttpReply r = Post(*m.router, "/embed_sparse", {{"inputs", {text, "x"}}, {"model", "sparse"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  ASSERT_EQ(body.size(), 2u);
  ASSERT_EQ(body[0].size(), counts.size());
  std::size_t k = 0;
  for (const auto& [id, n] : counts) {  // ascending by index
    EXPECT_EQ(body[0][k]["index"], id);
    EXPECT_EQ(body[0][k]["value"], n);
    ++k;
  }
  // threshold 2 keeps the repeated ids; top_k 1 the most frequent (the lower id on a tie).
  json repeated = json::array();
  std::uint32_t top_id = 0;
  int top = 0;
  for (const auto& [id, n] : counts) {
    if (n >= 2) repeated.push_back({{"index", id}, {"value", n}});
    if (n > top) top_id = id, top = n;
  }
  ASSERT_GE(repeated.size(), 2u);  // " and", " the"
  body = json::parse(Post(*m.router, "/embed_sparse", {{"inputs", text}, {"model", "sparse"}, {"threshold", 2}}).body);
  EXPECT_EQ(body[0], repeated);
  body = json::parse(Post(*m.router, "/embed_sparse", {{"inputs", text}, {"model", "sparse"}, {"top_k", 1}}).body);
  EXPECT_EQ(body[0], json::array({{{"index", top_id}, {"value", top}}}));
  r = Post(*m.router, "/embed_sparse", {{"inputs", text}, {"model", "sparse"}, {"dimensions", 8}});
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr("`dimensions` does not apply to sparse embeddings"));
  EXPECT_EQ(Post(*m.router, "/embed_sparse", {{"inputs", text}, {"model", "sparse"}, {"top_k", 0}}).status, 422);
  EXPECT_EQ(Post(*m.router, "/embed_sparse", {{"inputs", text}, {"model", "sparse"}, {"threshold", -1}}).status,
            422);
}

TEST(RouterModels, ModelsInfoAndMetricsDescribeEveryModel) {
  Models m = Make();
  ASSERT_TRUE(m.router);
  ASSERT_EQ(Post(*m.router, "/v1/rerank", {{"model", "rerank"}, {"query", "q"}, {"documents", {"a", "b"}}}).status,
            200);
  json models = json::parse(Call(*m.router, "GET", "/v1/models").body);
  ASSERT_EQ(models["data"].size(), 3u);
  EXPECT_EQ(models["data"][2]["id"], "sparse");
  json info = json::parse(Call(*m.router, "GET", "/info").body);
  EXPECT_EQ(info["model_id"], "embed");  // TEI's shape: the default model
  ASSERT_EQ(info["models"].size(), 3u);
  EXPECT_TRUE(info["models"][1]["model_type"].contains("reranker"));
  EXPECT_EQ(info["models"][2]["sparse"], true);
  EXPECT_EQ(info["models"][1]["device_memory"]["guaranteed_bytes"], 100'000);
  EXPECT_EQ(info["device_memory_limit_bytes"], 1'000'000);
  const std::string metrics = Call(*m.router, "GET", "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_inputs_submitted_total{model=\"rerank\"} 2\n"));
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_inputs_submitted_total{model=\"embed\"} 0\n"));
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_device_memory_limit_bytes 1000000\n"));
  EXPECT_THAT(metrics, HasSubstr("tokenbatch_device_memory_in_flight_bytes{model=\"sparse\"} 0\n"));
  // One HELP per family, whatever the number of models.
  std::size_t helps = 0;
  for (std::size_t at = 0; (at = metrics.find("# HELP tokenbatch_queue_size ", at)) != std::string::npos; ++at) ++helps;
  EXPECT_EQ(helps, 1u);
}

TEST(RouterModels, WithOneModelTheNameIsNotChecked) {
  // OpenAI clients must send a name; TEI ignores it: one model answers any.
  Models m = Make();
  ASSERT_TRUE(m.router);
  Router one(ServerOptions{.model_name = "solo"}, m.services[0].get());
  const HttpReply r = Post(one, "/v1/embeddings", {{"input", "a"}, {"model", "text-embedding-3-small"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "solo");
}

}  // namespace
}  // namespace tokenbatch::server
