// The reference for the server load benchmark: a bare Boost.Beast HTTP/1.1 server
// that answers every request with a fixed JSON body, keep-alive, on N I/O threads,
// with a strand per connection, async read and write (tokenbatch drops the
// strand when it runs one I/O thread). What tokenbatch serve --backend noop adds
// on top of it is the cost of routing, JSON parsing and formatting,
// tokenisation, and the Batcher round trip.
//
// Usage: bare_beast_server PORT [IO_THREADS] [BODY_BYTES]
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's asio needs it with g++ 12
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, const std::string* body) : stream_(std::move(socket)), body_(body) {}
  void Run() { net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); }); }

 private:
  void Read() {
    request_ = {};
    http::async_read(stream_, buffer_, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {
        self->stream_.socket().close(ec);
        return;
      }
      self->Write();
    });
  }
  void Write() {
    response_ = {};
    response_.version(11);
    response_.result(http::status::ok);
    response_.set(http::field::content_type, "application/json");
    response_.body() = *body_;
    response_.keep_alive(request_.keep_alive());
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || !self->response_.keep_alive()) {
        self->stream_.socket().close(ec);
        return;
      }
      self->Read();
    });
  }
  beast::tcp_stream stream_;
  const std::string* body_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

void Accept(tcp::acceptor& acceptor, net::io_context& ioc, const std::string* body) {
  acceptor.async_accept(net::make_strand(ioc), [&acceptor, &ioc, body](beast::error_code ec, tcp::socket s) {
    if (!ec) {
      s.set_option(tcp::no_delay(true));
      std::make_shared<Session>(std::move(s), body)->Run();
    }
    Accept(acceptor, ioc, body);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bare_beast_server PORT [IO_THREADS] [BODY_BYTES]\n";
    return 2;
  }
  const auto port = static_cast<unsigned short>(std::atoi(argv[1]));
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const std::size_t body_bytes = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 64;
  // A JSON string padded to body_bytes, so the reply is the size of ours.
  const std::string body = "{\"pad\":\"" + std::string(body_bytes > 12 ? body_bytes - 12 : 0, 'x') + "\"}";
  net::io_context ioc;
  tcp::acceptor acceptor(net::make_strand(ioc), tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  Accept(acceptor, ioc, &body);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
}
