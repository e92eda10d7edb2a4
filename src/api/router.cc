// Router: the route table, auth, limits, and the embedding routes (see router.h).
#include "api/router.h"

#include <chrono>
#include <memory>
#include <optional>
#include <variant>

#include <spdlog/spdlog.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/api.h"
#include "api/api_key.h"
#include "api/content_coding.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

using Clock = std::chrono::steady_clock;

// The X-Request-Timeout-Ms header: a whole number of milliseconds in
// [1, kMaxTimeoutMs]; empty = no deadline.
constexpr std::int64_t kMaxTimeoutMs = 24LL * 3600 * 1000;
std::variant<std::optional<Clock::time_point>, ApiError> ParseTimeout(const std::string& header,
                                                                      Clock::time_point start) {
  if (header.empty()) return std::optional<Clock::time_point>();
  std::int64_t ms = 0;
  if (!absl::SimpleAtoi(header, &ms) || ms < 1 || ms > kMaxTimeoutMs) {
    return ApiError{400, absl::StrCat("X-Request-Timeout-Ms must be a whole number of milliseconds in [1, ",
                                      kMaxTimeoutMs, "], got \"", header.substr(0, 32), "\"")};
  }
  return std::optional<Clock::time_point>(start + std::chrono::milliseconds(ms));
}

std::string ComputeMillis(double us) { return absl::StrCat(static_cast<std::int64_t>(us / 1000.0)); }

}  // namespace

std::optional<ApiError> Router::SetDeadline(const HttpRequest& request, std::chrono::steady_clock::time_point start,
                                            EmbedRequest& embed) {
  auto deadline = ParseTimeout(request.timeout_ms, start);
  if (auto* e = std::get_if<ApiError>(&deadline)) return *e;
  embed.deadline = std::get<std::optional<Clock::time_point>>(deadline);
  return std::nullopt;
}

void AppendComputeHeaders(HttpReply& out, const EmbedResult& r, double total_us) {
  // TEI's header names and units (milliseconds).
  // emplace_back, not an initializer list: that would copy every string.
  out.headers.reserve(9);  // and x-request-id, added by Handle
  out.headers.emplace_back("x-compute-type", "tokenbatch");
  out.headers.emplace_back("x-compute-tokens", absl::StrCat(r.tokens));
  out.headers.emplace_back("x-compute-characters", absl::StrCat(r.characters));
  out.headers.emplace_back("x-tokenization-time", ComputeMillis(r.tokenize_us));
  out.headers.emplace_back("x-queue-time", ComputeMillis(r.queue_us));
  out.headers.emplace_back("x-inference-time", ComputeMillis(r.inference_us));
  out.headers.emplace_back("x-compute-time", ComputeMillis(r.queue_us + r.inference_us));
  out.headers.emplace_back("x-total-time", ComputeMillis(total_us));
}

HttpReply Router::ErrorReply(ApiFlavor flavor, const ApiError& error) {
  HttpReply reply{.status = error.status, .body = ErrorBody(flavor, error)};
  if (error.status == 429) reply.headers.emplace_back("Retry-After", "1");
  return reply;
}

std::vector<Router::Model> Router::Describe(std::vector<ServedModel> served) {
  std::vector<Router::Model> out;
  for (ServedModel& m : served) {
    const backend::EncoderInfo info = m.service->backend().info();
    std::shared_ptr<const backend::ClassifierInfo> classifier;
    if (info.classifier) classifier = std::make_shared<const backend::ClassifierInfo>(*info.classifier);
    out.push_back({.name = std::move(m.name), .service = m.service, .classifier = classifier, .sparse = info.sparse});
  }
  return out;
}

Router::Router(const ServerOptions& options, std::vector<ServedModel> models)
    : options_(options),
      api_key_(options.api_key),
      cors_(CorsPolicy::Create(options.cors_allow_origins).value_or(CorsPolicy())),
      models_(Describe(std::move(models))),
      created_unix_s_(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
              .count()),
      queue_averages_(models_.size(), QueueAverage(kQueueAverageTimeConstant)) {}

