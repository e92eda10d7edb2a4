// Router's observation routes: /health, /info (TEI's shape), /v1/models
// (OpenAI's) and /metrics (Prometheus text), see router.h.
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "api/metrics_text.h"
#include "api/router.h"

namespace tokenbatch::server {

std::function<void()> Router::Health(HttpRequest, Respond reply) {
  switch (state()) {
    case ServingState::kServing:
      reply(HttpReply{.status = 200, .body = R"({"status":"ok"})"});
      break;
    case ServingState::kDraining:
      reply(HttpReply{.status = 503, .body = R"({"status":"draining"})"});
      break;
    case ServingState::kStopping:
      reply(HttpReply{.status = 503, .body = R"({"status":"shutting down"})"});
      break;
  }
  return {};
}

int Router::LoadWeight() const { return LoadWeight(service_->metrics()); }

void Router::SampleLoad(std::chrono::steady_clock::time_point now) {
  const MetricsSnapshot m = service_->metrics();
  MutexLock lock(&mu_);
  queue_average_.Observe(now, m.queue_tokens, static_cast<std::int64_t>(m.queue_requests));
}

int Router::LoadWeight(const MetricsSnapshot& m) const {
  double queued_tokens = static_cast<double>(m.queue_tokens);
  double queued_inputs = static_cast<double>(m.queue_requests);
  {
    MutexLock lock(&mu_);
    if (!queue_average_.empty()) {
      queued_tokens = queue_average_.tokens();
      queued_inputs = queue_average_.inputs();
    }
  }
  const ReplicaLoad load{.queued_tokens = queued_tokens,
                         .queued_inputs = queued_inputs,
                         // The budget batches are cut to now (below the configured one after OOM).
                         .max_batch_tokens = m.effective_budget,
                         .max_batch_size = service_->options().batcher.scheduler.max_batch_size,
                         .workers = service_->options().batcher.num_workers,
                         .latency = m.learned_latency};
  return LoadWeightPercent(load, options_.half_weight_backlog);
}

std::string Router::AgentCheck() const {
  const ServingState s = state();
  return AgentCheckLine(s, s == ServingState::kServing ? LoadWeight() : 0);
}

std::function<void()> Router::Metrics(HttpRequest, Respond reply) {
  reply(HttpReply{.status = 200, .content_type = "text/plain; version=0.0.4", .body = MetricsText()});
  return {};
}

std::function<void()> Router::Info(HttpRequest, Respond reply) {
  const SchedulerOptions& s = service_->options().batcher.scheduler;
  const backend::Encoder& b = service_->backend();
  const backend::EncoderInfo model = b.info();
  // TEI's shape: model_type {"embedding": {"pooling": ...}}; the config's own
  // model_type (the architecture) rides inside it.
  nlohmann::json embedding = {{"hidden_size", b.hidden_size()}};
  // TEI's names: cls, mean, last_token.
  if (!model.pooling.empty()) embedding["pooling"] = model.pooling == "last" ? "last_token" : model.pooling;
  if (!model.architecture.empty()) embedding["architecture"] = model.architecture;
  nlohmann::json model_type = {{"embedding", embedding}};
  if (model.classifier) {
    // TEI's: a one-label sequence classifier is a "reranker", else a "classifier".
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    for (std::size_t i = 0; i < model.classifier->labels.size(); ++i) {
      id2label[std::to_string(i)] = model.classifier->labels[i];
      label2id[model.classifier->labels[i]] = i;
    }
    nlohmann::json head = {{"id2label", id2label},
                           {"label2id", label2id},
                           {"activation", backend::ScoreActivationName(model.classifier->activation)}};
    if (model.classifier->labels.size() > 1) {
      head["label_scoring"] = backend::LabelScoringName(model.classifier->label_scoring);
    }
    if (!model.architecture.empty()) head["architecture"] = model.architecture;
    model_type = {{model.classifier->labels.size() == 1 ? "reranker" : "classifier", head}};
  }
  nlohmann::json info = {
      {"model_id", options_.model_name},
      {"model_type", model_type},
      {"backend", model.name},
      {"normalize", model.default_normalize},
      {"model_dtype", model.dtype},
      {"max_input_length", service_->max_input_tokens()},
      {"max_batch_tokens", s.max_batch_tokens},
      {"max_batch_requests", s.max_batch_size},
      {"max_client_batch_size", options_.max_client_batch_size},
      {"max_concurrent_requests", options_.max_concurrent_requests},
      {"auto_truncate", service_->options().auto_truncate},
      {"payload_limit", options_.payload_limit},
      {"tokenization_workers", service_->options().tokenizer_threads},
      {"scheduler",
       {{"max_batch_tokens", s.max_batch_tokens},
        {"max_batch_requests", s.max_batch_size},
        {"max_wait_us", std::chrono::duration_cast<std::chrono::microseconds>(s.max_wait).count()},
        {"cost_model", std::string(s.cost_model.name())},
        {"policy", std::string(PackingPolicyName(s.policy))},
        {"min_padding_efficiency", s.length_aware_min_padding_efficiency},
        {"batch_window", kBatchWindowNames.Name(s.adaptive_wait ? BatchWindow::kAdaptive : BatchWindow::kFixed)},
        {"oversize", std::string(OversizePolicyName(s.oversize))},
        {"max_queue_size", s.max_queue_size},
        {"max_queued_tokens", s.max_queued_tokens},
        {"workers", service_->options().batcher.num_workers}}},
      {"version", "0.1.0"}};
  // The attention kernel in use, for the backends that choose one (a model directory).
  if (!model.attention.empty()) info["attention"] = model.attention;
  reply(HttpReply{.status = 200, .body = info.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  return {};
}

std::function<void()> Router::Models(HttpRequest, Respond reply) {
  // OpenAI's model list: the one served model, `created` in Unix seconds.
  const nlohmann::json models = {{"object", "list"},
                                 {"data", nlohmann::json::array({{{"id", options_.model_name},
                                                                  {"object", "model"},
                                                                  {"created", created_unix_s_},
                                                                  {"owned_by", "tokenbatch"}}})}};
  reply(HttpReply{.status = 200, .body = models.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  return {};
}

std::string Router::MetricsText() const {
  const MetricsSnapshot m = service_->metrics();
  std::string out = MetricsSnapshotText(m);
  absl::StrAppend(&out,
                  "# HELP tokenbatch_lb_weight_percent Weight this replica asks load balancers for (HAProxy agent "
                  "check), from its queued tokens and estimated backlog\n",
                  "# TYPE tokenbatch_lb_weight_percent gauge\ntokenbatch_lb_weight_percent ", LoadWeight(m), "\n");
  absl::StrAppend(&out, "# HELP tokenbatch_http_in_flight HTTP requests being handled\n",
                  "# TYPE tokenbatch_http_in_flight gauge\ntokenbatch_http_in_flight ", in_flight_.load(), "\n");
  absl::StrAppend(&out, "# HELP tokenbatch_http_requests_total HTTP replies by route and status code\n",
                  "# TYPE tokenbatch_http_requests_total counter\n");
  MutexLock lock(&mu_);
  for (const auto& [key, n] : replies_) {
    absl::StrAppend(&out, "tokenbatch_http_requests_total{route=\"", key.first, "\",code=\"", key.second, "\"} ", n,
                    "\n");
  }
  absl::StrAppend(&out,
                  "# HELP tokenbatch_http_inputs_total Inputs submitted by route (texts; one per document "
                  "of a rerank)\n# TYPE tokenbatch_http_inputs_total counter\n");
  for (const auto& [route, n] : inputs_) {
    absl::StrAppend(&out, "tokenbatch_http_inputs_total{route=\"", route, "\"} ", n, "\n");
  }
  bool first = true;
  for (const auto& [route, h] : durations_) {
    AppendHistogramSeries(out, "tokenbatch_http_request_duration_seconds",
                          first ? "Time from a request's arrival to its reply, by route" : "",
                          absl::StrCat("route=\"", route, "\""), h);
    first = false;
  }
  return out;
}

}  // namespace tokenbatch::server
