// The real `tokenbatch serve` binary, as users run it: SIGTERM under load
// answers every request (200, or 503 once stopping) and exits 0; TEI's
// environment names configure it, after flags and TOKENBATCH_ variables, and
// HOSTNAME is ignored. Noop backend, the real Qwen3 tokenizer.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
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

#include "server/test_client.h"
#include "testing/tokenizer_data.h"

extern char** environ;

namespace tokenbatch::server {
namespace {

using nlohmann::json;
using testing::BuildRequest;
using testing::Call;
using testing::Connection;

// A `tokenbatch serve` child process on an ephemeral port (read from its
// "listening on" log line). Its stderr is drained by a thread until it exits.
class ServeProcess {
 public:
  ServeProcess(std::vector<std::string> flags, std::vector<std::string> env) {
    // --log-level info: the port is read from the "listening on" line.
    std::vector<std::string> argv = {TOKENBATCH_CLI_PATH, "serve", "--backend", "noop", "--port", "0",
                                     "--log-level", "info",
                                     "--tokenizer", tokenbatch::testing::TestTokenizerPath("qwen3")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (char** e = environ; *e != nullptr; ++e) {
      // Start from a clean slate: no serve setting inherited from the test's shell.
      if (std::strncmp(*e, "TOKENBATCH_", 11) != 0) env.emplace_back(*e);
    }
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      std::vector<char*> a, e;
      for (auto& s : argv) a.push_back(s.data());
      for (auto& s : env) e.push_back(s.data());
      a.push_back(nullptr);
      e.push_back(nullptr);
      execve(a[0], a.data(), e.data());
      _exit(127);
    }
    close(fds[1]);
    // Read the log until the port appears, then keep draining in a thread so the
    // child never blocks on a full pipe.
    std::string log;
    const std::regex listening("listening on http://[0-9.]+:([0-9]+)");
    char buf[4096];
    std::smatch m;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!std::regex_search(log, m, listening) && std::chrono::steady_clock::now() < give_up) {
      pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
      if (poll(&p, 1, 100) == 0) continue;  // bounded: a server that never logs fails the test
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      log.append(buf, static_cast<std::size_t>(n));
    }
    if (!m.empty()) port_ = static_cast<std::uint16_t>(std::stoi(m[1].str()));
    else ADD_FAILURE() << "tokenbatch serve did not start:\n" << log;
    drain_ = std::thread([fd = fds[0]] {
      char b[4096];
      while (read(fd, b, sizeof b) > 0) {
      }
      close(fd);
    });
  }
  ~ServeProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (drain_.joinable()) drain_.join();
  }
  std::uint16_t port() const { return port_; }
  void Signal(int sig) const { kill(pid_, sig); }
  // The exit status if the child exits within `timeout`, else -1 (then killed).
  int WaitExit(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::uint16_t port_ = 0;
  std::thread drain_;
};

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
    submitted = metrics && metrics->body.find("\ntokenbatch_inputs_submitted_total 1\n") != std::string::npos;
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
  // `timeout`: a server that wrongly started would otherwise hold the test.
  const std::string command = "timeout 20 " + std::string(TOKENBATCH_CLI_PATH) +
                              " serve --backend noop --port 0 --tokenizer " +
                              tokenbatch::testing::TestTokenizerPath("qwen3") + " --api-key-file " + path + " 2>&1";
  FILE* out = popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string log;
  char buf[512];
  while (std::fgets(buf, sizeof buf, out) != nullptr) log += buf;
  const int status = pclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << status;
  EXPECT_NE(log.find("--api-key-file"), std::string::npos) << log;
  EXPECT_NE(log.find(path), std::string::npos) << log;
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
