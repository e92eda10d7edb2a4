// The Router without sockets: HttpRequest in, HttpReply out, over a real
// EmbeddingService (noop backend, the real Qwen3 tokenizer). Every route's
// checks in the order Handle applies them (method, key, shutdown, concurrency,
// content coding), the embedding reply, cancellation through the returned
// function, and the counts /metrics reports.
#include "api/router.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "service/test_gated_encoder.h"
#include "testing/tokenizer_data.h"
#include "testing/wait_until.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "testing/zlib_compress.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

struct Fixture {
  std::unique_ptr<EmbeddingService> service;
  std::unique_ptr<Router> router;
};

Fixture MakeWith(ServerOptions options, std::unique_ptr<backend::Encoder> encoder) {
  Fixture f;
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("qwen3"));
  EXPECT_TRUE(tok.ok()) << tok.status();
  if (!tok.ok()) return f;
  auto service = EmbeddingService::Create({}, *std::move(tok), std::move(encoder));
  EXPECT_TRUE(service.ok()) << service.status();
  if (!service.ok()) return f;
  f.service = *std::move(service);
  f.router = std::make_unique<Router>(options, f.service.get());
  return f;
}

Fixture Make(ServerOptions options = {}, backend::NoopEncoderOptions noop = {.hidden_size = 4}) {
  return MakeWith(std::move(options), backend::MakeNoopEncoder(noop));
}

// Handles `request` and waits for its one reply.
HttpReply Call(Router& router, HttpRequest request) {
  auto promise = std::make_shared<std::promise<HttpReply>>();
  auto replies = std::make_shared<int>(0);
  router.Handle(std::move(request), [promise, replies](HttpReply r) {
    if (++*replies == 1) promise->set_value(std::move(r));
  });
  return promise->get_future().get();
}

HttpRequest Post(std::string target, std::string body) {
  return HttpRequest{.method = "POST", .target = std::move(target), .body = std::move(body)};
}

std::string Header(const HttpReply& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

TEST(Router, UnknownPathsMethodsAndPreflights) {
  Fixture f = Make();
  ASSERT_TRUE(f.router);
  EXPECT_EQ(Call(*f.router, {.method = "GET", .target = "/nope"}).status, 404);
  const HttpReply get_embed = Call(*f.router, {.method = "GET", .target = "/embed"});
  EXPECT_EQ(get_embed.status, 405);
  EXPECT_EQ(Header(get_embed, "Allow"), "POST, OPTIONS");
  const HttpReply options = Call(*f.router, {.method = "OPTIONS", .target = "/info?x=1"});
  EXPECT_EQ(options.status, 204);
  EXPECT_EQ(Header(options, "Allow"), "GET, HEAD, OPTIONS");
  EXPECT_EQ(Call(*f.router, {.method = "HEAD", .target = "/health"}).status, 200);
}

TEST(Router, EmbedReplyHasTheBodyAndTeiHeaders) {
  Fixture f = Make();
  ASSERT_TRUE(f.router);
  const HttpReply reply = Call(*f.router, Post("/embed", R"({"inputs":["a","b"]})"));
  EXPECT_EQ(reply.status, 200);
  const json body = json::parse(reply.body);
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0].size(), 4u);
  EXPECT_EQ(Header(reply, "x-compute-characters"), "2");
  int request_ids = 0;
  for (const auto& header : reply.headers) request_ids += header.first == "x-request-id";
  EXPECT_EQ(request_ids, 1);
}

TEST(Router, AuthCodingsAndShutdown) {
  Fixture f = Make({.api_key = "k"});
  ASSERT_TRUE(f.router);
  HttpRequest no_key = Post("/embed", R"({"inputs":"a"})");
  const HttpReply unauthorized = Call(*f.router, no_key);
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(Header(unauthorized, "WWW-Authenticate"), "Bearer");
  HttpRequest keyed = Post("/embed", R"({"inputs":"a"})");
  keyed.authorization = "Bearer k";
  EXPECT_EQ(Call(*f.router, keyed).status, 200);
  keyed.content_encoding = "br";
  const HttpReply unsupported = Call(*f.router, keyed);
  EXPECT_EQ(unsupported.status, 415);
  EXPECT_EQ(Header(unsupported, "Accept-Encoding"), "gzip, deflate, identity");
  keyed.content_encoding = "gzip";
  keyed.body = tokenbatch::testing::Gzip(R"({"inputs":"a"})");
  EXPECT_EQ(Call(*f.router, keyed).status, 200);
  // /health needs no key and says when the server stops; work is refused then.
  EXPECT_EQ(Call(*f.router, {.method = "GET", .target = "/health"}).status, 200);
  f.router->BeginShutdown();
  EXPECT_EQ(Call(*f.router, {.method = "GET", .target = "/health"}).status, 503);
  keyed.content_encoding.clear();
  keyed.body = R"({"inputs":"a"})";
  EXPECT_EQ(Call(*f.router, keyed).status, 503);
  EXPECT_EQ(f.router->in_flight(), 0);
}

