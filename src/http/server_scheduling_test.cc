// Priority and deadlines over HTTP: vLLM's `priority` body field reorders queued
// inputs, and X-Request-Timeout-Ms fails inputs not computed in time with 504.
// One worker, one input per batch and a slow noop backend make the order
// observable: while a blocker runs (kRun), two requests queue up; the one the
// scheduler picks next finishes a whole kRun before the other.
#include <chrono>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/test_client.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::BuildRequest;
using testing::Call;
using testing::Connection;
using testing::Response;
using Clock = std::chrono::steady_clock;

constexpr auto kRun = std::chrono::milliseconds(250);  // the noop backend's time per batch

testing::TestServer SlowServer() {
  ServiceOptions one_at_a_time;
  one_at_a_time.batcher.scheduler.max_batch_size = 1;
  one_at_a_time.batcher.scheduler.max_wait = Duration::zero();
  return testing::StartTestServer({}, one_at_a_time, {.hidden_size = 8, .delay = kRun});
}

// Sends `body` to /embed on its own connection; the future gives the response
// and when it arrived.
std::future<std::pair<std::optional<Response>, Clock::time_point>> Send(std::uint16_t port, json body) {
  auto conn = std::make_shared<Connection>(port);
  EXPECT_TRUE(conn->Send(BuildRequest("POST", "/embed", body.dump())));
  return std::async(std::launch::async, [conn] {
    auto r = conn->Read(std::chrono::seconds(10));
    return std::make_pair(std::move(r), Clock::now());
  });
}

// Which of two requests, queued behind a running blocker in this order, is
// answered first. Their gap (~kRun) dwarfs any scheduling noise.
bool SecondFinishesFirst(std::uint16_t port, const json& first, const json& second) {
  auto blocker = Send(port, {{"inputs", "blocker"}});
  std::this_thread::sleep_for(kRun / 5);  // the blocker is running
  auto a = Send(port, first);
  std::this_thread::sleep_for(kRun / 10);  // `first` is queued before `second`
  auto b = Send(port, second);
  const auto ra = a.get(), rb = b.get();
  EXPECT_EQ(blocker.get().first->status, 200);
  EXPECT_TRUE(ra.first && rb.first);
  EXPECT_EQ(ra.first->status, 200);
  EXPECT_EQ(rb.first->status, 200);
  return rb.second < ra.second;
}

TEST(ServerScheduling, LowerPriorityValueIsServedFirst) {
  auto s = SlowServer();
  ASSERT_NE(s.port, 0);
  // Control: the same priority keeps arrival order...
  EXPECT_FALSE(SecondFinishesFirst(s.port, {{"inputs", "first"}}, {{"inputs", "second"}}));
  // ...and a lower value (vLLM's convention) jumps the queue, on both routes' field.
  EXPECT_TRUE(SecondFinishesFirst(s.port, {{"inputs", "first"}, {"priority", 5}},
                                  {{"inputs", "second"}, {"priority", -5}}));
}

TEST(ServerScheduling, DeadlinePassedWhileQueuedIs504) {
  auto s = SlowServer();
  ASSERT_NE(s.port, 0);
  auto blocker = Send(s.port, {{"inputs", "blocker"}});
  std::this_thread::sleep_for(kRun / 5);
  const auto sent = Clock::now();
  auto late = Call(s.port, "POST", "/v1/embeddings", json{{"input", "late"}}.dump(), {"X-Request-Timeout-Ms: 50"});
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 504);
  EXPECT_THAT(json::parse(late->body)["error"]["message"].get<std::string>(), HasSubstr("deadline"));
  // Answered at its deadline, not after the blocker's batch.
  EXPECT_LT(Clock::now() - sent, kRun);
  EXPECT_EQ(blocker.get().first->status, 200);

  auto in_time = Call(s.port, "POST", "/embed", json{{"inputs", "ok"}}.dump(), {"X-Request-Timeout-Ms: 10000"});
  ASSERT_TRUE(in_time);
  EXPECT_EQ(in_time->status, 200);
}

TEST(ServerScheduling, MalformedTimeoutHeaderIs400) {
  auto s = testing::StartTestServer();
  ASSERT_NE(s.port, 0);
  for (const char* bad : {"soon", "0", "-5", "1.5", "99999999999999999999"}) {
    auto r = Call(s.port, "POST", "/embed", json{{"inputs", "x"}}.dump(),
                  {std::string("X-Request-Timeout-Ms: ") + bad});
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_THAT(json::parse(r->body)["error"].get<std::string>(), HasSubstr("X-Request-Timeout-Ms")) << bad;
  }
}

}  // namespace
}  // namespace tokenbatch::server