std::int64_t Router::queued_inputs() const {
  std::int64_t queued = 0;
  for (const Model& m : models_) queued += static_cast<std::int64_t>(m.service->metrics().queue_requests);
  return queued;
}

void Router::StopService() {
  for (const Model& m : models_) m.service->Shutdown(options_.drain);
}

const SharedDeviceMemory* Router::device_memory() const {
  const std::optional<DeviceMemoryShare>& share = models_.front().service->options().batcher.device_memory;
  return share ? share->device.get() : nullptr;
}

const Router::Model* Router::Choose(const std::string& requested, ApiFlavor flavor, const Respond& reply) const {
  if (models_.size() == 1 || requested.empty()) return &models_.front();
  for (const Model& m : models_) {
    if (m.name == requested) return &m;
  }
  std::string names;
  for (const Model& m : models_) absl::StrAppend(&names, names.empty() ? "" : ", ", m.name);
  reply(ErrorReply(flavor, ApiError{404, absl::StrCat("model \"", requested,
                                                      "\" is not served here; the models served are: ", names)}));
  return nullptr;
}

ApiError Router::WrongKind(const Model& model, std::string_view route) {
  const char* serves = model.classifier ? (model.classifier->labels.size() == 1 ? "a cross-encoder (a reranker): it "
                                                                                    "scores with /rerank and /predict"
                                                                              : "a classifier: it scores with /predict")
                       : model.sparse ? "a sparse (SPLADE) model: it embeds with /embed_sparse"
                                      : "an embedding model: it embeds with /v1/embeddings and /embed";
  return ApiError{400, absl::StrCat("model \"", model.name, "\" is ", serves, ", not with ", ToAbsl(route))};
}

void Router::CountReply(const std::string& route, int status) {
  MutexLock lock(&mu_);
  ++replies_[{route, status}];
}

void Router::CountReply(const std::string& route, int status, double seconds) {
  MutexLock lock(&mu_);
  ++replies_[{route, status}];
  auto it = durations_.find(route);
  if (it == durations_.end()) it = durations_.emplace(route, Histogram::Exponential(0.001, 2.0, 16)).first;
  it->second.Observe(seconds);
}

void Router::CountInputs(const std::string& route, std::size_t inputs) {
  MutexLock lock(&mu_);
  inputs_[route] += inputs;
}

const Router::Route* Router::FindRoute(std::string_view path) {
  static constexpr Route kRoutes[] = {
      {"/v1/embeddings", false, ApiFlavor::kOpenAi, true, true, &Router::EmbedOpenAi},
      {"/embed", false, ApiFlavor::kTei, true, true, &Router::EmbedTei},
      {"/embed_sparse", false, ApiFlavor::kTei, true, true, &Router::EmbedSparse},
      {"/tokenize", false, ApiFlavor::kTei, true, true, &Router::Tokenize},
      {"/decode", false, ApiFlavor::kTei, true, true, &Router::Decode},
      {"/detokenize", false, ApiFlavor::kOpenAi, true, true, &Router::Detokenize},
      {"/rerank", false, ApiFlavor::kTei, true, true, &Router::RerankTei},
      {"/v1/rerank", false, ApiFlavor::kOpenAi, true, true, &Router::RerankOpenAi},
      {"/v2/rerank", false, ApiFlavor::kOpenAi, true, true, &Router::RerankOpenAi},
      {"/predict", false, ApiFlavor::kTei, true, true, &Router::Predict},
      {"/health", true, ApiFlavor::kTei, false, false, &Router::Health},
      {"/info", true, ApiFlavor::kTei, true, false, &Router::Info},
      {"/metrics", true, ApiFlavor::kTei, true, false, &Router::Metrics},
      {"/v1/models", true, ApiFlavor::kOpenAi, true, false, &Router::Models},
  };
  for (const Route& route : kRoutes) {
    if (path == route.path) return &route;
  }
  return nullptr;
}

