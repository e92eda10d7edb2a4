// Graceful shutdown: under load every request sent is answered (200, or 503 with
// Connection: close once stopping); queued inputs are drained or failed per the
// drain setting; the port is closed afterwards.
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/test_client.h"
#include "service/test_gated_encoder.h"
#include "testing/wait_until.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;
using testing::BuildRequest;
using testing::Call;
using testing::Connection;

TEST(ServerShutdown, UnderLoadEveryRequestIsAnswered) {
  auto s = testing::StartTestServer({}, {}, {.hidden_size = 16, .delay = std::chrono::milliseconds(2)});
  ASSERT_NE(s.port, 0);
  constexpr int kClients = 12;
  std::atomic<int> started{0}, ok{0}, unavailable{0}, unanswered{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Connection conn(s.port);
      bool counted = false;
      for (int i = 0; i < 100000; ++i) {
        if (!conn.Send(BuildRequest("POST", "/embed", json{{"inputs", {"client", std::to_string(c)}}}.dump()))) {
          unanswered.fetch_add(1);
          return;
        }
        auto r = conn.Read();
        if (!r) {
          unanswered.fetch_add(1);
          return;
        }
        if (!counted) started.fetch_add(1), counted = true;
        if (r->status == 200) ok.fetch_add(1);
        else if (r->status == 503) unavailable.fetch_add(1);
        else other.fetch_add(1);
        if (r->header("connection") == "close") return;
      }
    });
  }
  while (started.load() < kClients) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s.Stop();
  for (auto& t : clients) t.join();
  EXPECT_EQ(unanswered.load(), 0);
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(ok.load(), kClients);
  EXPECT_FALSE(Call(s.port, "GET", "/health").has_value());  // no longer listening
}

// Five single-input requests queue behind one worker, the first held at the
// backend's gate; Stop comes while they wait. The gate opens once the shutdown
// has begun: under kCancelQueued once the four queued inputs have failed; under
// kDrain once the server is stopping, with a delay per batch that keeps the
// rest queued until the Batcher's shutdown, which follows at once.
int QueuedRequestsAnsweredOk(ShutdownMode mode, int* answered) {
  *answered = 0;
  ServiceOptions so;
  so.batcher.scheduler.max_batch_size = 1;
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  auto s = testing::StartTestServerWith(
      {.drain = mode}, so,
      std::make_unique<tokenbatch::testing::GatedEncoder>(
          backend::MakeNoopEncoder({.hidden_size = 16, .delay = std::chrono::milliseconds(60)}), gate));
  if (s.port == 0) return -1;
  std::vector<std::unique_ptr<Connection>> conns;
  for (int i = 0; i < 5; ++i) {
    conns.push_back(std::make_unique<Connection>(s.port));
    conns.back()->Send(BuildRequest("POST", "/embed", json{{"inputs", "queued " + std::to_string(i)}}.dump()));
  }
  EXPECT_TRUE(gate->WaitForArrivals(1));
  EXPECT_TRUE(tokenbatch::testing::WaitUntil([&] { return s.service->metrics().requests_submitted == 5; }));
  std::thread stopper([&] { s.Stop(); });
  if (mode == ShutdownMode::kCancelQueued) {
    EXPECT_TRUE(tokenbatch::testing::WaitUntil([&] {
      const MetricsSnapshot m = s.service->metrics();
      const auto failed = m.failures_by_kind.find("shutting_down");
      return failed != m.failures_by_kind.end() && failed->second == 4;
    })) << "the queued inputs were not failed by the shutdown";
  } else {
    EXPECT_TRUE(tokenbatch::testing::WaitUntil([&] { return s.router->shutting_down(); }));
  }
  gate->Open();
  int ok = 0;
  for (auto& c : conns) {
    auto r = c->Read(std::chrono::seconds(60));
    if (r) ++*answered;
    if (r && r->status == 200) ++ok;
  }
  stopper.join();
  return ok;
}

TEST(ServerShutdown, DrainComputesQueuedRequests) {
  int answered = 0;
  EXPECT_EQ(QueuedRequestsAnsweredOk(ShutdownMode::kDrain, &answered), 5);
  EXPECT_EQ(answered, 5);
}

TEST(ServerShutdown, CancelModeAnswersQueuedRequests503) {
  int answered = 0;
  const int ok = QueuedRequestsAnsweredOk(ShutdownMode::kCancelQueued, &answered);
  EXPECT_EQ(answered, 5);
  EXPECT_EQ(ok, 1);  // the one running finishes; the queued ones get 503
}

}  // namespace
}  // namespace tokenbatch::server
