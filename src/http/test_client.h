// A tiny blocking HTTP/1.1 client over raw POSIX sockets, for the server tests.
// Raw sockets (not Beast) so the tests can also misbehave: send half a body,
// flood headers, disconnect mid-request. Test-only; not thread-safe per object.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/router.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "tokenbatch/http/http_server.h"
#include "tokenbatch/service/embedding_service.h"

namespace tokenbatch::server::testing {

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  [[nodiscard]] std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// The text of one request with Host, Content-Length and Content-Type set.
std::string BuildRequest(std::string_view method, std::string_view path, std::string_view body,
                         const std::vector<std::string>& extra_headers = {});

class Connection {
 public:
  // Connects to 127.0.0.1:port; fd() < 0 on failure.
  explicit Connection(std::uint16_t port);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  [[nodiscard]] int fd() const { return fd_; }
  // Sends all bytes; false on error.
  bool Send(std::string_view bytes);
  // Reads one response (Content-Length framed; `has_body` false for the reply to
  // a HEAD, whose Content-Length counts a body not sent). nullopt on EOF, error
  // or timeout.
  std::optional<Response> Read(std::chrono::milliseconds timeout = std::chrono::seconds(10), bool has_body = true);
  // Sends one request and reads its response.
  std::optional<Response> Call(std::string_view method, std::string_view path, std::string_view body = {},
                               const std::vector<std::string>& extra_headers = {});
  // True if the server closes the connection within `timeout` (reads and drops
  // anything it sends first).
  bool WaitForClose(std::chrono::milliseconds timeout);
  void Close();

 private:
  int fd_ = -1;
  std::string buffer_;
};

// One request on a fresh connection.
std::optional<Response> Call(std::uint16_t port, std::string_view method, std::string_view path,
                             std::string_view body = {}, const std::vector<std::string>& extra_headers = {});

// A running server with the noop backend and a real tokenizer (Qwen3's, from the
// test tokenizer data: testing/tokenizer_data.h) on an ephemeral loopback port.
struct TestServer {
  std::unique_ptr<EmbeddingService> service;
  std::unique_ptr<Router> router;
  std::unique_ptr<HttpServer> http;
  std::uint16_t port = 0;
  void Stop() {
    if (http) http->Stop();
  }
};
// Options as given, except port 0 and short timeouts unless set. Fails the
// calling test (ADD_FAILURE) and returns an empty server if anything is missing.
TestServer StartTestServer(ServerOptions server = {}, ServiceOptions service = {},
                           backend::NoopEncoderOptions noop = {.hidden_size = 16});
// The same with any backend (e.g. the libtorch one) and test tokenizer (a name
// for TestTokenizerPath: "qwen3", "bert", ...).
TestServer StartTestServerWith(ServerOptions server, ServiceOptions service, std::unique_ptr<backend::Encoder> backend,
                               std::string_view tokenizer = "qwen3");

}  // namespace tokenbatch::server::testing
