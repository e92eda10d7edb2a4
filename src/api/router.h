// Router: one HTTP request in, one reply out, without sockets.
//
// The socket layer (http_connection.cc) parses the wire format and hands the Router a
// plain request; the Router checks the API key and the concurrency limit, parses
// the body (api.h), calls the EmbeddingService, and answers through `respond`,
// exactly once, possibly later and on another thread. Routes:
//   POST /v1/embeddings (OpenAI)   POST /embed (TEI)   POST /tokenize (TEI)
//   POST /decode (TEI)   POST /detokenize (vLLM; OpenAI-shaped errors)
//   POST /rerank (TEI's shape, or Cohere's / Jina's by its fields)
//   POST /v1/rerank, /v2/rerank (Cohere's / Jina's; OpenAI-shaped errors)
//   POST /predict (TEI)
//   POST /embed_sparse (TEI)
// The embedding routes need an embedding model, /embed_sparse a sparse (SPLADE)
// one, the rerank and predict routes a cross-encoder
// (backend::EncoderInfo::classifier; rerank one with a single label): another
// kind gets 400 naming the model and the routes it serves (score_api.h has the
// shapes).
//   GET /v1/models (OpenAI)   GET /health   GET /info   GET /metrics (Prometheus text)
// Several models: a request picks one by its body's `model` (OpenAI's,
// Cohere's and vLLM's field, accepted on TEI's routes too); without one it gets
// the first. With several models a name none has gets 404 listing the served
// names; with one model `model` is not checked (TEI ignores it, and OpenAI
// clients must send some name). /v1/models lists every model, /info describes
// the first at its top level (TEI's shape) and every one under "models", and
// the scheduler's series in /metrics carry a `model` label.
// Unknown paths get 404 (OpenAI-shaped under /v1/, TEI-shaped elsewhere), a
// known path with another method 405 with an Allow
// header; HEAD is answered on every GET route as GET is (the socket layer sends
// no body), OPTIONS on every route with 204 and Allow, plus the CORS preflight
// headers for an allowed origin (cors.h); every reply to an allowed origin
// carries Access-Control-Allow-Origin. A 401 carries WWW-Authenticate: Bearer
// (RFC 6750 section 3). A POST body sent with Content-Encoding gzip or deflate
// is decoded first (content_coding.h), within the payload limit. 429 answers
// carry Retry-After. The embedding, rerank and predict routes take vLLM's
// `priority` body field and an X-Request-Timeout-Ms header: inputs not computed
// by then get 504 (DeadlineExceeded), like a gateway whose upstream timed out.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/api.h"
#include "api/api_key.h"
#include "api/cors.h"
#include "api/load_weight.h"
#include <nlohmann/json_fwd.hpp>
#include "tokenbatch/runtime/shared_device_memory.h"
#include "tokenbatch/runtime/histogram.h"
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/service/embedding_service.h"
#include "tokenbatch/api/server_options.h"

namespace tokenbatch::server {

struct HttpRequest {
  std::string method;         // "GET", "POST", ...
  std::string target;         // path and query, e.g. "/v1/embeddings"
  std::string authorization;  // the Authorization header, or empty
  std::string origin;         // the Origin header (a browser's page), or empty
  std::string content_encoding;  // the Content-Encoding header, or empty
  // The Access-Control-Request-Method and -Headers headers: set only on a CORS
  // preflight.
  std::string access_control_request_method;
  std::string access_control_request_headers;
  std::string body;
  std::string request_id;     // for logs and the x-request-id header
  // The X-Request-Timeout-Ms header, or empty: the request's inputs must be
  // computed within this many milliseconds of arrival, else 504.
  std::string timeout_ms;
};

// One model the Router serves.
struct ServedModel {
  std::string name;                     // what a request's `model` names; /v1/models' id
  EmbeddingService* service = nullptr;  // must outlive the Router
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra headers. Names are string literals (static storage), so that a reply's
  // nine TEI headers cost no allocation for their names.
  std::vector<std::pair<std::string_view, std::string>> headers;
};

class Router {
 public:
  using Respond = std::function<void(HttpReply)>;

  // Serves `models` (>= 1, unique names; the first is the default). Their
  // services must outlive the Router; those that share a device memory
  // (BatcherOptions::device_memory) share one, which /metrics, /info and the
  // balancer weight report. Invalid options.cors_allow_origins allow no origin
  // here (HttpServer::Start refuses to serve with them).
  Router(const ServerOptions& options, std::vector<ServedModel> models);
  // One model, named options.model_name.
  Router(const ServerOptions& options, EmbeddingService* service)
      : Router(options, {ServedModel{options.model_name, service}}) {}

