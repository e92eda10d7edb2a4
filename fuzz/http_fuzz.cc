// Fuzz target: the HTTP layer fed raw bytes. The real HttpServer (Beast's
// parser with the server's limits, the router, the service with a noop
// backend and the shipped BERT tokenizer) listens on a loopback port; each
// input is written to a new connection as is (request lines, headers, chunked
// or sized bodies, pipelined requests, garbage), the write side is closed,
// and the reply is read until the server closes. Checked: the server answers
// or closes within a bound (no hang), every reply is an HTTP/1.1 status line,
// and no input earns a 5xx but a 504 for a deadline the client set
// (X-Request-Timeout-Ms): the noop backend never fails and one connection
// cannot overload the server. Crashes and memory errors in any server thread
// are caught by the sanitizers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "testing/build_paths.h"
#include "api/router.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "tokenbatch/service/embedding_service.h"
#include "tokenbatch/http/http_server.h"

namespace {

namespace server = tokenbatch::server;

// Small limits, so that the 413 and 431 paths are reached by short inputs.
constexpr std::size_t kPayloadLimit = 4096;
constexpr std::uint32_t kHeaderLimit = 1024;
// The longest a reply may take: the server closes a connection that sends
// nothing for read_timeout, so a reply later than this is a hang.
constexpr auto kReadTimeout = std::chrono::milliseconds(1000);
constexpr int kHangMs = 10'000;

struct Server {
  std::unique_ptr<server::EmbeddingService> service;
  std::unique_ptr<server::Router> router;
  std::unique_ptr<server::HttpServer> http;
};

Server& TheServer() {
  static Server* s = [] {
    const std::string path = tokenbatch::testing::ShippedTokenizersDir() + "/bert-base-uncased/tokenizer.json";
    auto tok = tokenbatch::tokenizer::Tokenizer::FromFile(path);
    FUZZ_CHECK(tok.ok());
    // A small budget, so that long inputs meet the oversize paths.
    server::ServiceOptions service_options;
    service_options.batcher.scheduler.max_batch_tokens = 256;
    service_options.batcher.scheduler.max_input_tokens = 64;
    service_options.batcher.scheduler.max_wait = std::chrono::microseconds(100);
    auto service = server::EmbeddingService::Create(service_options, *std::move(tok),
                                                    tokenbatch::backend::MakeNoopEncoder({.hidden_size = 8}));
    FUZZ_CHECK(service.ok());
    auto* out = new Server{.service = *std::move(service)};
    out->router = std::make_unique<server::Router>(server::ServerOptions{.host = "127.0.0.1",
                                           .port = 0,
                                           .io_threads = 1,
                                           .payload_limit = kPayloadLimit,
                                           .header_limit = kHeaderLimit,
                                           .max_client_batch_size = 8,
                                           .read_timeout = kReadTimeout,
                                           .shutdown_grace = std::chrono::milliseconds(0)},
                                          out->service.get());
    auto http = server::HttpServer::Start(out->router.get());
    FUZZ_CHECK(http.ok());
    out->http = *std::move(http);
    return out;
  }();
  return *s;
}

constexpr std::string_view kStatusLine = "HTTP/1.1 ";

// The Content-Length of a reply head (its status line and fields), 0 if none.
std::size_t ContentLength(std::string_view head) {
  constexpr std::string_view kField = "\r\ncontent-length:";
  std::string lower(head);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t at = lower.find(kField);
  if (at == std::string::npos) return 0;
  return static_cast<std::size_t>(std::strtoull(lower.c_str() + at + kField.size(), nullptr, 10));
}

// Walks the replies by their framing (the server always sends Content-Length)
// and checks each status line: 1xx-4xx, or 504 (a deadline the request set
// passed). Only real status lines are read: the server echoes client text
// (X-Request-Id, parts of error messages), which may itself say "HTTP/1.1 500".
// A reply to HEAD has a Content-Length but no body: the next reply then starts
// right after the head. A truncated last reply (the server may close first)
// ends the walk.
void CheckReplies(std::string_view replies) {
  if (replies.empty()) return;  // closed without a reply (e.g. nothing was sent)
  FUZZ_CHECK(replies.starts_with(kStatusLine));
  std::size_t at = 0;
  while (at < replies.size()) {
    const std::size_t head_end = replies.find("\r\n\r\n", at);
    if (head_end == std::string_view::npos || head_end < at + kStatusLine.size() + 3) return;
    const std::string_view status = replies.substr(at + kStatusLine.size(), 3);
    if (status[0] == '5' && status != "504") {
      std::fprintf(stderr, "a 5xx reply:\n%.*s\n", static_cast<int>(replies.size() - at), replies.data() + at);
      std::abort();
    }
    const std::size_t body = head_end + 4;
    const std::size_t after_body = body + ContentLength(replies.substr(at, body - at));
    if (after_body == replies.size()) return;
    if (after_body < replies.size() && replies.substr(after_body).starts_with(kStatusLine)) {
      at = after_body;
    } else if (replies.substr(body).starts_with(kStatusLine)) {
      at = body;  // the reply to a HEAD request
    } else {
      return;  // truncated
    }
  }
}

}  // namespace

// Starts the server before the first input, so that its start (the tokenizer
// load, long under AddressSanitizer) does not count toward that input's -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)TheServer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Server& s = TheServer();
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(s.http->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // libFuzzer's timeout alarm interrupts system calls (EINTR): each is resumed.
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    int error = errno;
    if (error == EINTR) {  // the connection goes on: wait until it is made
      pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
      while (poll(&p, 1, kHangMs) < 0 && errno == EINTR) {
      }
      socklen_t size = sizeof error;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
    }
    if (error != 0) {
      std::fprintf(stderr, "cannot connect to the server: %s\n", std::strerror(error));
      std::abort();
    }
  }
  // The server may close after an early reply (413, 431, 400) before all was
  // written: a failed send is an answer, not an error.
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string replies;
  char buf[16384];
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHangMs);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    const int ready = left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      std::fprintf(stderr, "no reply and no close within %d ms (a hang); so far:\n%s\n", kHangMs, replies.c_str());
      std::abort();
    }
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed (or reset after a refused request)
    replies.append(buf, static_cast<std::size_t>(n));
  }
  // Reset rather than close: this side closed first, so a close would leave a
  // TIME_WAIT socket per input, and at fuzzing rates they use up the ephemeral
  // ports. The server has closed its side by now.
  const linger reset{.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(fd);
  CheckReplies(replies);
  return 0;
}
