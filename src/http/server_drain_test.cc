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
#include "service/test_gated_encoder.h"
#include "testing/wait_until.h"

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
  // Batches wait at a gate: a request is still computing when Stop begins, and
  // until the agent has been seen saying "down".
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  auto s = testing::StartTestServerWith(
      options, {},
      std::make_unique<tokenbatch::testing::GatedEncoder>(backend::MakeNoopEncoder({.hidden_size = 16}), gate));
  ASSERT_NE(s.port, 0);
  const std::uint16_t agent = s.http->lb_agent_port();
  ASSERT_NE(agent, 0);
  ASSERT_NE(agent, s.port);
  EXPECT_EQ(AgentLine(agent), "ready up 100%\n");

  s.http->BeginDrain();
  EXPECT_EQ(AgentLine(agent), "drain\n");
  // Still served while draining, but the connection closes after the reply.
  gate->Let(1);
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
  ASSERT_TRUE(gate->WaitForArrivals(2));  // computing, held at the gate
  auto stopped = std::async(std::launch::async, [&] { s.Stop(); });
  std::optional<std::string> line;
  tokenbatch::testing::WaitUntil(
      [&] {
        line = AgentLine(agent);
        return line != "drain\n";
      },
      tokenbatch::testing::kWaitLimit, std::chrono::milliseconds(2));
  EXPECT_EQ(line, "down\n");
  gate->Open();
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
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  auto s = testing::StartTestServerWith(
      options, service,
      std::make_unique<tokenbatch::testing::GatedEncoder>(backend::MakeNoopEncoder({.hidden_size = 16}), gate));
  ASSERT_NE(s.port, 0);
  const std::uint16_t agent = s.http->lb_agent_port();
  EXPECT_EQ(AgentWeight(agent), 100);
  std::vector<std::future<std::optional<testing::Response>>> requests;
  const auto send = [&](int i) {
    requests.push_back(std::async(std::launch::async, [&, i] {
      Connection c(s.port);
      const std::string body = json{{"inputs", "queued input " + std::to_string(i)}}.dump();
      return c.Send(testing::BuildRequest("POST", "/embed", body)) ? c.Read(std::chrono::seconds(60))
                                                                    : std::nullopt;
    }));
  };
  // The first input holds the only worker at the gate before the others come,
  // so the queue is three inputs, never more.
  send(0);
  ASSERT_TRUE(gate->WaitForArrivals(1));
  for (int i = 1; i < 4; ++i) send(i);
  ASSERT_TRUE(tokenbatch::testing::WaitUntil([&] { return s.service->metrics().requests_submitted == 4; }));
  // Three inputs wait behind the held one: three batches of one, and no batch
  // has finished, so no latency is learned and the weight tends to
  // 100 / (1 + 3) as the queue's time average catches up with it.
  int lowest = 100;
  tokenbatch::testing::WaitUntil(
      [&] {
        const int w = AgentWeight(agent);
        if (w > 0) lowest = std::min(lowest, w);
        return lowest <= 40;
      },
      tokenbatch::testing::kWaitLimit, std::chrono::milliseconds(20));
  EXPECT_LE(lowest, 40);
  EXPECT_GE(lowest, 25);  // never below what the whole queue asks for
  const auto metrics = Call(s.port, "GET", "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(metrics->body.find("\ntokenbatch_lb_weight_percent 100\n"), std::string::npos) << metrics->body;
  gate->Open();
  for (auto& r : requests) {
    const auto reply = r.get();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, 200);
  }
  // The queue is empty again; the average forgets it within a few time constants.
  int weight = 0;
  tokenbatch::testing::WaitUntil(
      [&] {
        weight = AgentWeight(agent);
        return weight == 100;
      },
      tokenbatch::testing::kWaitLimit, std::chrono::milliseconds(50));
  EXPECT_EQ(weight, 100);
  s.Stop();
}

}  // namespace
}  // namespace tokenbatch::server