  // Handles `request`; `respond` is called exactly once. Returns a function that
  // cancels the request's queued work (call it when the client disconnects), or
  // an empty function when there is nothing to cancel.
  std::function<void()> Handle(HttpRequest request, Respond respond);

  // From now on /health answers 503 {"status":"draining"} (balancers and
  // readiness probes stop sending new work) while work is still served; each
  // reply closes its keep-alive connection. Ignored once shutting down.
  void BeginDrain() {
    ServingState serving = ServingState::kServing;
    state_.compare_exchange_strong(serving, ServingState::kDraining);
  }
  // From now on every embedding, rerank, predict, tokenize and decode request gets 503; /health
  // answers 503 too, and the other GET routes, HEAD and OPTIONS are still answered.
  void BeginShutdown() { state_.store(ServingState::kStopping); }
  [[nodiscard]] ServingState state() const { return state_.load(); }
  [[nodiscard]] bool shutting_down() const { return state() == ServingState::kStopping; }
  // Takes one sample of the queue into the time average the weight is computed
  // from (QueueAverage); the server calls it every few milliseconds while the
  // agent listens. Without samples the weight reads the queue at the moment.
  void SampleLoad(std::chrono::steady_clock::time_point now);
  // The weight this replica asks balancers for now (load_weight.h), 1..100.
  [[nodiscard]] int LoadWeight() const;
  // LoadWeight from the models' metrics snapshots already taken (by model).
  [[nodiscard]] int LoadWeight(const std::vector<MetricsSnapshot>& metrics) const;
  // The HAProxy agent-check line for the state and weight now (AgentCheckLine).
  [[nodiscard]] std::string AgentCheck() const;
  // HTTP requests accepted and not answered yet.
  [[nodiscard]] std::int64_t in_flight() const { return in_flight_.load(); }

  // Counts a reply made outside Handle (by the socket layer: 400, 413, 431).
  void CountReply(const std::string& route, int status);
  // Counts a reply of Handle and observes its time from arrival, in seconds.
  void CountReply(const std::string& route, int status, double seconds);

  // The CORS headers for a reply to a request from `origin` (see CorsPolicy).
  [[nodiscard]] const CorsPolicy& cors() const { return cors_; }

  // The /metrics body: each model's Batcher metrics (labelled by model), the
  // shared device memory's, and the HTTP counters.
  [[nodiscard]] std::string MetricsText() const;

  // The options the Router was made with (the socket layer's limits too).
  [[nodiscard]] const ServerOptions& options() const { return options_; }

  // Burst wake-ups for the socket layer (EmbeddingService::DeferWakeups): while
  // a DeferWakeups lives on an I/O thread, the work Handle queues there wakes
  // no tokenizer thread; WakeTokenizers, called once after a burst of
  // requests, wakes one if queued work needs it. Thread-safe, never blocks.
  using DeferWakeups = EmbeddingService::DeferWakeups;
  void WakeTokenizers() {
    for (const Model& m : models_) m.service->WakeTokenizers();
  }

  // Inputs queued in the schedulers now, all models (for the shutdown log).
  [[nodiscard]] std::int64_t queued_inputs() const;
  // Stops the services: drains or fails their queues (options().drain) and
  // waits for their threads; every accepted input is resolved when it returns.
  // Call after BeginShutdown. Blocks; idempotent.
  void StopService();

 private:
  struct Model;
  // A route's handler: answers through `respond` (exactly once) and returns the
  // cancel function of Handle (empty when there is nothing to cancel).
  using Handler = std::function<void()> (Router::*)(HttpRequest request, Respond respond);
  // One row of the route table (router.cc): what Handle checks before the handler.
  struct Route {
    const char* path;
    bool get;          // GET (and HEAD); else POST
    ApiFlavor flavor;  // the shape of its error bodies
    bool needs_key;    // false only for /health, which probes call without one
    // Tokenises or embeds: refused while shutting down, counted against
    // max_concurrent_requests, its body decoded (Content-Encoding) first.
    bool work;
    Handler handler;
  };
  // The route for `path`, or nullptr.
  static const Route* FindRoute(std::string_view path);
  // An error answer in `flavor`'s body shape. 429 (overloaded: a full queue or too
  // many concurrent requests) carries Retry-After (RFC 9110 section 10.2.3) in
  // seconds: queues here drain in milliseconds, so 1 s, the smallest value the
  // header holds.
  static HttpReply ErrorReply(ApiFlavor flavor, const ApiError& error);

