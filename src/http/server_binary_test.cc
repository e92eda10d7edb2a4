// The real `tokenbatch serve` binary, as users run it: SIGTERM under load
// answers every request (200, or 503 once stopping) and exits 0; TEI's
// environment names configure it, after flags and TOKENBATCH_ variables, and
// HOSTNAME is ignored. Noop backend, the real Qwen3 tokenizer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/serve_process.h"
#include "http/test_client.h"
#include "testing/tokenizer_data.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;
using testing::BuildRequest;
using testing::Call;
using testing::Connection;
using testing::ServeProcess;

TEST(ServeBinary, SigtermUnderLoadAnswersEveryRequestAndExitsZero) {
  // 2 ms per batch keeps inputs queued when SIGTERM arrives (drained, per the default).
  ServeProcess serve({"--noop-delay-us", "2000"}, {});
  ASSERT_NE(serve.port(), 0);
  constexpr int kClients = 8;
  std::atomic<int> started{0}, ok{0}, unavailable{0}, unanswered{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Connection conn(serve.port());
      bool counted = false;
      for (int i = 0; i < 100000; ++i) {
        const std::string body = json{{"inputs", {"client " + std::to_string(c), "request " + std::to_string(i)}}}.dump();
        if (!conn.Send(BuildRequest("POST", "/embed", body))) {
          unanswered.fetch_add(1);
          return;
        }
        auto r = conn.Read();  // a complete response: status line, headers, Content-Length body
        if (!r) {
          unanswered.fetch_add(1);
          return;
        }
        if (!counted) started.fetch_add(1), counted = true;
        if (r->status == 200 && json::parse(r->body).size() == 2) ok.fetch_add(1);
        else if (r->status == 503) unavailable.fetch_add(1);
        else other.fetch_add(1);
        if (r->header("connection") == "close") return;
      }
    });
  }
  // Bounded: a client that fails before its first answer must not hang the test.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (started.load() < kClients && unanswered.load() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(started.load(), kClients);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  serve.Signal(SIGTERM);
  for (auto& t : clients) t.join();
  EXPECT_EQ(serve.WaitExit(std::chrono::seconds(10)), 0);
  EXPECT_EQ(unanswered.load(), 0);
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(ok.load(), kClients);
  EXPECT_FALSE(Call(serve.port(), "GET", "/health").has_value());  // no longer listening
}

TEST(ServeBinary, ASecondSignalWhileDrainingStopsAtOnce) {
  // 10 s per batch: a drain would take that long; the second SIGTERM must not wait.
  ServeProcess serve({"--noop-delay-us", "10000000"}, {});
  ASSERT_NE(serve.port(), 0);
  std::thread client([&] {
    Connection conn(serve.port());
    if (conn.Send(BuildRequest("POST", "/embed", json{{"inputs", "in flight"}}.dump()))) (void)conn.Read();
  });
  // Until its input is in the Batcher (a drain then takes its 10 s batch).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool submitted = false;
  while (!submitted && std::chrono::steady_clock::now() < give_up) {
    auto metrics = Call(serve.port(), "GET", "/metrics");
    submitted = metrics && metrics->body.find("\ntokenbatch_inputs_submitted_total{model=\"noop\"} 1\n") != std::string::npos;
    if (!submitted) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(submitted);
  serve.Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(serve.WaitExit(std::chrono::milliseconds(100)), -1);  // still draining...
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.WaitExit(std::chrono::seconds(5)), 128 + SIGTERM);  // ...until the second signal
  client.join();
}

TEST(ServeBinary, TeiEnvironmentNamesAfterFlagsAndOurOwn) {
  ServeProcess serve({},
                     {"MAX_CLIENT_BATCH_SIZE=3",                                        // TEI name, alone: used
                      "MAX_BATCH_TOKENS=1000", "TOKENBATCH_MAX_BATCH_TOKENS=2000",       // ours wins
                      "PORT=1",                                                          // the --port flag wins
                      "TOKENIZATION_WORKERS=1", "API_KEY=sekret",
                      "HOSTNAME=192.0.2.1"});  // never read: would fail to bind
  ASSERT_NE(serve.port(), 0);
  EXPECT_EQ(Call(serve.port(), "GET", "/info")->status, 401);  // API_KEY applied
  auto info = Call(serve.port(), "GET", "/info", {}, {"Authorization: Bearer sekret"});
  ASSERT_TRUE(info);
  ASSERT_EQ(info->status, 200) << info->body;
  const json i = json::parse(info->body);
  EXPECT_EQ(i["max_client_batch_size"], 3);
  EXPECT_EQ(i["max_batch_tokens"], 2000);
  EXPECT_EQ(i["tokenization_workers"], 1);
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.WaitExit(std::chrono::seconds(10)), 0);
}

// --api-key-file: the key comes from the file (its line end dropped), not the
// command line; a wrong key is refused; an unreadable file stops the server.
TEST(ServeBinary, ApiKeyFromAFile) {
  const std::string path = ::testing::TempDir() + "tokenbatch_serve_key_" + std::to_string(::getpid());
  std::ofstream(path) << "from-a-file\n";
  {
    ServeProcess serve({"--api-key-file", path}, {});
    ASSERT_NE(serve.port(), 0);
    for (const auto& [authorization, status] : std::vector<std::pair<std::string, int>>{
             {"Authorization: Bearer from-a-file", 200}, {"Authorization: Bearer from-a-fil", 401}}) {
      auto reply = Call(serve.port(), "GET", "/info", {}, {authorization});
      ASSERT_TRUE(reply);
      EXPECT_EQ(reply->status, status) << authorization;
    }
    auto health = Call(serve.port(), "GET", "/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    serve.Signal(SIGTERM);
    EXPECT_EQ(serve.WaitExit(std::chrono::seconds(10)), 0);
  }
  std::remove(path.c_str());
  const testing::ServeExit refused = testing::RunServeToExit("--port 0 --api-key-file " + path);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.log.find("--api-key-file"), std::string::npos) << refused.log;
  EXPECT_NE(refused.log.find(path), std::string::npos) << refused.log;
}

