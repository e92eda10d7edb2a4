// Raw-socket HTTP client and the test server fixture (see test_client.h).
#include "http/test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "testing/tokenizer_data.h"

namespace tokenbatch::server::testing {

std::string BuildRequest(std::string_view method, std::string_view path, std::string_view body,
                         const std::vector<std::string>& extra_headers) {
  std::string out = absl::StrCat(std::string(method), " ", std::string(path), " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  if (!body.empty() || method == "POST") {
    absl::StrAppend(&out, "Content-Type: application/json\r\nContent-Length: ", body.size(), "\r\n");
  }
  for (const std::string& h : extra_headers) absl::StrAppend(&out, h, "\r\n");
  absl::StrAppend(&out, "\r\n", std::string(body));
  return out;
}

Connection::Connection(std::uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Connection::~Connection() { Close(); }

void Connection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Connection::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

namespace {
// Waits until fd is readable; false on timeout.
bool WaitReadable(int fd, std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
}
}  // namespace

std::optional<Response> Connection::Read(std::chrono::milliseconds timeout, bool has_body) {
  if (fd_ < 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto fill = [&]() -> bool {
    if (!WaitReadable(fd_, deadline)) return false;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  };
  std::size_t header_end;
  while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return std::nullopt;
  }
  Response r;
  const std::string head = buffer_.substr(0, header_end);
  std::size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.size() < 12) return std::nullopt;
  r.status = std::atoi(status_line.c_str() + 9);
  std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    std::size_t end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    const std::string line = head.substr(pos, end - pos);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      r.headers[name] = line.substr(v);
    }
    pos = end + 2;
  }
  const std::size_t length =
      has_body ? static_cast<std::size_t>(std::atoll(r.header("content-length").c_str())) : 0;
  const std::size_t body_start = header_end + 4;
  while (buffer_.size() < body_start + length) {
    if (!fill()) return std::nullopt;
  }
  r.body = buffer_.substr(body_start, length);
  buffer_.erase(0, body_start + length);
  return r;
}

std::optional<Response> Connection::Call(std::string_view method, std::string_view path, std::string_view body,
                                         const std::vector<std::string>& extra_headers) {
  if (!Send(BuildRequest(method, path, body, extra_headers))) return std::nullopt;
  return Read(std::chrono::seconds(10), /*has_body=*/method != "HEAD");
}

bool Connection::WaitForClose(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (WaitReadable(fd_, deadline)) {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return true;
  }
  return false;
}

std::optional<Response> Call(std::uint16_t port, std::string_view method, std::string_view path,
                             std::string_view body, const std::vector<std::string>& extra_headers) {
  Connection c(port);
  if (c.fd() < 0) return std::nullopt;
  return c.Call(method, path, body, extra_headers);
}

TestServer StartTestServer(ServerOptions server, ServiceOptions service, backend::NoopEncoderOptions noop) {
  return StartTestServerWith(std::move(server), std::move(service), backend::MakeNoopEncoder(noop));
}

TestServer StartTestServerWith(ServerOptions server, ServiceOptions service, std::unique_ptr<backend::Encoder> backend,
                               std::string_view tokenizer) {
  TestServer out;
  const std::string path = tokenbatch::testing::TestTokenizerPath(tokenizer);
  auto tok = tokenizer::Tokenizer::FromFile(path);
  if (!tok.ok()) {
    ADD_FAILURE() << "cannot load " << path << ": " << tok.status();
    return out;
  }
  server.port = 0;
  auto svc = EmbeddingService::Create(service, *std::move(tok), std::move(backend));
  if (!svc.ok()) {
    ADD_FAILURE() << svc.status();
    return out;
  }
  out.service = *std::move(svc);
  out.router = std::make_unique<Router>(server, out.service.get());
  auto http = HttpServer::Start(out.router.get());
  if (!http.ok()) {
    ADD_FAILURE() << http.status();
    return out;
  }
  out.http = *std::move(http);
  out.port = out.http->port();
  return out;
}

}  // namespace tokenbatch::server::testing
