// The connection layer of HttpServer (internal to the server):
//   - Session: one keep-alive HTTP/1.1 connection (read a request, route it,
//     write its reply when it comes back, watch for the client leaving);
//   - Shared: what every session shares (the Router, the reply queue, the
//     disconnect-watch and deadline sweeps);
//   - ReplyQueue: replies handed back from worker threads in bulk.
// Beast is confined to this layer and http_server.cc (it compiles slowly);
// routes and JSON live in router.cc, api.cc and api_parse.cc.
//
// Thread-safety: a session's handlers run on its executor (its strand with
// several I/O threads, the io_context with one). Shared's members say which
// thread may touch them.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>  // before Asio: Boost 1.74's asio needs it with g++ 12
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/container/flat_hash_set.h"
#include "http/aged_entries.h"
#include "api/api.h"
#include "api/router.h"
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/api/server_options.h"

namespace tokenbatch::server::http_internal {

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
  Shared(Router* router, net::io_context* ioc) : ioc_(ioc), options(router->options()), router(*router), replies(ioc) {}
  // Requests routed by I/O handlers queue their tokenisation without a wake-up;
  // one handler queued behind the handlers ready now (the rest of this burst of
  // socket events) wakes the tokenizer threads once for all of them.
  void ScheduleTokenizerWake() {
    if (wake_posted.exchange(true)) return;  // the pending handler will see this request's work
    net::post(*ioc_, [this] {
      wake_posted.store(false);  // before waking: work queued after this store schedules a new wake
      router.WakeTokenizers();
    });
  }
  // A session whose request is in flight adds itself (see AgedEntries): its
  // disconnect watch starts when the request has been pending for a period.
  void ScheduleWatch(std::weak_ptr<Session> session, std::uint64_t gen);
  void SweepWatches();
  static constexpr std::chrono::milliseconds kWatchDelay{5};

  // Read and write deadlines (read_timeout): one sweep a period closes the
  // connections whose deadline has passed, instead of Beast's timer per socket
  // operation, whose arming and cancelling showed in the noop server's profile
  // (docs/benchmarks.md). A deadline is enforced up to a period late.
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
  const ServerOptions& options;  // the Router's (it outlives the server)
  Router& router;
  std::atomic<std::int64_t> sessions{0};
  std::atomic<std::uint64_t> next_request_id{1};
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
  void DeliverReply(std::uint64_t gen, HttpReply reply);

  // From the watch sweep (any I/O thread): starts the disconnect watch if
  // request `gen` is still pending.
  void StartWatch(std::uint64_t gen);

  // A connection on `socket`; `shared` outlives it. Counted in
  // Shared::sessions; Run starts it.
  Session(tcp::socket&& socket, Shared* shared);
  ~Session();

  // The steady_clock time (in its ticks) after which the sweep closes this
  // connection; kNoDeadline while a request is being computed.
  static constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();
  [[nodiscard]] std::int64_t deadline() const { return deadline_.load(std::memory_order_relaxed); }

  // From the deadline sweep (any I/O thread): closes the connection on its
  // executor if its deadline has passed by then.
  void CloseIfPastDeadline();

  // Registers for the deadline sweep and starts reading the first request.
  // Call once, on a session owned by a shared_ptr.
  void Run();

 private:
  // Reading a request: header, then body (parsed from the buffer when it came
  // with the header), then routing. Errors close the connection or answer
  // 400/413/431 (OnReadError).
  void DoRead();
  void OnHeader(beast::error_code ec, std::size_t);
  void ReadBody();
  void OnReadError(beast::error_code ec);
  void OnRead(beast::error_code ec, std::size_t);

  // While a reply is pending, waits for the socket to become readable: EOF or an
  // error means the client left, so its queued inputs are cancelled. Bytes of a
  // pipelined next request end the watch (they are read after the reply).
  void WatchDisconnect(std::uint64_t gen);

  // Writing: the reply to request `gen` (dropped if the client left, or if it
  // answers an earlier request), an error before routing, one gather write.
  void OnReply(std::uint64_t gen, HttpReply reply);
  void SendParseError(int status, std::string message, ApiFlavor flavor = ApiFlavor::kTei);
  void Write(HttpReply reply, bool keep_alive);

  // After an error reply to a request whose body was not read: stop sending, then
  // read and drop what the client still sends (for at most a second) before
  // closing, so that closing with unread data does not reset the connection
  // before the client has read the reply.
  void LingerClose();
  void Discard();

  // deadline_ = now + read_timeout (see Shared::SweepDeadlines).
  void SetDeadline();
  void Close();

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
  bool head_ = false;    // the request being answered is a HEAD: its reply is sent without the body
  std::string origin_;   // its Origin header (CORS), kept for the replies made before routing
  bool pending_ = false;
  bool watching_ = false;
  bool peer_closed_ = false;
  bool linger_ = false;
  std::vector<char> discard_;
};

}  // namespace tokenbatch::server::http_internal