std::function<void()> Router::Handle(HttpRequest request, Respond respond) {
  const Clock::time_point start = Clock::now();
  const std::string path = request.target.substr(0, request.target.find('?'));
  const Route* route = FindRoute(path);
  in_flight_.fetch_add(1);
  // Every answer goes through here: count, log, tag with the request id and the
  // CORS headers.
  auto shared_respond = std::make_shared<Respond>(std::move(respond));
  Respond reply = [this, name = std::string(route ? route->path : "other"), start, id = request.request_id,
                   method = request.method, origin = request.origin, shared_respond](HttpReply r) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    CountReply(name, r.status, ms / 1000.0);
    r.headers.emplace_back("x-request-id", id);
    cors_.AppendReplyHeaders(origin, r.headers);
    if (r.status >= 500) {
      spdlog::warn("request_id={} method={} route={} status={} ms={:.3f} error={}", id, method, name, r.status, ms,
                   r.body);
    } else {
      spdlog::debug("request_id={} method={} route={} status={} ms={:.3f}", id, method, name, r.status, ms);
    }
    in_flight_.fetch_sub(1);
    (*shared_respond)(std::move(r));
  };
  if (route == nullptr) {
    const ApiFlavor flavor = path.starts_with("/v1/") ? ApiFlavor::kOpenAi : ApiFlavor::kTei;
    reply(ErrorReply(flavor, ApiError{404, absl::StrCat("no route for ", request.target)}));
    return {};
  }
  const ApiFlavor flavor = route->flavor;
  // HEAD is GET without the body (RFC 9110 section 9.3.2): probes and load
  // balancers send it. OPTIONS is answered on every route, without the API
  // key: a browser's CORS preflight never carries credentials.
  const char* const methods = route->get ? "GET, HEAD" : "POST";
  const char* const allow = route->get ? "GET, HEAD, OPTIONS" : "POST, OPTIONS";
  if (request.method == "OPTIONS") {
    HttpReply r{.status = 204, .content_type = ""};
    r.headers.emplace_back("Allow", allow);
    if (!request.access_control_request_method.empty()) {
      cors_.AppendPreflightHeaders(request.origin, methods, request.access_control_request_headers, r.headers);
    }
    reply(std::move(r));
    return {};
  }
  const bool method_ok = route->get ? request.method == "GET" || request.method == "HEAD" : request.method == "POST";
  if (!method_ok) {
    HttpReply r = ErrorReply(flavor, ApiError{405, absl::StrCat(path, " accepts ", methods, ", not ", request.method)});
    r.headers.emplace_back("Allow", allow);  // required with 405 (RFC 9110 section 15.5.6)
    reply(std::move(r));
    return {};
  }
  if (route->needs_key && !api_key_.empty() && !api_key_.Matches(request.authorization)) {
    const bool missing = request.authorization.empty();
    HttpReply r = ErrorReply(
        flavor, ApiError{401, missing ? "missing API key: send Authorization: Bearer <key>" : "wrong API key"});
    // The scheme to authenticate with, required on a 401 (RFC 9110 section 15.5.2); a
    // credential that was sent and refused is an invalid_token (RFC 6750 section 3).
    r.headers.emplace_back("WWW-Authenticate", missing ? "Bearer" : R"(Bearer error="invalid_token")");
    reply(std::move(r));
    return {};
  }
  if (route->work) {
    if (shutting_down()) {
      reply(ErrorReply(flavor, ApiError{503, "the server is shutting down"}));
      return {};
    }
    // The limit counts every request being handled, this one included.
    if (options_.max_concurrent_requests > 0 &&
        in_flight_.load() > static_cast<std::int64_t>(options_.max_concurrent_requests)) {
      reply(ErrorReply(flavor, ApiError{429, absl::StrCat("more than ", options_.max_concurrent_requests,
                                                          " concurrent requests (max_concurrent_requests)")}));
      return {};
    }
    if (!request.content_encoding.empty()) {
      auto decoded =
          DecodeContentEncoding(request.content_encoding, std::move(request.body), options_.payload_limit);
      if (auto* e = std::get_if<ApiError>(&decoded)) {
        HttpReply r = ErrorReply(flavor, *e);
        // Which codings would have been accepted (RFC 9110 section 15.5.16).
        if (e->status == 415) r.headers.emplace_back("Accept-Encoding", std::string(kAcceptedContentCodings));
        reply(std::move(r));
        return {};
      }
      request.body = std::move(std::get<std::string>(decoded));
    }
  }
  return (this->*route->handler)(std::move(request), std::move(reply));
}

