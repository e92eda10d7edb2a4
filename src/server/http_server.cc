// HttpServer: Boost.Beast sessions around the Router (see http_server.h).
// The only translation unit of the library that includes Beast (it compiles
// slowly); everything about routes and JSON lives in router.cc and api.cc.
#include "tokenbatch/server/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's asio needs it with g++ 12
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/aged_entries.h"
#include "server/api.h"
#include "server/response_head.h"
#include "server/router.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class Session;

// Replies produced off the I/O threads (by tokenizer and Batcher workers), handed
// back in bulk: the first reply queued posts one drain handler to the io_context,
// later ones ride along until it runs. One post (and at most one wake-up of an
// I/O thread) per burst instead of one per reply; perf showed the per-reply
// posts and their wake-ups as the largest cost of the server under load.
class ReplyQueue {
 public:
  struct Entry {
    std::shared_ptr<Session> session;
    std::uint64_t generation;
    HttpReply reply;
  };
  explicit ReplyQueue(net::io_context* ioc) : ioc_(ioc) {}

  void Push(Entry entry);
  // Drops queued entries (after the I/O threads stopped: their sessions hold
  // sockets of the io_context, which must outlive them).
  void Clear() {
    std::vector<Entry> dropped;
    MutexLock lock(&mu_);
    closed_ = true;
    dropped.swap(entries_);
  }

 private:
  void Drain();

  net::io_context* const ioc_;
  Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  bool drain_posted_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // after Clear: Push drops its entry
};

// What every session shares; owned by HttpServer::Impl, outlives the sessions.
struct Shared {
  Shared(const ServerOptions& o, EmbeddingService* service, net::io_context* ioc)
      : ioc_(ioc), options(o), router(o, service), service(service), replies(ioc) {}
  // Requests routed by I/O handlers queue their tokenisation without a wake-up;
  // one handler queued behind the handlers ready now (the rest of this burst of
  // socket events) wakes the tokenizer threads once for all of them.
  void ScheduleTokenizerWake() {
    if (wake_posted.exchange(true)) return;  // the pending handler will see this request's work
    net::post(*ioc_, [this] {
      wake_posted.store(false);  // before waking: work queued after this store schedules a new wake
      service->WakeTokenizers();
    });
  }
  // A session whose request is in flight adds itself (see AgedEntries): its
  // disconnect watch starts when the request has been pending for a period.
  void ScheduleWatch(std::weak_ptr<Session> session, std::uint64_t gen);
  void SweepWatches();
  static constexpr std::chrono::milliseconds kWatchDelay{5};

