// Slow and idle clients cannot hold the server: a client that trickles its
// header a byte at a time is cut at the read timeout however steadily it
// sends, thousands of idle connections leave others served, and oversized
// header blocks are refused with 431. In each case other clients are served
// meanwhile, within the limits (ServerOptions: read_timeout, header_limit).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http/test_client.h"

namespace tokenbatch::server {
namespace {

using Clock = std::chrono::steady_clock;
using testing::Call;
using testing::Connection;

constexpr auto kReadTimeout = std::chrono::milliseconds(600);

TEST(SlowClient, HeadersTrickledAByteAtATimeAreCutAtTheReadTimeoutWhileOthersAreServed) {
  auto server = testing::StartTestServer({.read_timeout = kReadTimeout});
  Connection slow(server.port);
  ASSERT_GE(slow.fd(), 0);
  const std::string header = "POST /embed HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(4000, 'p') + "\r\n";
  std::atomic<bool> cut{false};
  const auto start = Clock::now();
  Clock::time_point cut_at{};
  std::thread trickle([&] {
    for (const char byte : header) {
      if (!slow.Send(std::string_view(&byte, 1))) break;  // the server closed the connection
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (Clock::now() - start > std::chrono::seconds(20)) break;
    }
    cut_at = Clock::now();
    cut = slow.WaitForClose(std::chrono::seconds(5));
  });
  // Meanwhile, other clients are answered at once.
  int served = 0;
  while (Clock::now() - start < kReadTimeout) {
    auto r = Call(server.port, "POST", "/embed", R"({"inputs": "still served"})");
    EXPECT_TRUE(r);  // not ASSERT: the trickling thread must be joined first
    if (!r) break;
    EXPECT_EQ(r->status, 200);
    ++served;
  }
  trickle.join();
  EXPECT_TRUE(cut.load());
  EXPECT_GE(served, 1);
  // Cut at the read timeout (plus the sweep's period), long before the 40 s the
  // whole header would take at this pace.
  EXPECT_LT(cut_at - start, kReadTimeout + std::chrono::seconds(3));
}

TEST(SlowClient, ThousandsOfIdleConnectionsLeaveOthersServedAndAreClosedAtTheReadTimeout) {
  constexpr int kIdle = 3000;
  // Client and server share this process: each connection costs two descriptors.
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  ASSERT_GE(limit.rlim_cur, rlim_t{2 * kIdle + 200}) << "the hard open-files limit is too low for this test";

  auto server = testing::StartTestServer({.read_timeout = std::chrono::milliseconds(2000)});
  std::vector<std::unique_ptr<Connection>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<Connection>(server.port));
    ASSERT_GE(idle.back()->fd(), 0) << "connection " << i;
  }
  const auto opened = Clock::now();
  for (int i = 0; i < 5; ++i) {
    auto r = Call(server.port, "POST", "/embed", R"({"inputs": "served beside idle connections"})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // Served, not queued behind the idle connections (a generous bound: the
  // machine may be loaded).
  EXPECT_LT(Clock::now() - opened, std::chrono::seconds(10));
  // Every idle connection is closed by the server once its read timeout passes.
  int closed = 0;
  for (auto& c : idle) closed += c->WaitForClose(std::chrono::seconds(10)) ? 1 : 0;
  EXPECT_EQ(closed, kIdle);
  auto after = Call(server.port, "GET", "/health");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST(SlowClient, OversizedHeaderBlocksAre431AndOthersAreServed) {
  auto server = testing::StartTestServer({.header_limit = 4096, .read_timeout = kReadTimeout});
  const std::vector<std::string> cases = {
      "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(8000, 'b') + "\r\n\r\n",  // one long field
      "GET /" + std::string(8000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n",                   // a long target
  };
  for (const std::string& request : cases) {
    Connection c(server.port);
    std::thread sender([&] { c.Send(request); });
    auto r = c.Read();
    sender.join();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431);
    auto ok = Call(server.port, "GET", "/health");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
  }
  // A header block within the limit is served.
  auto within = Call(server.port, "GET", "/health", {}, {"X-Fits: " + std::string(3000, 'f')});
  ASSERT_TRUE(within);
  EXPECT_EQ(within->status, 200);
}

}  // namespace
}  // namespace tokenbatch::server