// A free loopback port: bound, read, and released (another process could take
// it meanwhile; nothing else on a test machine binds ephemeral ports by number).
std::uint16_t FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  std::uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// --shutdown-delay-ms: after SIGTERM the server keeps serving, says "draining"
// on /health and "drain" on the agent port, then stops as before and exits 0.
TEST(ServeBinary, SigtermWithAShutdownDelayDrainsBeforeClosing) {
  // The delay is long enough that the checks below fit inside it on a loaded
  // machine; the server must still close once it has passed.
  constexpr std::chrono::milliseconds kDelay(5000);
  const std::uint16_t agent_port = FreeLoopbackPort();
  ServeProcess serve({"--shutdown-delay-ms", std::to_string(kDelay.count()), "--lb-agent-port",
                      std::to_string(agent_port)},
                     {});
  ASSERT_NE(serve.port(), 0);
  ASSERT_EQ(serve.agent_port(), agent_port);
  auto health = Call(serve.port(), "GET", "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const auto signalled = std::chrono::steady_clock::now();
  serve.Signal(SIGTERM);
  const auto give_up = signalled + kDelay;
  while (health && health->status == 200 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    health = Call(serve.port(), "GET", "/health");
  }
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(json::parse(health->body), json({{"status", "draining"}}));
  // A request that a balancer sends before it notices is served.
  auto late = Call(serve.port(), "POST", "/embed", json{{"inputs", "sent while draining"}}.dump());
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 200);
  EXPECT_EQ(late->header("connection"), "close");
  EXPECT_EQ(serve.WaitExit(kDelay + std::chrono::seconds(30)), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - signalled, kDelay);
  EXPECT_FALSE(Call(serve.port(), "GET", "/health").has_value());
}

TEST(ServeBinary, LoadBalancerFlagsAreChecked) {
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--port 0 --shutdown-delay-ms -1", "--shutdown-delay-ms must be >= 0"},
           {"--port 0 --lb-agent-backlog-ms 0", "--lb-agent-backlog-ms must be a positive number"},
           {"--port 18099 --lb-agent-port 18099", "--lb-agent-port must differ from --port"}}) {
    const testing::ServeExit refused = testing::RunServeToExit(flags);
    EXPECT_NE(refused.status, 0) << flags;
    EXPECT_NE(refused.log.find(message), std::string::npos) << flags << ":\n" << refused.log;
  }
}

// TEI's defaults where a client could depend on them: long inputs are cut
// (--auto-truncate defaults to true) unless a request says otherwise or
// --oversize split wants them whole; up to 2,048 inputs per request.
TEST(ServeBinary, TeiDefaultsAutoTruncateAndClientBatchSize) {
  const std::string long_text = "one two three four five six seven eight nine ten eleven twelve";
  ServeProcess serve({"--max-input-tokens", "8"}, {"CORS_ALLOW_ORIGIN=http://a.example,http://b.example"});
  ASSERT_NE(serve.port(), 0);
  auto info_reply = Call(serve.port(), "GET", "/info");
  ASSERT_TRUE(info_reply);
  const json info = json::parse(info_reply->body);
  EXPECT_EQ(info["auto_truncate"], true);
  EXPECT_EQ(info["max_client_batch_size"], 2048);
  auto cut = Call(serve.port(), "POST", "/embed", json{{"inputs", long_text}}.dump());
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->status, 200) << cut->body;
  EXPECT_EQ(cut->header("x-compute-tokens"), "8");
  auto refused = Call(serve.port(), "POST", "/embed", json{{"inputs", long_text}, {"truncate", false}}.dump());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 413);  // as TEI answers it (its Validation errors are 413)
  // The TEI environment name, split at commas, reaches --cors-allow-origin.
  auto cors = Call(serve.port(), "GET", "/health", {}, {"Origin: http://b.example"});
  ASSERT_TRUE(cors);
  EXPECT_EQ(cors->header("access-control-allow-origin"), "http://b.example");
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.WaitExit(std::chrono::seconds(10)), 0);

  ServeProcess off({"--max-input-tokens", "8", "--auto-truncate=false"}, {});
  ASSERT_NE(off.port(), 0);
  auto off_reply = Call(off.port(), "POST", "/embed", json{{"inputs", long_text}}.dump());
  ASSERT_TRUE(off_reply);
  EXPECT_EQ(off_reply->status, 413);
  off.Signal(SIGTERM);
  EXPECT_EQ(off.WaitExit(std::chrono::seconds(10)), 0);

  ServeProcess split({"--max-input-tokens", "8", "--oversize", "split", "--split-overlap-tokens", "2"}, {});
  ASSERT_NE(split.port(), 0);
  auto split_info = Call(split.port(), "GET", "/info");
  ASSERT_TRUE(split_info);
  EXPECT_EQ(json::parse(split_info->body)["auto_truncate"], false);
  auto windows = Call(split.port(), "POST", "/embed", json{{"inputs", long_text}}.dump());
  ASSERT_TRUE(windows);
  EXPECT_EQ(windows->status, 200) << windows->body;
  EXPECT_GT(std::stoi(windows->header("x-compute-tokens")), 8);  // every window computed, none cut
  split.Signal(SIGTERM);
  EXPECT_EQ(split.WaitExit(std::chrono::seconds(10)), 0);
}

}  // namespace
}  // namespace tokenbatch::server
