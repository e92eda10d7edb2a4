// The real server on a loopback port: every route, status codes, keep-alive,
// concurrent clients. Noop backend (fixed vectors) with the real Qwen3 tokenizer.
#include <cmath>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "api/api.h"
#include "http/test_client.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::Call;
using testing::Connection;
using testing::Response;
using testing::StartTestServer;

std::vector<float> Floats(const json& j) { return j.get<std::vector<float>>(); }
double Norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new testing::TestServer(StartTestServer()); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  std::uint16_t port() const { return server_->port; }
  std::optional<Response> Post(std::string_view path, const json& body) {
    return Call(port(), "POST", path, body.dump());
  }
  static testing::TestServer* server_;
};
testing::TestServer* ServerTest::server_ = nullptr;

TEST_F(ServerTest, HealthInfoMetrics) {
  auto h = Call(port(), "GET", "/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  auto info = Call(port(), "GET", "/info");
  ASSERT_TRUE(info);
  const json i = json::parse(info->body);
  EXPECT_EQ(i["backend"], "noop");
  EXPECT_EQ(i["model_type"]["embedding"]["hidden_size"], 16);
  EXPECT_EQ(i["scheduler"]["max_batch_tokens"], 4096);
  EXPECT_EQ(i["scheduler"]["cost_model"], "padded");
  EXPECT_EQ(i["scheduler"]["batch_window"], "adaptive");
  EXPECT_DOUBLE_EQ(i["scheduler"]["min_padding_efficiency"].get<double>(), 0.85);
  EXPECT_EQ(i["max_input_length"], 4096);
  // TEI's /info field names beside our scheduler block.
  EXPECT_EQ(i["model_id"], "tokenbatch");
  EXPECT_EQ(i["max_batch_tokens"], 4096);
  EXPECT_EQ(i["max_batch_requests"], i["scheduler"]["max_batch_requests"]);
  EXPECT_EQ(i["max_client_batch_size"], 2048);
  EXPECT_EQ(i["max_concurrent_requests"], 512);
  EXPECT_EQ(i["tokenization_workers"], 2);
  EXPECT_TRUE(i["version"].is_string());
  ASSERT_TRUE(Post("/embed", {{"inputs", "warm up"}}));
  auto m = Call(port(), "GET", "/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_THAT(m->header("content-type"), HasSubstr("text/plain"));
  EXPECT_THAT(m->body, HasSubstr("tokenbatch_batch_size_bucket{model=\"tokenbatch\",le=\"1\"}"));
  EXPECT_THAT(m->body, HasSubstr("tokenbatch_http_requests_total{route=\"/embed\",code=\"200\"}"));
}

TEST_F(ServerTest, OpenAiStringMatchesTokenCountAndHeaders) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  auto r = Post("/v1/embeddings", {{"input", text}, {"model", "mine"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  EXPECT_EQ(b["model"], "tokenbatch");  // the served model's name, not the client's "mine"
  ASSERT_EQ(b["data"].size(), 1u);
  EXPECT_EQ(b["data"][0]["index"], 0);
  const auto v = Floats(b["data"][0]["embedding"]);
  EXPECT_EQ(v.size(), 16u);
  EXPECT_NEAR(Norm(v), 1.0, 1e-5);  // the noop backend normalises by default
  auto tok = Post("/tokenize", {{"inputs", text}});
  ASSERT_TRUE(tok);
  const std::size_t tokens = json::parse(tok->body)[0].size();
  EXPECT_EQ(b["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(b["usage"]["total_tokens"], tokens);
  EXPECT_EQ(r->header("x-compute-tokens"), std::to_string(tokens));
  EXPECT_EQ(r->header("x-compute-characters"), std::to_string(text.size()));
  EXPECT_FALSE(r->header("x-queue-time").empty());
  EXPECT_FALSE(r->header("x-inference-time").empty());
  EXPECT_FALSE(r->header("x-request-id").empty());
}

TEST_F(ServerTest, ArrayKeepsOrderAndMatchesSingleCalls) {
  const std::vector<std::string> texts = {"alpha", "a much longer second input with many words in it", "gamma ray"};
  auto r = Post("/v1/embeddings", {{"input", texts}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  ASSERT_EQ(b["data"].size(), 3u);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(b["data"][i]["index"], i);
    auto one = Post("/v1/embeddings", {{"input", texts[i]}});
    ASSERT_TRUE(one);
    EXPECT_EQ(Floats(b["data"][i]["embedding"]), Floats(json::parse(one->body)["data"][0]["embedding"]));
  }
  EXPECT_NE(Floats(b["data"][0]["embedding"]), Floats(b["data"][1]["embedding"]));
}

TEST_F(ServerTest, TokenIdsBase64AndDimensions) {
  auto ids = Post("/v1/embeddings", {{"input", {{1, 2, 3}, {4, 5}}}});
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->status, 200) << ids->body;
  const json b = json::parse(ids->body);
  EXPECT_EQ(b["usage"]["prompt_tokens"], 5);
  ASSERT_EQ(b["data"].size(), 2u);

  auto b64 = Post("/v1/embeddings", {{"input", {{1, 2, 3}, {4, 5}}}, {"encoding_format", "base64"}});
  ASSERT_TRUE(b64);
  const std::string enc = json::parse(b64->body)["data"][1]["embedding"];
  std::string bytes;
  ASSERT_TRUE(absl::Base64Unescape(enc, &bytes));
  std::vector<float> decoded(bytes.size() / 4);
  std::memcpy(decoded.data(), bytes.data(), bytes.size());
  EXPECT_EQ(decoded, Floats(b["data"][1]["embedding"]));

  auto dims = Post("/v1/embeddings", {{"input", "hello"}, {"dimensions", 8}});
  ASSERT_TRUE(dims);
  const auto v = Floats(json::parse(dims->body)["data"][0]["embedding"]);
  EXPECT_EQ(v.size(), 8u);
  EXPECT_NEAR(Norm(v), 1.0, 1e-5);  // truncated, then normalised
  auto too_wide = Post("/v1/embeddings", {{"input", "hello"}, {"dimensions", 17}});
  ASSERT_TRUE(too_wide);
  EXPECT_EQ(too_wide->status, 422);
  EXPECT_THAT(json::parse(too_wide->body)["error"]["message"].get<std::string>(), HasSubstr("dimensions 17"));
}

TEST_F(ServerTest, TeiEmbedNormalizeAndTokenize) {
  auto r = Post("/embed", {{"inputs", {"one", "two"}}, {"normalize", false}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_GT(std::abs(Norm(Floats(b[0])) - 1.0), 0.01);  // not normalised
  auto t = Post("/tokenize", {{"inputs", "hello world"}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200);
  const json toks = json::parse(t->body)[0];
  ASSERT_EQ(toks.size(), 2u);  // Qwen3: "hello", " world"
  EXPECT_EQ(toks[0]["text"], "hello");
  EXPECT_EQ(toks[1]["text"], " world");
  EXPECT_EQ(toks[1]["start"], 5);
  EXPECT_EQ(toks[1]["stop"], 11);
}

TEST_F(ServerTest, DecodeAndDetokenizeTurnIdsBackIntoText) {
  const std::string text = "Grüße, 世界! <|im_end|> tokens";
  auto t = Post("/tokenize", {{"inputs", json::array({text, "second"})}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  const json tokens = json::parse(t->body);
  std::vector<std::vector<std::uint32_t>> ids(2);
  for (std::size_t i = 0; i < 2; ++i) {
    for (const json& tok : tokens[i]) ids[i].push_back(tok["id"].get<std::uint32_t>());
  }
  // TEI: one list or a batch; special tokens skipped unless asked (Qwen3's
  // <|im_end|> is special).
  auto one = Post("/decode", {{"ids", ids[0]}});
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body;
  EXPECT_EQ(json::parse(one->body), json::array({"Grüße, 世界!  tokens"}));
  auto both = Post("/decode", {{"ids", ids}, {"skip_special_tokens", false}});
  ASSERT_TRUE(both);
  ASSERT_EQ(both->status, 200) << both->body;
  EXPECT_EQ(json::parse(both->body), json::array({text, "second"}));
  auto empty = Post("/decode", {{"ids", json::array()}});
  ASSERT_TRUE(empty);
  EXPECT_EQ(json::parse(empty->body), json::array({""}));
  // vLLM: {"tokens"} -> {"prompt"}, special tokens kept.
  auto v = Post("/detokenize", {{"model", "tokenbatch"}, {"tokens", ids[0]}});
  ASSERT_TRUE(v);
  ASSERT_EQ(v->status, 200) << v->body;
  EXPECT_EQ(json::parse(v->body), json({{"prompt", text}}));
}

TEST_F(ServerTest, DecodeRefusesIdsItCannotDecode) {
  auto unknown = Post("/decode", {{"ids", {{9707}, {9707, 4000000}}}});
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 422);
  EXPECT_THAT(json::parse(unknown->body)["error"].get<std::string>(),
              ::testing::HasSubstr("ids[1]: id 4000000 at position 1 is not in the vocabulary"));
  auto single = Post("/decode", {{"ids", {9707, 4000000}}});
  ASSERT_TRUE(single);
  EXPECT_EQ(single->status, 422);
  EXPECT_THAT(json::parse(single->body)["error"].get<std::string>(),
              ::testing::HasSubstr("`ids`: id 4000000 at position 1 is not in the vocabulary"));
  auto negative = Post("/decode", {{"ids", {1, -2}}});
  ASSERT_TRUE(negative);
  EXPECT_EQ(negative->status, 422);
  EXPECT_THAT(json::parse(negative->body)["error"].get<std::string>(), ::testing::HasSubstr("token id -2"));
  auto vllm_negative = Post("/detokenize", {{"tokens", {1, -2}}});
  ASSERT_TRUE(vllm_negative);
  EXPECT_EQ(vllm_negative->status, 400);
  auto text = Post("/decode", {{"ids", "hello"}});
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 400);
  auto floats = Post("/decode", {{"ids", {1.5}}});
  ASSERT_TRUE(floats);
  EXPECT_EQ(floats->status, 400);
  auto too_many = Post("/decode", {{"ids", std::vector<std::uint32_t>(kMaxDecodeIds + 1, 9707)}});
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->status, 413);
  auto vllm_unknown = Post("/detokenize", {{"tokens", {9707, 4000000}}});
  ASSERT_TRUE(vllm_unknown);
  EXPECT_EQ(vllm_unknown->status, 400);  // as vLLM answers
  EXPECT_THAT(json::parse(vllm_unknown->body)["error"]["message"].get<std::string>(),
              ::testing::HasSubstr("`tokens`: id 4000000 at position 1"));
  auto missing = Post("/detokenize", {{"prompt", "x"}});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 400);
  EXPECT_EQ(json::parse(missing->body)["error"]["message"], "missing required field `tokens`");  // OpenAI shape
}

TEST_F(ServerTest, UnknownRouteAndWrongMethod) {
  auto nf = Call(port(), "GET", "/nope");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  auto wm = Call(port(), "GET", "/v1/embeddings");
  ASSERT_TRUE(wm);
  EXPECT_EQ(wm->status, 405);
  EXPECT_EQ(wm->header("allow"), "POST, OPTIONS");
  EXPECT_THAT(json::parse(wm->body)["error"]["message"].get<std::string>(), HasSubstr("accepts POST"));
  auto wg = Call(port(), "POST", "/info", "{}");
  ASSERT_TRUE(wg);
  EXPECT_EQ(wg->status, 405);
  EXPECT_EQ(wg->header("allow"), "GET, HEAD, OPTIONS");
}

TEST_F(ServerTest, ModelsListsTheServedModelInOpenAiShape) {
  auto r = Call(port(), "GET", "/v1/models");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  EXPECT_EQ(b["object"], "list");
  ASSERT_EQ(b["data"].size(), 1u);
  EXPECT_EQ(b["data"][0]["id"], "tokenbatch");
  EXPECT_EQ(b["data"][0]["object"], "model");
  EXPECT_GT(b["data"][0]["created"].get<std::int64_t>(), 1'600'000'000);  // a Unix time in seconds
  EXPECT_EQ(b["data"][0]["owned_by"], "tokenbatch");
}

TEST_F(ServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  Connection c(port());
  ASSERT_GE(c.fd(), 0);
  for (int i = 0; i < 20; ++i) {
    auto r = c.Call("POST", "/embed", json{{"inputs", "request " + std::to_string(i)}}.dump());
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
  }
  auto h = c.Call("GET", "/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// Pipelined requests in one write, bodiless ones (GET) and ones whose body
// arrives with the header, are answered in order on the one connection.
TEST_F(ServerTest, PipelinedRequestsAnsweredInOrder) {
  Connection c(port());
  ASSERT_GE(c.fd(), 0);
  const std::string embed = json{{"inputs", "pipelined"}}.dump();
  using testing::BuildRequest;
  ASSERT_TRUE(c.Send(BuildRequest("GET", "/health", {}) + BuildRequest("POST", "/embed", embed) +
                     BuildRequest("GET", "/health", {}) + BuildRequest("POST", "/tokenize", embed)));
  auto health = c.Read();
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto embedded = c.Read();
  ASSERT_TRUE(embedded);
  EXPECT_EQ(embedded->status, 200);
  EXPECT_EQ(json::parse(embedded->body).size(), 1u);  // one embedding
  auto health2 = c.Read();
  ASSERT_TRUE(health2);
  EXPECT_EQ(health2->status, 200);
  auto tokens = c.Read();
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->status, 200);
  EXPECT_FALSE(tokens->header("x-request-id").empty());
}

TEST_F(ServerTest, ConcurrentClientsAllAnsweredCorrectly) {
  constexpr int kClients = 16, kRequests = 15;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      Connection conn(port());
      for (int i = 0; i < kRequests; ++i) {
        // Each client's inputs are token ids unique to it, so mixed-up replies show.
        auto r = conn.Call("POST", "/v1/embeddings", json{{"input", {{c + 1, i + 1}}}}.dump());
        if (!r || r->status != 200) continue;
        const json b = json::parse(r->body);
        if (b["usage"]["prompt_tokens"] != 2) continue;
        auto expect = Post("/v1/embeddings", {{"input", {{c + 1, i + 1}}}});
        if (expect && Floats(json::parse(expect->body)["data"][0]["embedding"]) ==
                          Floats(b["data"][0]["embedding"])) {
          ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
}

}  // namespace
}  // namespace tokenbatch::server
