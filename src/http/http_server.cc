// HttpServer: accepting connections and stopping (see http_server.h); the
// connections themselves are http_connection.h.
#include "tokenbatch/http/http_server.h"

#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's asio needs it with g++ 12
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "api/cors.h"
#include "http/http_connection.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {

using http_internal::Session;
using http_internal::Shared;
namespace beast = http_internal::beast;
namespace net = http_internal::net;
using tcp = http_internal::tcp;

struct HttpServer::Impl {
  explicit Impl(Router* router)
      : shared(router, &ioc),
        acceptor(net::make_strand(ioc)),
        accept_timer(acceptor.get_executor()),
        agent_acceptor(acceptor.get_executor()),
        agent_timer(acceptor.get_executor()),
        load_timer(ioc),
        watch_timer(ioc),
        deadline_timer(ioc) {
    shared.watch_timer = &watch_timer;
    shared.deadline_timer = &deadline_timer;
  }

  // A connection's handlers must not run concurrently. With several I/O threads
  // that takes a strand per connection; with one, the io_context alone
  // serialises them, and a strand would only add a lock and a queue hop to every
  // completion (docs/benchmarks.md).
  net::any_io_executor ConnectionExecutor() {
    if (shared.options.io_threads > 1) return net::make_strand(ioc);
    return ioc.get_executor();
  }

  void DoAccept() {
    acceptor.async_accept(ConnectionExecutor(), [this](beast::error_code ec, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (!ec) {
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<Session>(std::move(socket), &shared)->Run();
      } else if (ec == net::error::no_descriptors || ec == net::error::no_buffer_space || ec == net::error::no_memory ||
                 ec.value() == ENFILE) {
        // Out of file descriptors (thousands of idle or slow clients) or memory:
        // accepting again at once would fail again and spin a core. Pause; the
        // read timeout closes idle connections and frees descriptors meanwhile.
        const auto now = std::chrono::steady_clock::now();
        if (now - last_pause_warning >= kPauseWarningInterval) {
          last_pause_warning = now;
          spdlog::warn(
              "accept failed: {}; pausing accepts {} ms at a time until it succeeds (raise the open-files "
              "limit, ulimit -n, or lower --read-timeout-ms to drop idle connections sooner)",
              ec.message(), kAcceptPause.count());
        }
        accept_timer.expires_after(kAcceptPause);
        accept_timer.async_wait([this](beast::error_code) {
          if (acceptor.is_open()) DoAccept();
        });
        return;
      } else {
        spdlog::warn("accept failed: {}", ec.message());
      }
      DoAccept();
    });
  }

  // The HAProxy agent check (load_weight.h): one line per connection, then
  // close. Runs until the I/O threads stop, so that it says "down" while the
  // queue drains.
  void DoAgentAccept() {
    agent_acceptor.async_accept(ioc, [this](beast::error_code ec, tcp::socket socket) {
      if (!agent_acceptor.is_open()) return;
      if (ec) {
        // Out of descriptors: the HTTP acceptor's pause covers it; the agent
        // retries at HAProxy's next check.
        agent_timer.expires_after(kAcceptPause);
        agent_timer.async_wait([this](beast::error_code) {
          if (agent_acceptor.is_open()) DoAgentAccept();
        });
        return;
      }
      auto conn = std::make_shared<std::pair<tcp::socket, std::string>>(std::move(socket), shared.router.AgentCheck());
      net::async_write(conn->first, net::buffer(conn->second), [conn](beast::error_code, std::size_t) {
        beast::error_code ignored;
        conn->first.shutdown(tcp::socket::shutdown_both, ignored);
        conn->first.close(ignored);
      });
      DoAgentAccept();
    });
  }

  // Samples the queue into the weight's time average (Router::SampleLoad)
  // every kLoadSamplePeriod while the agent listens.
  void SampleLoad() {
    shared.router.SampleLoad(std::chrono::steady_clock::now());
    load_timer.expires_after(kLoadSamplePeriod);
    load_timer.async_wait([this](beast::error_code ec) {
      if (!ec) SampleLoad();
    });
  }

