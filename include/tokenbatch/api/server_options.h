// ServerOptions: the HTTP embedding server's transport and API limits.
//
// The scheduler's own limits (max_batch_tokens, max_wait, oversize, ...) live in
// BatcherOptions; these are the server's: where it listens, what it admits per
// HTTP request, and how it times out and shuts down. Flag names follow TEI
// (text-embeddings-inference) so that switching is a one-line change. Plain value
// type; every field has its unit and default.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenbatch/runtime/batcher_options.h"

namespace tokenbatch::server {

// Default of ServerOptions::max_client_batch_size: OpenAI's own limit on inputs
// per embeddings request, so that clients written for it (LangChain's
// OpenAIEmbeddings sends 1,000 at a time) work unchanged. TEI's default is 32;
// everything a TEI server accepts is accepted here too.
inline constexpr std::size_t kDefaultMaxClientBatchSize = 2048;

struct ServerOptions {
  // Address to bind. Loopback by default: exposing the server is a choice.
  std::string host = "127.0.0.1";
  // TCP port; 0 picks an ephemeral port (tests), see HttpServer::port().
  std::uint16_t port = 8080;
  // Threads running the socket I/O (parsing, writing). Connections are
  // multiplexed on them; no thread per connection.
  int io_threads = 2;
  // Unset (empty): no authentication. Set: every route but /health needs
  // "Authorization: Bearer <api_key>", else 401.
  std::string api_key;
  // Largest request body accepted, in bytes (TEI's --payload-limit, 2 MB); a
  // larger one gets 413 before it is read.
  std::size_t payload_limit = 2'000'000;
  // Largest request header block, in bytes; a larger one gets 431.
  std::uint32_t header_limit = 8 * 1024;
  // Most inputs in one client request (TEI's --max-client-batch-size); more -> 413.
  std::size_t max_client_batch_size = kDefaultMaxClientBatchSize;
  // Most HTTP requests being processed at once (TEI's --max-concurrent-requests);
  // one more gets 429. 0 = unlimited.
  std::size_t max_concurrent_requests = 512;
  // A connection that takes longer than this to send a whole request (headers and
  // body) is closed: protects against slow clients holding a connection. The same
  // deadline closes an idle keep-alive connection and one that does not read
  // its reply. Enforced by a sweep every read_timeout / 4 (10 ms to 1 s), so
  // up to that much late.
  std::chrono::milliseconds read_timeout{30'000};
  // On Stop: drain queued inputs (compute them) or fail them with 503.
  ShutdownMode drain = ShutdownMode::kDrain;
  // On Stop, after every pending request is answered: how long idle keep-alive
  // connections may still send a request (answered 503 + Connection: close).
  std::chrono::milliseconds shutdown_grace{200};
  // HAProxy agent-check port (load_weight.h: one line per connection with the
  // weight this replica asks for, or drain / down while shutting down), on
  // `host`. Unset: no agent listener; 0: an ephemeral port (tests), see
  // HttpServer::lb_agent_port().
  std::optional<std::uint16_t> lb_agent_port;
  // The estimated compute backlog (the queue in µs of the workers' learned batch
  // latency) at which the reported weight halves. > 0.
  std::chrono::microseconds half_weight_backlog{100'000};
  // Origins whose web pages may call the server from a browser (TEI's
  // --cors-allow-origin): "*" for any, or serialized origins such as
  // "https://app.example.com" (see CorsPolicy, api/cors.h). Empty: none,
  // unlike TEI, which allows any origin when the flag is unset: a server on a
  // workstation's loopback would then answer every web page its user opens.
  // Validated by HttpServer::Start (InvalidArgument).
  std::vector<std::string> cors_allow_origins;
  // Model name reported by /info and /v1/models and echoed in OpenAI responses.
  std::string model_name = "tokenbatch";
};

}  // namespace tokenbatch::server