TEST(Router, DrainingSaysSoOnHealthAndKeepsServing) {
  Fixture f = Make();
  EXPECT_EQ(f.router->AgentCheck(), "ready up 100%\n");  // idle: full weight
  f.router->BeginDrain();
  EXPECT_EQ(f.router->state(), ServingState::kDraining);
  const HttpReply health = Call(*f.router, {.method = "GET", .target = "/health"});
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(json::parse(health.body), json({{"status", "draining"}}));
  EXPECT_EQ(f.router->AgentCheck(), "drain\n");
  // Work a balancer still sends before it notices is served.
  EXPECT_EQ(Call(*f.router, Post("/embed", R"({"inputs":"a"})")).status, 200);
  f.router->BeginShutdown();
  EXPECT_EQ(json::parse(Call(*f.router, {.method = "GET", .target = "/health"}).body),
            json({{"status", "shutting down"}}));
  EXPECT_EQ(f.router->AgentCheck(), "down\n");
  f.router->BeginDrain();  // too late: stays stopping
  EXPECT_EQ(f.router->state(), ServingState::kStopping);
  EXPECT_EQ(Call(*f.router, Post("/embed", R"({"inputs":"a"})")).status, 503);
  EXPECT_THAT(f.router->MetricsText(), HasSubstr("\ntokenbatch_lb_weight_percent 100\n"));
}

// Waits (bounded) until the service has accepted `n` inputs into its Batcher.
bool WaitForSubmitted(const EmbeddingService& service, std::uint64_t n) {
  return tokenbatch::testing::WaitUntil([&] { return service.metrics().requests_submitted >= n; });
}

TEST(Router, TheCancelFunctionResolvesAQueuedRequestOnce) {
  // The first batch is held at the backend's gate: the second request stays
  // queued behind it until the test opens the gate.
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  Fixture f = MakeWith({}, std::make_unique<tokenbatch::testing::GatedEncoder>(
                               backend::MakeNoopEncoder({.hidden_size = 4}), gate));
  ASSERT_TRUE(f.router);
  auto first = std::make_shared<std::promise<int>>();
  std::future<int> first_done = first->get_future();
  f.router->Handle(Post("/embed", R"({"inputs":"first"})"), [first](HttpReply r) { first->set_value(r.status); });
  ASSERT_TRUE(gate->WaitForArrivals(1));
  auto replies = std::make_shared<std::atomic<int>>(0);
  auto second = std::make_shared<std::promise<HttpReply>>();
  std::future<HttpReply> second_done = second->get_future();
  std::function<void()> cancel =
      f.router->Handle(Post("/embed", R"({"inputs":"second"})"), [second, replies](HttpReply r) {
        if (replies->fetch_add(1) == 0) second->set_value(std::move(r));
      });
  ASSERT_TRUE(cancel);
  ASSERT_TRUE(WaitForSubmitted(*f.service, 2));  // queued behind the held batch
  cancel();
  const bool answered = second_done.wait_for(tokenbatch::testing::kWaitLimit) == std::future_status::ready;
  // Answered by the cancel itself, while the batch in front of it is still held.
  EXPECT_EQ(first_done.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  gate->Open();
  ASSERT_TRUE(answered) << "the cancel did not answer the queued request";
  const HttpReply cancelled = second_done.get();
  EXPECT_EQ(cancelled.status, 499);
  EXPECT_THAT(cancelled.body, HasSubstr("disconnected"));
  EXPECT_EQ(first_done.get(), 200);
  cancel();  // a second call changes nothing
  f.router.reset();
  f.service.reset();  // drains: a late second answer would come before this returns
  EXPECT_EQ(replies->load(), 1);
  EXPECT_EQ(gate->arrived(), 1);  // the cancelled input was never computed
}

TEST(Router, OneRequestOverTheConcurrencyLimitIs429) {
  Fixture f = Make({.max_concurrent_requests = 1}, {.hidden_size = 4, .delay = std::chrono::milliseconds(300)});
  ASSERT_TRUE(f.router);
  auto first = std::make_shared<std::promise<int>>();
  f.router->Handle(Post("/embed", R"({"inputs":"first"})"), [first](HttpReply r) { first->set_value(r.status); });
  const HttpReply over = Call(*f.router, Post("/embed", R"({"inputs":"second"})"));
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(Header(over, "Retry-After"), "1");
  EXPECT_EQ(first->get_future().get(), 200);
  EXPECT_EQ(Call(*f.router, Post("/embed", R"({"inputs":"third"})")).status, 200);  // room again
  EXPECT_THAT(f.router->MetricsText(), HasSubstr(R"(tokenbatch_http_requests_total{route="/embed",code="429"} 1)"));
}

}  // namespace
}  // namespace tokenbatch::server