  // The handlers: router.cc (embeddings), router_tokens.cc (tokenize, decode),
  // router_info.cc (health, info, models, metrics).
  std::function<void()> Health(HttpRequest request, Respond respond);
  std::function<void()> Info(HttpRequest request, Respond respond);
  std::function<void()> Models(HttpRequest request, Respond respond);
  std::function<void()> Metrics(HttpRequest request, Respond respond);
  std::function<void()> EmbedOpenAi(HttpRequest request, Respond respond);
  std::function<void()> EmbedTei(HttpRequest request, Respond respond);
  std::function<void()> Tokenize(HttpRequest request, Respond respond);
  std::function<void()> Decode(HttpRequest request, Respond respond);      // TEI's /decode
  std::function<void()> Detokenize(HttpRequest request, Respond respond);  // vLLM's /detokenize
  std::function<void()> Embed(HttpRequest request, Respond respond, bool openai);
  std::function<void()> EmbedSparse(HttpRequest request, Respond respond);  // TEI's /embed_sparse
  // router_score.cc: TEI's /rerank, the Cohere-shaped /v1 and /v2 rerank, /predict.
  std::function<void()> RerankTei(HttpRequest request, Respond respond);
  std::function<void()> RerankOpenAi(HttpRequest request, Respond respond);
  std::function<void()> Rerank(HttpRequest request, Respond respond, ApiFlavor flavor);
  std::function<void()> Predict(HttpRequest request, Respond respond);
  // Runs `embed` (scores or sparse weights: its inputs unnormalised) on `model` for `route`, with
  // the request's deadline, and answers `body` of the result with TEI's compute
  // headers, or the error in `flavor`'s shape. Returns the cancel function.
  std::function<void()> Score(const HttpRequest& request, Respond respond, ApiFlavor flavor, const std::string& route,
                              const Model& model, EmbedRequest embed,
                              std::function<std::string(const EmbedResult&)> body);
  // The X-Request-Timeout-Ms header as embed.deadline, counted from `start`;
  // 400 for a malformed value.
  static std::optional<ApiError> SetDeadline(const HttpRequest& request, std::chrono::steady_clock::time_point start,
                                             EmbedRequest& embed);
  // Adds `inputs` (texts, pairs) to the route's tokenbatch_http_inputs_total.
  void CountInputs(const std::string& route, std::size_t inputs);
  void DecodeIds(HttpRequest request, Respond respond, bool vllm);

  // What the Router knows of one served model.
  struct Model {
    std::string name;
    EmbeddingService* service = nullptr;
    // The backend's; null for an embedding model. Shared with the answers'
    // callbacks, which may outlive a Router whose service is shut down after it.
    std::shared_ptr<const backend::ClassifierInfo> classifier;
    bool sparse = false;  // a SPLADE model (backend::EncoderInfo::sparse)
  };
  // The served models as the Router keeps them.
  static std::vector<Model> Describe(std::vector<ServedModel> served);
  // The model `requested` names ("" = the first; with one model, always it), or
  // nullptr after answering 404 through `reply`, naming the served models.
  const Model* Choose(const std::string& requested, ApiFlavor flavor, const Respond& reply) const;
  // The 400 for `model` on a route for another kind of model: what it is and
  // which routes serve it.
  static ApiError WrongKind(const Model& model, std::string_view route);
  // The device memory the models share, or null.
  [[nodiscard]] const SharedDeviceMemory* device_memory() const;
  // /info's description of one model.
  [[nodiscard]] nlohmann::json ModelInfo(const Model& model) const;

  const ServerOptions options_;
  const ApiKey api_key_;  // options_.api_key's digest
  const CorsPolicy cors_;
  const std::vector<Model> models_;
  const std::int64_t created_unix_s_;  // when the server started: /v1/models `created`
  std::atomic<ServingState> state_{ServingState::kServing};
  std::atomic<std::int64_t> in_flight_{0};
  mutable Mutex mu_;
  std::map<std::pair<std::string, int>, std::uint64_t> replies_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Histogram> durations_ ABSL_GUARDED_BY(mu_);   // by route, seconds
  std::map<std::string, std::uint64_t> inputs_ ABSL_GUARDED_BY(mu_);  // by route
  // How far back the weight's queue average looks: a few batch cycles, and
  // under HAProxy's agent-inter, so that a check sees the queue of the last
  // second rather than of one moment.
  static constexpr std::chrono::milliseconds kQueueAverageTimeConstant{500};
  std::vector<QueueAverage> queue_averages_ ABSL_GUARDED_BY(mu_);  // by model
};

// TEI's x-compute-* and timing headers of a computed answer (router.cc), in
// milliseconds; `total_us` is the time since the request arrived.
void AppendComputeHeaders(HttpReply& out, const EmbedResult& result, double total_us);

}  // namespace tokenbatch::server