  // Read and write deadlines (read_timeout): one sweep a period closes the
  // connections whose deadline has passed, instead of Beast's timer per socket
  // operation (arming and cancelling those cost about 1 µs a request, 4% of the
  // noop server's CPU, docs/benchmarks.md). A deadline is enforced up to a
  // period late.
  void AddSession(Session* session) {
    MutexLock lock(&live_mu);
    live.insert(session);
  }
  void RemoveSession(Session* session) {
    MutexLock lock(&live_mu);
    live.erase(session);
  }
  void StartDeadlineSweep();
  void SweepDeadlines();
  std::chrono::milliseconds DeadlineSweepPeriod() const {
    return std::clamp(options.read_timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  }

  net::io_context* const ioc_;
  const ServerOptions options;
  Router router;
  std::atomic<std::int64_t> sessions{0};
  std::atomic<std::uint64_t> next_request_id{1};
  EmbeddingService* service = nullptr;
  // A handler that wakes the tokenizer threads is queued on the io_context (see
  // Session::OnRead).
  std::atomic<bool> wake_posted{false};
  struct WatchEntry {
    std::weak_ptr<Session> session;
    std::uint64_t generation;
  };
  AgedEntries<WatchEntry> watches;
  // Set by HttpServer::Impl, which owns it: a timer must be destroyed before its
  // io_context, and Shared outlives the io_context.
  net::steady_timer* watch_timer = nullptr;
  net::steady_timer* deadline_timer = nullptr;  // the same, for SweepDeadlines
  Mutex live_mu;
  absl::flat_hash_set<Session*> live ABSL_GUARDED_BY(live_mu);  // every session, for SweepDeadlines
  ReplyQueue replies;  // declared last: destroyed first, while `sessions` lives
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // On this connection's executor (its strand, or the only I/O thread): writes
  // `reply` if it answers the pending request.
  void DeliverReply(std::uint64_t gen, HttpReply reply) {
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), gen, reply = std::move(reply)]() mutable {
      self->OnReply(gen, std::move(reply));
    });
  }

  // From the watch sweep (any I/O thread): starts the disconnect watch if
  // request `gen` is still pending.
  void StartWatch(std::uint64_t gen) {
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), gen] {
      if (gen == self->generation_ && self->pending_ && self->cancel_ && !self->watching_) {
        self->WatchDisconnect(gen);
      }
    });
  }

  Session(tcp::socket&& socket, Shared* shared) : stream_(std::move(socket)), shared_(shared) {
    shared_->sessions.fetch_add(1);
  }
  ~Session() {
    shared_->RemoveSession(this);  // first: until then the sweep may read deadline_
    shared_->sessions.fetch_sub(1);
  }

  // The steady_clock time (in its ticks) after which the sweep closes this
  // connection; kNoDeadline while a request is being computed.
  static constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();
  [[nodiscard]] std::int64_t deadline() const { return deadline_.load(std::memory_order_relaxed); }

  // From the deadline sweep (any I/O thread): closes the connection on its
  // executor if its deadline has passed by then.
  void CloseIfPastDeadline() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (std::chrono::steady_clock::now().time_since_epoch().count() < self->deadline()) return;
      spdlog::debug("closing a connection past its deadline (read_timeout {} ms)",
                    self->shared_->options.read_timeout.count());
      self->Close();
    });
  }

  void Run() {
    // Registered here, not in the constructor: the sweep reads weak_from_this(),
    // which make_shared sets after the constructor returns.
    shared_->AddSession(this);
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::DoRead, shared_from_this()));
  }

 private:
  void DoRead() {
    parser_.emplace();
    parser_->body_limit(shared_->options.payload_limit);
    parser_->header_limit(shared_->options.header_limit);
    // One deadline for the whole request (headers and body), and for idle
    // keep-alive time: a client that trickles bytes cannot hold the connection.
    SetDeadline();
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  void OnHeader(beast::error_code ec, std::size_t) {
    if (ec) return OnReadError(ec);
    const auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      continue_.emplace(http::status::continue_, 11);
      return http::async_write(stream_, *continue_, [self = shared_from_this()](beast::error_code wec, std::size_t) {
        if (wec) return self->Close();
        self->ReadBody();
      });
    }
    ReadBody();
  }

  void ReadBody() {
    // A request without a body (GET, Content-Length: 0) is done with its header;
    // put() must not be called on a finished parser (Beast asserts), even when
    // the next pipelined request is already in the buffer.
    if (parser_->is_done()) return OnRead({}, 0);
    // A small request's body usually arrived with its header: parse what is
    // buffered now, and only go back to the socket if more is needed (saves an
    // asynchronous operation, and its handler, per request).
    if (buffer_.size() > 0) {
      beast::error_code ec;
      parser_->eager(true);
      buffer_.consume(parser_->put(buffer_.data(), ec));
      if (ec && ec != http::error::need_more) return OnRead(ec, 0);
      if (parser_->is_done()) return OnRead({}, 0);
    }
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnReadError(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      // The header is parsed by now: answer in the route's flavour.
      const auto target = parser_->get().target();
      const bool openai = std::string_view(target.data(), target.size()).starts_with("/v1/");
      return SendParseError(413,
                            absl::StrCat("request body larger than the payload limit of ",
                                         shared_->options.payload_limit, " bytes"),
                            openai ? ApiFlavor::kOpenAi : ApiFlavor::kTei);
    }
    if (ec == http::error::header_limit) {
      return SendParseError(431, absl::StrCat("request headers larger than ", shared_->options.header_limit,
                                              " bytes"));
    }
    // A broken request line or header gets 400; a connection that closed or
    // timed out (idle, or a slow client) is just closed.
    if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return SendParseError(400, absl::StrCat("malformed HTTP request: ", ec.message()));
    }
    if (ec == beast::error::timeout) spdlog::debug("closing a connection that timed out reading a request");
    Close();
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec) return OnReadError(ec);
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    HttpRequest request{.method = std::string(req.method_string()),
                        .target = std::string(req.target()),
                        .authorization = std::string(req[http::field::authorization]),
                        .body = std::move(req.body()),
                        .request_id = {},
                        .timeout_ms = std::string(req["x-request-timeout-ms"])};
    const auto client_id = req["x-request-id"];
    request.request_id = !client_id.empty() && client_id.size() <= 64
                             ? std::string(client_id)
                             : absl::StrCat("r", shared_->next_request_id.fetch_add(1));
    parser_.reset();
    // Inference may take long: no deadline; the disconnect watch covers clients.
    deadline_.store(kNoDeadline, std::memory_order_relaxed);
    pending_ = true;
    const std::uint64_t gen = ++generation_;
    {
      EmbeddingService::DeferWakeups defer;  // woken by ScheduleTokenizerWake below
      cancel_ = shared_->router.Handle(std::move(request), [self = shared_from_this(), gen](HttpReply reply) {
        // From any thread: queued, then delivered on this connection's strand.
        self->shared_->replies.Push({self, gen, std::move(reply)});
      });
    }
    shared_->ScheduleTokenizerWake();
    if (pending_ && cancel_) shared_->ScheduleWatch(weak_from_this(), gen);
  }

  // While a reply is pending, waits for the socket to become readable: EOF or an
  // error means the client left, so its queued inputs are cancelled. Bytes of a
  // pipelined next request end the watch (they are read after the reply).
  void WatchDisconnect(std::uint64_t gen) {
    watching_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), gen](beast::error_code ec) {
      self->watching_ = false;
      if (ec || gen != self->generation_ || !self->pending_) return;
      char byte;
      const ssize_t n = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        self->peer_closed_ = true;
        if (auto cancel = std::move(self->cancel_)) cancel();
      } else if (n < 0) {
        self->WatchDisconnect(gen);  // spurious wake-up
      }
    });
  }

  void OnReply(std::uint64_t gen, HttpReply reply) {
    if (gen != generation_ || !pending_) return;
    pending_ = false;
    cancel_ = nullptr;
    if (watching_) {
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
    }
    if (peer_closed_) return Close();
    Write(std::move(reply), keep_alive_ && !shared_->router.shutting_down());
  }

  void SendParseError(int status, std::string message, ApiFlavor flavor = ApiFlavor::kTei) {
    shared_->router.CountReply("unparsed", status);
    linger_ = true;
    spdlog::debug("rejecting a request before routing: {} {}", status, message);
    Write(HttpReply{.status = status, .body = ErrorBody(flavor, ApiError{status, std::move(message)})},
          /*keep_alive=*/false);
  }

  void Write(HttpReply reply, bool keep_alive) {
    reply_ = std::move(reply);
    const auto status = static_cast<http::status>(reply_.status);
    const auto reason = http::obsolete_reason(status);
    reply_head_ = SerializeResponseHead({.status = reply_.status,
                                         .reason = std::string_view(reason.data(), reason.size()),
                                         .content_type = reply_.content_type,
                                         .headers = &reply_.headers,
                                         .content_length = reply_.body.size(),
                                         .keep_alive = keep_alive});
    const std::array<net::const_buffer, 2> buffers{net::buffer(reply_head_), net::buffer(reply_.body)};
    SetDeadline();  // a client that never reads is dropped too
    net::async_write(stream_, buffers, [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
      self->reply_ = {};
      if (!ec && !keep_alive && self->linger_) return self->LingerClose();
      if (ec || !keep_alive) return self->Close();
      self->DoRead();
    });
  }

  // After an error reply to a request whose body was not read: stop sending, then
  // read and drop what the client still sends (for at most a second) before
  // closing, so that closing with unread data does not reset the connection
  // before the client has read the reply.
  void LingerClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(1));
    discard_.resize(16 * 1024);
    Discard();
  }
  void Discard() {
    stream_.async_read_some(net::buffer(discard_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->Close();
      self->Discard();
    });
  }

  void SetDeadline() {
    const auto at = std::chrono::steady_clock::now() + shared_->options.read_timeout;
    deadline_.store(at.time_since_epoch().count(), std::memory_order_relaxed);
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  Shared* const shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::empty_body>> continue_;
  HttpReply reply_;        // being written (its body); see Write
  std::string reply_head_;  // its status line and headers
  std::function<void()> cancel_;
  std::atomic<std::int64_t> deadline_{kNoDeadline};  // see deadline(); written here, read by the sweep
  std::uint64_t generation_ = 0;
  bool keep_alive_ = true;
  bool pending_ = false;
  bool watching_ = false;
  bool peer_closed_ = false;
  bool linger_ = false;
  std::vector<char> discard_;
};

