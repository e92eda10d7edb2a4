// ServeProcess: the real `tokenbatch serve` binary as a child process, for the
// tests that drive it as users do (signals, flags, environment). Test-only.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "testing/tokenizer_data.h"

extern char** environ;

namespace tokenbatch::server::testing {

// The absolute path of the `tokenbatch` program this test was built with
// (defined in a file CMake generates, serve_binary_path.cc).
std::string ServeBinaryPath();

// A `tokenbatch serve` child process on an ephemeral port (read from its
// "listening on" log line). Its stderr is drained by a thread until it exits.
class ServeProcess {
 public:
  ServeProcess(std::vector<std::string> flags, std::vector<std::string> env) {
    // --log-level info: the port is read from the "listening on" line.
    std::vector<std::string> argv = {ServeBinaryPath(), "serve", "--backend", "noop", "--port", "0",
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
    const std::regex agent("agent check on [0-9.]+:([0-9]+)");
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
    if (std::regex_search(log, m, agent)) agent_port_ = static_cast<std::uint16_t>(std::stoi(m[1].str()));
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
  // The --lb-agent-port it logged (0 without one).
  std::uint16_t agent_port() const { return agent_port_; }
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
  std::uint16_t agent_port_ = 0;
  std::thread drain_;
};

// What a `tokenbatch serve` run that is expected to stop by itself (a refused
// flag, a missing file) printed, and how it ended.
struct ServeExit {
  int status = -1;  // the exit code; -1 when it did not exit normally
  std::string log;  // stdout and stderr
};
// Runs `tokenbatch serve --backend noop` with the Qwen3 test tokenizer
// and `flags` (shell words) until it exits; killed after 20 s, so that a server
// that wrongly started cannot hold the test.
inline ServeExit RunServeToExit(const std::string& flags) {
  const std::string command = "timeout 20 " + ServeBinaryPath() +
                              " serve --backend noop --tokenizer " +
                              tokenbatch::testing::TestTokenizerPath("qwen3") + " " + flags + " 2>&1";
  ServeExit result;
  FILE* out = popen(command.c_str(), "r");
  if (out == nullptr) return result;
  char buf[512];
  while (std::fgets(buf, sizeof buf, out) != nullptr) result.log += buf;
  const int status = pclose(out);
  if (WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

}  // namespace tokenbatch::server::testing
