// Priority and deadlines over HTTP: vLLM's `priority` body field reorders queued
// inputs, and X-Request-Timeout-Ms fails inputs not computed in time with 504.
// One worker, one input per batch and a backend that holds each batch at a gate
// until the test lets it through make the order observable: while a blocker
// is held, two requests queue up; once the blocker and one more batch are let
// through, only the request the scheduler picked next can have been answered.
#include <chrono>
#include <future>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/test_client.h"
#include "service/test_gated_encoder.h"
#include "testing/wait_until.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::BuildRequest;
using testing::Call;
using testing::Connection;
using testing::Response;
using tokenbatch::testing::Gate;
using tokenbatch::testing::WaitUntil;

// A server with one worker that computes one input per batch, each batch held
// at `gate` until the test lets it through.
testing::TestServer GatedServer(const std::shared_ptr<Gate>& gate) {
  ServiceOptions one_at_a_time;
  one_at_a_time.batcher.scheduler.max_batch_size = 1;
  one_at_a_time.batcher.scheduler.max_wait = Duration::zero();
  return testing::StartTestServerWith(
      {}, one_at_a_time,
      std::make_unique<tokenbatch::testing::GatedEncoder>(backend::MakeNoopEncoder({.hidden_size = 8}), gate));
}

// Sends `body` to /embed on its own connection; the future gives the response.
std::future<std::optional<Response>> Send(std::uint16_t port, json body) {
  auto conn = std::make_shared<Connection>(port);
  EXPECT_TRUE(conn->Send(BuildRequest("POST", "/embed", body.dump())));
  return std::async(std::launch::async, [conn] { return conn->Read(std::chrono::seconds(60)); });
}

bool Ready(const std::future<std::optional<Response>>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// Which of two requests, queued behind a held blocker in this order, the server
// computes first: the blocker and one more batch are let through, and the other
// request's batch stays held, so exactly one of the two can be answered.
bool SecondIsServedFirst(testing::TestServer& s, Gate& gate, const json& first, const json& second) {
  const int batches = gate.arrived();
  const std::uint64_t submitted = s.service->metrics().requests_submitted;
  auto blocker = Send(s.port, {{"inputs", "blocker"}});
  EXPECT_TRUE(gate.WaitForArrivals(batches + 1));  // the blocker holds the only worker
  auto a = Send(s.port, first);
  EXPECT_TRUE(WaitUntil([&] { return s.service->metrics().requests_submitted >= submitted + 2; }));
  auto b = Send(s.port, second);  // queued after `first`
  EXPECT_TRUE(WaitUntil([&] { return s.service->metrics().requests_submitted >= submitted + 3; }));
  gate.Let(2);  // the blocker, then whichever request the scheduler picks
  EXPECT_TRUE(WaitUntil([&] { return Ready(a) || Ready(b); }));
  const bool second_first = Ready(b);
  EXPECT_NE(Ready(a), second_first) << "both answered, or neither, with one batch still held";
  gate.Let(1);
  const auto ra = a.get(), rb = b.get(), rblocker = blocker.get();
  EXPECT_TRUE(ra && rb && rblocker);
  if (ra && rb && rblocker) {
    EXPECT_EQ(rblocker->status, 200);
    EXPECT_EQ(ra->status, 200);
    EXPECT_EQ(rb->status, 200);
  }
  return second_first;
}

TEST(ServerScheduling, LowerPriorityValueIsServedFirst) {
  auto gate = std::make_shared<Gate>();
  auto s = GatedServer(gate);
  ASSERT_NE(s.port, 0);
  // Control: the same priority keeps arrival order...
  EXPECT_FALSE(SecondIsServedFirst(s, *gate, {{"inputs", "first"}}, {{"inputs", "second"}}));
  // ...and a lower value (vLLM's convention) jumps the queue, on both routes' field.
  EXPECT_TRUE(SecondIsServedFirst(s, *gate, {{"inputs", "first"}, {"priority", 5}},
                                  {{"inputs", "second"}, {"priority", -5}}));
  gate->Open();
}

TEST(ServerScheduling, DeadlinePassedWhileQueuedIs504) {
  auto gate = std::make_shared<Gate>();
  auto s = GatedServer(gate);
  ASSERT_NE(s.port, 0);
  auto blocker = Send(s.port, {{"inputs", "blocker"}});
  ASSERT_TRUE(gate->WaitForArrivals(1));  // the blocker holds the only worker
  auto late = Call(s.port, "POST", "/v1/embeddings", json{{"input", "late"}}.dump(), {"X-Request-Timeout-Ms: 50"});
  // Answered at its deadline, while the batch in front of it is still held.
  EXPECT_FALSE(Ready(blocker));
  gate->Open();
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 504);
  EXPECT_THAT(json::parse(late->body)["error"]["message"].get<std::string>(), HasSubstr("deadline"));
  const auto unblocked = blocker.get();
  ASSERT_TRUE(unblocked);
  EXPECT_EQ(unblocked->status, 200);
  EXPECT_EQ(gate->arrived(), 1);  // the late input was never computed

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