std::function<void()> Router::EmbedOpenAi(HttpRequest request, Respond reply) {
  return Embed(std::move(request), std::move(reply), /*openai=*/true);
}
std::function<void()> Router::EmbedTei(HttpRequest request, Respond reply) {
  return Embed(std::move(request), std::move(reply), /*openai=*/false);
}
std::function<void()> Router::Embed(HttpRequest request, Respond reply, bool openai) {
  const ApiLimits limits{.max_client_batch_size = options_.max_client_batch_size};
  const ApiFlavor flavor = openai ? ApiFlavor::kOpenAi : ApiFlavor::kTei;
  EmbedRequest embed;
  std::string requested;
  bool base64 = false;
  if (openai) {
    auto parsed = ParseOpenAiEmbeddings(request.body, limits);
    if (auto* e = std::get_if<ApiError>(&parsed)) {
      reply(ErrorReply(flavor, *e));
      return {};
    }
    auto& r = std::get<OpenAiEmbeddingsRequest>(parsed);
    embed = std::move(r.request);
    requested = std::move(r.model);
    base64 = r.base64;
  } else {
    auto parsed = ParseTeiEmbed(request.body, limits);
    if (auto* e = std::get_if<ApiError>(&parsed)) {
      reply(ErrorReply(flavor, *e));
      return {};
    }
    auto& r = std::get<TeiEmbedRequest>(parsed);
    embed = std::move(r.request);
    requested = std::move(r.model);
  }
  const Model* chosen = Choose(requested, flavor, reply);
  if (chosen == nullptr) return {};
  if (chosen->classifier || chosen->sparse) {
    reply(ErrorReply(flavor, WrongKind(*chosen, openai ? "/v1/embeddings" : "/embed")));
    return {};
  }
  // Like OpenAI and vLLM, the response names the model actually served.
  const std::string model = chosen->name;
  const Clock::time_point start = Clock::now();
  if (auto e = SetDeadline(request, start, embed)) {
    reply(ErrorReply(flavor, *e));
    return {};
  }
  CountInputs(openai ? "/v1/embeddings" : "/embed", embed.inputs.size());
  return chosen->service->Embed(
      std::move(embed), [reply = std::move(reply), flavor, model, base64, start](absl::StatusOr<EmbedResult> r) {
        if (!r.ok()) return reply(ErrorReply(flavor, FromStatus(r.status())));
        // Formatted here: on a tokenizer thread when the Batcher's worker has a
        // batch waiting (EmbeddingService hands the answer over), else on the
        // idle worker; never on the I/O thread, the server's bottleneck with one
        // I/O thread (docs/benchmarks.md, "Where the reply is formatted").
        HttpReply out{.status = 200,
                      .body = flavor == ApiFlavor::kOpenAi ? OpenAiEmbeddingsBody(*r, model, base64)
                                                           : TeiEmbedBody(*r)};
        AppendComputeHeaders(out, *r, std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        reply(std::move(out));
      });
}

std::function<void()> Router::EmbedSparse(HttpRequest request, Respond reply) {
  const ApiFlavor flavor = ApiFlavor::kTei;
  auto parsed = ParseSparseEmbed(request.body, ApiLimits{.max_client_batch_size = options_.max_client_batch_size});
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    reply(ErrorReply(flavor, *e));
    return {};
  }
  auto sparse = std::make_shared<SparseEmbedRequest>(std::get<SparseEmbedRequest>(std::move(parsed)));
  const Model* chosen = Choose(sparse->model, flavor, reply);
  if (chosen == nullptr) return {};
  if (!chosen->sparse) {
    reply(ErrorReply(flavor, WrongKind(*chosen, "/embed_sparse")));
    return {};
  }
  EmbedRequest embed = std::move(sparse->request);
  return Score(request, std::move(reply), flavor, "/embed_sparse", *chosen, std::move(embed),
               [sparse](const EmbedResult& r) { return SparseEmbedBody(r, *sparse); });
}

}  // namespace tokenbatch::server
