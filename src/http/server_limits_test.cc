// Servers with their own options on a loopback port: the API key, the oversize
// policies, the queue and concurrency limits (429), and a failing backend (500
// for the failing input only). Noop backend with the real Qwen3 tokenizer.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/test_client.h"
#include "service/test_gated_encoder.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::Call;
using testing::Connection;
using testing::StartTestServer;

std::vector<float> Floats(const json& j) { return j.get<std::vector<float>>(); }

TEST(ServerAuth, BearerKeyRequiredExceptHealth) {
  auto s = StartTestServer({.api_key = "sekret"});
  ASSERT_NE(s.port, 0);
  const std::string body = json{{"input", "x"}}.dump();
  auto none = Call(s.port, "POST", "/v1/embeddings", body);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_THAT(json::parse(none->body)["error"]["message"].get<std::string>(), HasSubstr("missing API key"));
  auto wrong = Call(s.port, "POST", "/v1/embeddings", body, {"Authorization: Bearer nope"});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto right = Call(s.port, "POST", "/v1/embeddings", body, {"Authorization: bearer sekret"});  // scheme is case-insensitive
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  auto metrics = Call(s.port, "GET", "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401);
  auto health = Call(s.port, "GET", "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(ServerLimits, OversizeRejectIs413AndTruncateAppliesPerInput) {
  ServiceOptions reject;
  reject.batcher.scheduler.max_input_tokens = 8;
  auto s = StartTestServer({}, reject);
  ASSERT_NE(s.port, 0);
  const std::string long_text = "one two three four five six seven eight nine ten eleven twelve";
  auto r = Call(s.port, "POST", "/embed", json{{"inputs", {"short", long_text}}}.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  const std::string msg = json::parse(r->body)["error"];
  EXPECT_THAT(msg, HasSubstr("input[1]"));
  EXPECT_THAT(msg, HasSubstr("max_input_tokens 8"));
  // A request-level truncate (TEI) cuts it instead.
  auto t = Call(s.port, "POST", "/embed", json{{"inputs", {"short", long_text}}, {"truncate", true}}.dump());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, 200) << t->body;
  EXPECT_EQ(t->header("x-compute-tokens"), std::to_string(1 + 8));
  auto h = Call(s.port, "GET", "/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST(ServerLimits, TruncatePolicyCutsOnlyTheLongInput) {
  ServiceOptions truncate;
  truncate.batcher.scheduler.max_input_tokens = 4;
  truncate.batcher.scheduler.oversize = OversizePolicy::kTruncate;
  auto s = StartTestServer({}, truncate);
  ASSERT_NE(s.port, 0);
  auto both = Call(s.port, "POST", "/v1/embeddings", json{{"input", {{7, 8}, {1, 2, 3, 4, 5, 6, 7}}}}.dump());
  ASSERT_TRUE(both);
  ASSERT_EQ(both->status, 200) << both->body;
  const json b = json::parse(both->body);
  auto alone = Call(s.port, "POST", "/v1/embeddings", json{{"input", {{7, 8}}}}.dump());
  auto cut = Call(s.port, "POST", "/v1/embeddings", json{{"input", {{1, 2, 3, 4}}}}.dump());
  ASSERT_TRUE(alone && cut);
  EXPECT_EQ(Floats(b["data"][0]["embedding"]), Floats(json::parse(alone->body)["data"][0]["embedding"]));
  EXPECT_EQ(Floats(b["data"][1]["embedding"]), Floats(json::parse(cut->body)["data"][0]["embedding"]));
}

// Polls /metrics until the first batch is dispatched (the test backend then holds
// it for its delay), at most 1 s.
void WaitUntilRunning(std::uint16_t port) {
  for (int i = 0; i < 500; ++i) {
    auto m = Call(port, "GET", "/metrics");
    if (m && m->body.find("tokenbatch_batches_total{model=\"tokenbatch\"} 1") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(ServerLimits, QueueFullIs429) {
  ServiceOptions small;
  small.batcher.scheduler.max_queue_size = 2;
  small.batcher.scheduler.max_batch_size = 1;
  auto s = StartTestServer({}, small, {.hidden_size = 16, .delay = std::chrono::milliseconds(300)});
  ASSERT_NE(s.port, 0);
  Connection first(s.port);
  ASSERT_TRUE(first.Send(testing::BuildRequest("POST", "/embed", json{{"inputs", "busy"}}.dump())));
  // Wait until "busy" runs (300 ms in the backend), so the worker is taken and the
  // three inputs below queue: two fit max_queue_size, the third does not.
  WaitUntilRunning(s.port);
  auto r = Call(s.port, "POST", "/embed", json{{"inputs", {"a", "b", "c"}}}.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->header("retry-after"), "1");
  EXPECT_EQ(json::parse(r->body)["error_type"], "Overloaded");
  auto f = first.Read();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, 200);
}

TEST(ServerLimits, TooManyConcurrentRequestsIs429) {
  // The first request is held at the backend's gate, so it is in flight for as
  // long as the second takes.
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  auto s = testing::StartTestServerWith(
      {.max_concurrent_requests = 1}, {},
      std::make_unique<tokenbatch::testing::GatedEncoder>(backend::MakeNoopEncoder({.hidden_size = 16}), gate));
  ASSERT_NE(s.port, 0);
  Connection first(s.port);
  ASSERT_TRUE(first.Send(testing::BuildRequest("POST", "/embed", json{{"inputs", "busy"}}.dump())));
  ASSERT_TRUE(gate->WaitForArrivals(1));  // in process: /metrics would count as a request here
  auto r = Call(s.port, "POST", "/v1/embeddings", json{{"input", "x"}}.dump());
  gate->Open();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->header("retry-after"), "1");
  EXPECT_THAT(json::parse(r->body)["error"]["message"].get<std::string>(), HasSubstr("max_concurrent_requests"));
  EXPECT_EQ(gate->arrived(), 1);  // the second was refused, not computed
  auto f = first.Read();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, 200);
}

TEST(ServerFailures, BackendFailureIs500ForTheFailingInputOnly) {
  auto s = StartTestServer({}, {}, {.hidden_size = 16, .fail_on_id = 666});
  ASSERT_NE(s.port, 0);
  auto bad = Call(s.port, "POST", "/v1/embeddings", json{{"input", {{1, 666}, {2, 3}}}}.dump());
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 500);
  const std::string msg = json::parse(bad->body)["error"]["message"];
  EXPECT_THAT(msg, HasSubstr("input[0]"));
  EXPECT_THAT(msg, HasSubstr("fail on id 666"));
  auto good = Call(s.port, "POST", "/v1/embeddings", json{{"input", {{2, 3}}}}.dump());
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
}

}  // namespace
}  // namespace tokenbatch::server
