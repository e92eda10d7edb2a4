// Draining for a load balancer, over loopback: the agent-check listener's line
// follows the server's state (weight, drain, down), and a draining server still
// serves but closes each connection after its reply.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/test_client.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;
using testing::Call;
using testing::Connection;

// Connects to the agent port and reads until the server closes: the whole
// answer. nullopt when the connection is refused.
std::optional<std::string> AgentLine(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return std::nullopt;
  }
  timeval timeout{.tv_sec = 5, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return out;
}

TEST(ServerDrain, AgentReportsWeightThenDrainThenDown) {
  ServerOptions options;
  options.lb_agent_port = 0;
  // 400 ms per batch: a request is still computing when Stop begins.
  auto s = testing::StartTestServer(options, {}, {.hidden_size = 16, .delay = std::chrono::milliseconds(400)});
  ASSERT_NE(s.port, 0);
  const std::uint16_t agent = s.http->lb_agent_port();
  ASSERT_NE(agent, 0);
  ASSERT_NE(agent, s.port);
  EXPECT_EQ(AgentLine(agent), "ready up 100%\n");

  s.http->BeginDrain();
  EXPECT_EQ(AgentLine(agent), "drain\n");
  // Still served while draining, but the connection closes after the reply.
  Connection conn(s.port);
  const auto served = conn.Call("POST", "/embed", json{{"inputs", "late but served"}}.dump());
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->status, 200);
  EXPECT_EQ(served->header("connection"), "close");
  EXPECT_TRUE(conn.WaitForClose(std::chrono::seconds(5)));
  const auto health = Call(s.port, "GET", "/health");
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(json::parse(health->body), json({{"status", "draining"}}));

  // Stop while a request computes: the agent says "down" until the I/O threads end.
  auto in_flight = std::async(std::launch::async, [&] {
    return Call(s.port, "POST", "/embed", json{{"inputs", "in flight at stop"}}.dump());
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s.service->metrics().requests_submitted < 2 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto stopped = std::async(std::launch::async, [&] { s.Stop(); });
  std::optional<std::string> line;
  while (std::chrono::steady_clock::now() < give_up) {
    line = AgentLine(agent);
    if (line != "drain\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(line, "down\n");
  stopped.get();
  const auto answered = in_flight.get();
  ASSERT_TRUE(answered.has_value());
  EXPECT_EQ(answered->status, 200);
  EXPECT_EQ(AgentLine(agent), std::nullopt);  // closed with the server
}

// The weight of a short poll of the agent: "ready up N%".
int AgentWeight(std::uint16_t port) {
  const auto line = AgentLine(port);
  if (!line || !line->starts_with("ready up ")) return -1;
  return std::stoi(line->substr(9));
}

TEST(ServerDrain, AgentWeightFallsWithTheQueueAndRecovers) {
  ServerOptions options;
  options.lb_agent_port = 0;
  ServiceOptions service;
  service.batcher.scheduler.max_batch_size = 1;  // one input per batch: the rest queue
  auto s = testing::StartTestServer(options, service, {.hidden_size = 16, .delay = std::chrono::milliseconds(800)});
  ASSERT_NE(s.port, 0);
  const std::uint16_t agent = s.http->lb_agent_port();
  EXPECT_EQ(AgentWeight(agent), 100);
  std::vector<std::future<std::optional<testing::Response>>> requests;
  for (int i = 0; i < 4; ++i) {
    requests.push_back(std::async(std::launch::async, [&, i] {
      return Call(s.port, "POST", "/embed", json{{"inputs", "queued input " + std::to_string(i)}}.dump());
    }));
  }
  // Three inputs wait behind the running one: three batches of one, and no
  // latency learned yet, so the weight tends to 100 / (1 + 3) as the queue's
  // time average catches up with it (time constant 500 ms). Bounded polls.
  int lowest = 100;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (lowest > 40 && std::chrono::steady_clock::now() < give_up) {
    const int w = AgentWeight(agent);
    if (w > 0) lowest = std::min(lowest, w);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(lowest, 40);
  EXPECT_GE(lowest, 25);  // never below what the whole queue asks for
  const auto metrics = Call(s.port, "GET", "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(metrics->body.find("\ntokenbatch_lb_weight_percent 100\n"), std::string::npos) << metrics->body;
  for (auto& r : requests) {
    const auto reply = r.get();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, 200);
  }
  // The queue is empty again; the average forgets it within a few time constants.
  int weight = 0;
  give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (weight < 100 && std::chrono::steady_clock::now() < give_up) {
    weight = AgentWeight(agent);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(weight, 100);
  s.Stop();
}

}  // namespace
}  // namespace tokenbatch::server