void Shared::ScheduleWatch(std::weak_ptr<Session> session, std::uint64_t gen) {
  if (!watches.Add({std::move(session), gen})) return;  // the sweep timer is running
  // Idle until now: start the timer. Only the Add that ended idleness gets here,
  // and the sweep that made the list idle no longer touches the timer.
  watch_timer->expires_after(kWatchDelay);
  watch_timer->async_wait([this](beast::error_code ec) {
    if (!ec) SweepWatches();
  });
}

void Shared::SweepWatches() {
  std::vector<WatchEntry> due;
  const bool waiting = watches.Rotate(due);
  if (waiting) {  // re-arm before the entries: after Rotate(false) an Add may arm it
    watch_timer->expires_after(kWatchDelay);
    watch_timer->async_wait([this](beast::error_code ec) {
      if (!ec) SweepWatches();
    });
  }
  for (WatchEntry& e : due) {
    if (std::shared_ptr<Session> session = e.session.lock()) session->StartWatch(e.generation);
  }
}

void Shared::StartDeadlineSweep() {
  deadline_timer->expires_after(DeadlineSweepPeriod());
  deadline_timer->async_wait([this](beast::error_code ec) {
    if (!ec) SweepDeadlines();
  });
}

void Shared::SweepDeadlines() {
  const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::vector<std::shared_ptr<Session>> expired;
  {
    MutexLock lock(&live_mu);
    for (Session* session : live) {
      if (session->deadline() > now) continue;
      // Empty when the session is being destroyed (it waits on live_mu to leave).
      if (std::shared_ptr<Session> alive = session->weak_from_this().lock()) expired.push_back(std::move(alive));
    }
  }
  for (const std::shared_ptr<Session>& session : expired) session->CloseIfPastDeadline();
  StartDeadlineSweep();
}

