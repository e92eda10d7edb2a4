// Session, Shared and ReplyQueue (see http_connection.h).
#include "http/http_connection.h"

#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "api/response_head.h"

namespace tokenbatch::server::http_internal {
namespace {

// Every value of a header that may be repeated, joined as one comma-separated
// list (RFC 9110 section 5.3).
std::string JoinedField(const http::request<http::string_body>& req, http::field name) {
  std::string out;
  const auto [first, last] = req.equal_range(name);
  for (auto it = first; it != last; ++it) {
    if (!out.empty()) out += ", ";
    out.append(it->value().data(), it->value().size());
  }
  return out;
}

}  // namespace

void Session::DeliverReply(std::uint64_t gen, HttpReply reply) {
  net::dispatch(stream_.get_executor(), [self = shared_from_this(), gen, reply = std::move(reply)]() mutable {
    self->OnReply(gen, std::move(reply));
  });
}

void Session::StartWatch(std::uint64_t gen) {
  net::dispatch(stream_.get_executor(), [self = shared_from_this(), gen] {
    if (gen == self->generation_ && self->pending_ && self->cancel_ && !self->watching_) {
      self->WatchDisconnect(gen);
    }
  });
}

Session::Session(tcp::socket&& socket, Shared* shared) : stream_(std::move(socket)), shared_(shared) {
  shared_->sessions.fetch_add(1);
}

Session::~Session() {
  shared_->RemoveSession(this);  // first: until then the sweep may read deadline_
  shared_->sessions.fetch_sub(1);
}

void Session::CloseIfPastDeadline() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    if (std::chrono::steady_clock::now().time_since_epoch().count() < self->deadline()) return;
    spdlog::debug("closing a connection past its deadline (read_timeout {} ms)",
                  self->shared_->options.read_timeout.count());
    self->Close();
  });
}

void Session::Run() {
  // Registered here, not in the constructor: the sweep reads weak_from_this(),
  // which make_shared sets after the constructor returns.
  shared_->AddSession(this);
  net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::DoRead, shared_from_this()));
}

void Session::DoRead() {
  head_ = false;
  origin_.clear();
  parser_.emplace();
  parser_->body_limit(shared_->options.payload_limit);
  parser_->header_limit(shared_->options.header_limit);
  // One deadline for the whole request (headers and body), and for idle
  // keep-alive time: a client that trickles bytes cannot hold the connection.
  SetDeadline();
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
}

void Session::OnHeader(beast::error_code ec, std::size_t) {
  // Read before the error check: a Content-Length over the payload limit fails
  // here, once the fields are parsed, and its 413 needs the origin too.
  head_ = parser_->get().method() == http::verb::head;
  origin_ = std::string(parser_->get()[http::field::origin]);
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

void Session::ReadBody() {
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

void Session::OnReadError(beast::error_code ec) {
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

void Session::OnRead(beast::error_code ec, std::size_t) {
  if (ec) return OnReadError(ec);
  auto& req = parser_->get();
  keep_alive_ = req.keep_alive();
  HttpRequest request{.method = std::string(req.method_string()),
                      .target = std::string(req.target()),
                      .authorization = std::string(req[http::field::authorization]),
                      .origin = origin_,
                      .content_encoding = JoinedField(req, http::field::content_encoding),
                      .access_control_request_method = std::string(req[http::field::access_control_request_method]),
                      .access_control_request_headers =
                          std::string(req[http::field::access_control_request_headers]),
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
    Router::DeferWakeups defer;  // woken by ScheduleTokenizerWake below
    cancel_ = shared_->router.Handle(std::move(request), [self = shared_from_this(), gen](HttpReply reply) {
      // From any thread: queued, then delivered on this connection's strand.
      self->shared_->replies.Push({self, gen, std::move(reply)});
    });
  }
  shared_->ScheduleTokenizerWake();
  if (pending_ && cancel_) shared_->ScheduleWatch(weak_from_this(), gen);
}

void Session::WatchDisconnect(std::uint64_t gen) {
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

void Session::OnReply(std::uint64_t gen, HttpReply reply) {
  if (gen != generation_ || !pending_) return;
  pending_ = false;
  cancel_ = nullptr;
  if (watching_) {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
  }
  if (peer_closed_) return Close();
  // Draining or stopping: close the connection after this reply, so that the
  // client's next request opens one, which a balancer sends elsewhere.
  Write(std::move(reply), keep_alive_ && shared_->router.state() == ServingState::kServing);
}

void Session::SendParseError(int status, std::string message, ApiFlavor flavor) {
  shared_->router.CountReply("unparsed", status);
  linger_ = true;
  spdlog::debug("rejecting a request before routing: {} {}", status, message);
  HttpReply reply{.status = status, .body = ErrorBody(flavor, ApiError{status, std::move(message)})};
  shared_->router.cors().AppendReplyHeaders(origin_, reply.headers);  // so that a page can read why
  Write(std::move(reply), /*keep_alive=*/false);
}

void Session::Write(HttpReply reply, bool keep_alive) {
  reply_ = std::move(reply);
  const auto status = static_cast<http::status>(reply_.status);
  const auto reason = http::obsolete_reason(status);
  reply_head_ = SerializeResponseHead({.status = reply_.status,
                                       .reason = std::string_view(reason.data(), reason.size()),
                                       .content_type = reply_.content_type,
                                       .headers = &reply_.headers,
                                       .content_length = reply_.body.size(),
                                       .keep_alive = keep_alive});
  // A reply to HEAD has the GET reply's head (its Content-Length too) and no body.
  if (head_) reply_.body.clear();
  const std::array<net::const_buffer, 2> buffers{net::buffer(reply_head_), net::buffer(reply_.body)};
  SetDeadline();  // a client that never reads is dropped too
  net::async_write(stream_, buffers, [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
    self->reply_ = {};
    if (!ec && !keep_alive && self->linger_) return self->LingerClose();
    if (ec || !keep_alive) return self->Close();
    self->DoRead();
  });
}

void Session::LingerClose() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.expires_after(std::chrono::seconds(1));
  discard_.resize(16 * 1024);
  Discard();
}

void Session::Discard() {
  stream_.async_read_some(net::buffer(discard_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec) return self->Close();
    self->Discard();
  });
}

void Session::SetDeadline() {
  const auto at = std::chrono::steady_clock::now() + shared_->options.read_timeout;
  deadline_.store(at.time_since_epoch().count(), std::memory_order_relaxed);
}

void Session::Close() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.socket().close(ignored);
}

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

}  // namespace tokenbatch::server::http_internal