  // `shared` is destroyed after `ioc`: the sessions that the io_context's pending
  // handlers hold, destroyed with it, touch `shared`. Its reply queue only keeps
  // the io_context's address until then.
  Shared shared;
  net::io_context ioc;
  tcp::acceptor acceptor;
  // Delays the next accept after running out of descriptors (on the acceptor's strand).
  static constexpr std::chrono::milliseconds kAcceptPause{100};
  net::steady_timer accept_timer;
  // The agent-check listener (ServerOptions::lb_agent_port), on the acceptor's
  // strand too; closed only when the I/O threads stop.
  tcp::acceptor agent_acceptor;
  net::steady_timer agent_timer;
  // Short against a batch's cycle, so that the average sees the queue fill and
  // empty; each sample is one metrics snapshot.
  static constexpr std::chrono::milliseconds kLoadSamplePeriod{10};
  net::steady_timer load_timer;
  std::uint16_t agent_port = 0;
  // On the acceptor's strand: the pause is logged at most once per interval,
  // however often a freed descriptor lets one accept through.
  static constexpr std::chrono::seconds kPauseWarningInterval{10};
  std::chrono::steady_clock::time_point last_pause_warning{};
  net::steady_timer watch_timer;     // see Shared::ScheduleWatch
  net::steady_timer deadline_timer;  // see Shared::SweepDeadlines
  std::uint16_t port = 0;
  std::vector<std::thread> threads;
  std::once_flag stop_once;
};

namespace {

// Opens, binds and listens `acceptor` on `endpoint` (address reuse on, so that
// a restarted server binds at once); the first error, or none.
beast::error_code Listen(tcp::acceptor& acceptor, const tcp::endpoint& endpoint) {
  beast::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  return ec;
}

}  // namespace

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }
std::uint16_t HttpServer::port() const { return impl_->port; }
std::uint16_t HttpServer::lb_agent_port() const { return impl_->agent_port; }

void HttpServer::BeginDrain() {
  if (impl_->shared.router.state() != ServingState::kServing) return;
  impl_->shared.router.BeginDrain();
  spdlog::info("draining: /health answers 503 and balancers are asked to send no more; still serving");
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(Router* router) {
  if (router == nullptr) return InvalidArgumentError("HttpServer needs a router");
  const ServerOptions& options = router->options();
  if (options.io_threads < 1) {
    return InvalidArgumentError(absl::StrCat("io_threads must be >= 1, got ", options.io_threads));
  }
  if (absl::StatusOr<CorsPolicy> cors = CorsPolicy::Create(options.cors_allow_origins); !cors.ok()) {
    return cors.status();
  }
  beast::error_code ec;
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (ec) return InvalidArgumentError(absl::StrCat("--host ", host, " is not an IP address: ", ec.message()));
  auto impl = std::make_unique<Impl>(router);
  if (const beast::error_code e = Listen(impl->acceptor, tcp::endpoint(address, options.port))) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", options.port, ": ", e.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  if (options.lb_agent_port) {
    if (const beast::error_code e = Listen(impl->agent_acceptor, tcp::endpoint(address, *options.lb_agent_port))) {
      return absl::UnavailableError(absl::StrCat("cannot listen for the load-balancer agent on ", host, ":",
                                                 *options.lb_agent_port, ": ", e.message()));
    }
    impl->agent_port = impl->agent_acceptor.local_endpoint().port();
    impl->DoAgentAccept();
    impl->SampleLoad();  // before the I/O threads run: no handler touches the timer yet
  }
  impl->DoAccept();
  impl->shared.StartDeadlineSweep();  // before the I/O threads run: no handler touches the timer yet
  for (int i = 0; i < options.io_threads; ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  // The agent's line first: tests read the ports up to the "listening on" line.
  if (options.lb_agent_port) {
    spdlog::info("load-balancer agent check on {}:{} (weight halves at a backlog of {} ms)", host, impl->agent_port,
                 options.half_weight_backlog.count() / 1000.0);
  }
  spdlog::info("listening on http://{}:{} ({} I/O threads)", host, impl->port, options.io_threads);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Stop() {
  std::call_once(impl_->stop_once, [this] {
    Impl& s = *impl_;
    std::promise<void> closed;
    net::post(s.acceptor.get_executor(), [&] {
      beast::error_code ignored;
      s.acceptor.close(ignored);
      s.accept_timer.cancel();
      closed.set_value();
    });
    closed.get_future().wait();
    s.shared.router.BeginShutdown();
    spdlog::info("shutting down: {} queued inputs ({})", s.shared.router.queued_inputs(),
                 s.shared.options.drain == ShutdownMode::kDrain ? "draining" : "failing them");
    s.shared.router.StopService();  // every accepted input is resolved after this
    // Replies are posted to their connections by now or soon (a tokenizer thread
    // may still be finishing one); wait for them, then give connections the grace
    // period to finish writing and to send a last request (answered 503).
    // Shutdown-only polling at 1 ms: no condition variable is worth the coupling.
    while (s.shared.router.in_flight() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto grace_end = std::chrono::steady_clock::now() + s.shared.options.shutdown_grace;
    while (s.shared.sessions.load() > 0 && std::chrono::steady_clock::now() < grace_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    s.ioc.stop();
    for (std::thread& t : s.threads) t.join();
    beast::error_code ignored;
    s.agent_acceptor.close(ignored);  // balancers' checks are refused from now on
    s.shared.replies.Clear();
    spdlog::info("stopped");
  });
}

}  // namespace tokenbatch::server