void ReplyQueue::Push(Entry entry) {
  bool post = false;
  {
    MutexLock lock(&mu_);
    if (closed_) return;  // `entry` is dropped after the lock is released
    entries_.push_back(std::move(entry));
    post = !drain_posted_;
    drain_posted_ = true;
  }
  if (post) net::post(*ioc_, [this] { Drain(); });
}

void ReplyQueue::Drain() {
  std::vector<Entry> batch;
  {
    MutexLock lock(&mu_);
    batch.swap(entries_);
    drain_posted_ = false;
  }
  for (Entry& e : batch) e.session->DeliverReply(e.generation, std::move(e.reply));
}

}  // namespace

struct HttpServer::Impl {
  Impl(const ServerOptions& options, EmbeddingService* service)
      : shared(options, service, &ioc),
        service(service),
        acceptor(net::make_strand(ioc)),
        watch_timer(ioc),
        deadline_timer(ioc) {
    shared.watch_timer = &watch_timer;
    shared.deadline_timer = &deadline_timer;
  }

  // A connection's handlers must not run concurrently. With several I/O threads
  // that takes a strand per connection; with one, the io_context alone
  // serialises them, and a strand would only add a lock and a queue hop to every
  // completion (about 8% of the noop server's CPU, docs/benchmarks.md).
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
      } else {
        spdlog::warn("accept failed: {}", ec.message());
      }
      DoAccept();
    });
  }

  // `shared` is destroyed after `ioc`: the sessions that the io_context's pending
  // handlers hold, destroyed with it, touch `shared`. Its reply queue only keeps
  // the io_context's address until then.
  Shared shared;
  EmbeddingService* const service;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer watch_timer;     // see Shared::ScheduleWatch
  net::steady_timer deadline_timer;  // see Shared::SweepDeadlines
  std::uint16_t port = 0;
  std::vector<std::thread> threads;
  std::once_flag stop_once;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Stop(); }
std::uint16_t HttpServer::port() const { return impl_->port; }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const ServerOptions& options,
                                                               EmbeddingService* service) {
  if (service == nullptr) return InvalidArgumentError("HttpServer needs a service");
  if (options.io_threads < 1) {
    return InvalidArgumentError(absl::StrCat("io_threads must be >= 1, got ", options.io_threads));
  }
  beast::error_code ec;
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (ec) return InvalidArgumentError(absl::StrCat("--host ", host, " is not an IP address: ", ec.message()));
  auto impl = std::make_unique<Impl>(options, service);
  const tcp::endpoint endpoint(address, options.port);
  tcp::acceptor& acc = impl->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", options.port, ": ", ec.message()));
  }
  impl->port = acc.local_endpoint().port();
  impl->DoAccept();
  impl->shared.StartDeadlineSweep();  // before the I/O threads run: no handler touches the timer yet
  for (int i = 0; i < options.io_threads; ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
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
      closed.set_value();
    });
    closed.get_future().wait();
    s.shared.router.BeginShutdown();
    spdlog::info("shutting down: {} queued inputs ({})", s.service->metrics().queue_requests,
                 s.shared.options.drain == ShutdownMode::kDrain ? "draining" : "failing them");
    s.service->Shutdown(s.shared.options.drain);  // every accepted input is resolved after this
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
    s.shared.replies.Clear();
    spdlog::info("stopped");
  });
}

}  // namespace tokenbatch::server
