// HttpServer: the asynchronous HTTP/1.1 front of the embedding server.
//
// Boost.Beast on Asio: io_threads threads run every connection (no thread per
// connection); each connection is a chain of asynchronous reads and writes on its
// own strand, with keep-alive. A request is parsed with the payload and header
// limits (413 / 431 before the body is read), handed to the Router, and its reply
// comes back from whichever thread produced it (a tokenizer or Batcher worker)
// through one reply queue: the first reply of a burst posts a single drain
// handler to the I/O threads, which delivers every queued reply on its
// connection's strand (one post and at most one wake-up per burst, not per
// reply). Once a request has been pending for 5-10 ms the connection watches
// its socket: a client that disconnects has its queued inputs cancelled (a
// request answered sooner is never watched: the watch costs a syscall). A
// connection that does not deliver a whole request within read_timeout, or
// does not take its reply within it, is closed by a sweep that runs every
// read_timeout / 4 (10 ms to 1 s), so up to that much late.
//
// With ServerOptions::lb_agent_port, a second listener answers HAProxy's agent
// check: one line per connection (api/load_weight.h) with the weight this
// replica asks for, "drain" once BeginDrain was called, "down" once stopping.
//
// BeginDrain: /health answers 503 and every reply closes its connection, while
// work is still accepted and served: what a balancer needs to see before the
// listener closes (a Kubernetes preStop delay, an HAProxy agent's drain).
//
// Stop: stop accepting; new requests get 503 with Connection: close; the service
// drains or fails its queue (ServerOptions::drain); every pending request is
// answered; then connections are closed and the I/O threads joined.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace tokenbatch::server {

// src/api/router.h (internal to the program and its tests, as this library is):
// the routes, API shapes and the service behind them.
class Router;

class HttpServer {
 public:
  // Binds the router's options().host:port and starts serving on its
  // options().io_threads threads, with its socket limits. `router` (and the
  // service behind it) must outlive the server. Errors: InvalidArgument for a
  // null router, a bad address, io_threads < 1 or an invalid
  // cors_allow_origins entry; Unavailable when the port cannot be bound. One
  // server per Router: Stop shuts the Router and its service down for good.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(Router* router);
  // Stops (see Stop) if it was not stopped.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  [[nodiscard]] std::uint16_t port() const;

  // The agent-check port (the ephemeral one when options.lb_agent_port was 0);
  // 0 without an agent listener.
  [[nodiscard]] std::uint16_t lb_agent_port() const;

  // Starts draining, as described above; Stop still has to be called. Does not
  // block; idempotent, and ignored once stopping. Any thread.
  void BeginDrain();

  // Graceful stop, as described above. Blocks until done (at most the drain time
  // plus options.shutdown_grace). Idempotent; call from any thread but an I/O one.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenbatch::server
