// Router's observation routes: /health, /info (TEI's shape), /v1/models
// (OpenAI's) and /metrics (Prometheus text), see router.h.
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "api/metrics_text.h"
#include "api/router.h"

namespace tokenbatch::server {
namespace {

// The latency a queued backlog drains at: each worker's, or with intra-op widths
// the one-thread forwards' (a backlog runs narrow, one forward per core).
std::vector<BatchLatencyModel> BacklogLatency(const MetricsSnapshot& m) {
  for (std::size_t i = 0; i < m.learned_latency_threads.size() && i < m.learned_latency.size(); ++i) {
    if (m.learned_latency_threads[i] == 1) return {m.learned_latency[i]};
  }
  return m.learned_latency;
}

}  // namespace

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

int Router::LoadWeight() const {
  std::vector<MetricsSnapshot> metrics;
  for (const Model& m : models_) metrics.push_back(m.service->metrics());
  return LoadWeight(metrics);
}

void Router::SampleLoad(std::chrono::steady_clock::time_point now) {
  std::vector<MetricsSnapshot> metrics;
  for (const Model& m : models_) metrics.push_back(m.service->metrics());
  MutexLock lock(&mu_);
  for (std::size_t i = 0; i < models_.size(); ++i) {
    queue_averages_[i].Observe(now, metrics[i].queue_tokens, static_cast<std::int64_t>(metrics[i].queue_requests));
  }
}

int Router::LoadWeight(const std::vector<MetricsSnapshot>& metrics) const {
  ModelsLoad load;
  const SharedDeviceMemory* device = device_memory();
  if (device != nullptr) load.limit_bytes = device->snapshot().limit_bytes;
  MutexLock lock(&mu_);
  for (std::size_t i = 0; i < models_.size(); ++i) {
    const MetricsSnapshot& m = metrics[i];
    double queued_tokens = static_cast<double>(m.queue_tokens);
    double queued_inputs = static_cast<double>(m.queue_requests);
    if (!queue_averages_[i].empty()) {
      queued_tokens = queue_averages_[i].tokens();
      queued_inputs = queue_averages_[i].inputs();
    }
    const BatcherOptions& batcher = models_[i].service->options().batcher;
    load.models.push_back(ReplicaLoad{.queued_tokens = queued_tokens,
                                      .queued_inputs = queued_inputs,
                                      // The budget batches are cut to now (below the configured one after OOM).
                                      .max_batch_tokens = m.effective_budget,
                                      .max_batch_size = batcher.scheduler.max_batch_size,
                                      .workers = batcher.num_workers,
                                      .latency = BacklogLatency(m)});
    if (batcher.device_memory) {
      const CostModel& memory = batcher.device_memory->memory_model;
      load.queued_bytes.push_back(QueuedBytes(queued_tokens, queued_inputs, memory.c0(), memory.c1(), memory.c2()));
    }
  }
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

nlohmann::json Router::ModelInfo(const Model& served) const {
  const EmbeddingService& service = *served.service;
  const SchedulerOptions& s = service.options().batcher.scheduler;
  const backend::Encoder& b = service.backend();
  const backend::EncoderInfo model = b.info();
  // TEI's shape: model_type {"embedding": {"pooling": ...}}; the config's own
  // model_type (the architecture) rides inside it.
  nlohmann::json embedding = {{"hidden_size", b.hidden_size()}};
  // TEI's names: cls, mean, last_token, splade.
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
      {"model_id", served.name},
      {"model_type", model_type},
      {"backend", model.name},
      {"normalize", model.default_normalize},
      {"model_dtype", model.dtype},
      {"max_input_length", service.max_input_tokens()},
      {"max_batch_tokens", s.max_batch_tokens},
      {"max_batch_requests", s.max_batch_size},
      {"max_client_batch_size", options_.max_client_batch_size},
      {"max_concurrent_requests", options_.max_concurrent_requests},
      {"auto_truncate", service.options().auto_truncate},
      {"payload_limit", options_.payload_limit},
      {"tokenization_workers", service.options().tokenizer_threads},
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
        {"workers", service.options().batcher.num_workers}}},
      {"version", "0.1.0"}};
  if (model.sparse) info["sparse"] = true;
  if (!model.quantization.empty()) {
    info["quantization"] = model.quantization;
    if (const std::optional<backend::QuantizationQuality>& q = model.quantization_quality) {
      info["quantization_quality"] = {{"against", "the float32 weights' outputs, measured at load"},
                                      {"probe_inputs", q->probe_inputs},
                                      {"min_cosine", q->min_cosine},
                                      {"max_abs_diff", q->max_abs_diff}};
    }
  }
  // The attention kernel in use, for the backends that choose one (a model directory).
  if (!model.attention.empty()) info["attention"] = model.attention;
  if (const std::optional<DeviceMemoryShare>& share = service.options().batcher.device_memory) {
    const SharedDeviceMemory::ModelState& state = share->device->snapshot().models[share->model];
    info["device_memory"] = {{"memory_model",
                              {{"c0", share->memory_model.c0()},
                               {"c1", share->memory_model.c1()},
                               {"c2", share->memory_model.c2()}}},
                             {"weight", state.weight},
                             {"guaranteed_bytes", state.guaranteed_bytes}};
  }
  return info;
}

std::function<void()> Router::Info(HttpRequest, Respond reply) {
  // TEI's shape for the default model at the top; every model under "models".
  nlohmann::json info = ModelInfo(models_.front());
  nlohmann::json all = nlohmann::json::array();
  for (const Model& m : models_) all.push_back(ModelInfo(m));
  info["models"] = std::move(all);
  if (const SharedDeviceMemory* device = device_memory()) {
    const SharedDeviceMemory::Snapshot snapshot = device->snapshot();
    info["device_memory_limit_bytes"] = snapshot.limit_bytes;
  }
  reply(HttpReply{.status = 200, .body = info.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  return {};
}

std::function<void()> Router::Models(HttpRequest, Respond reply) {
  // OpenAI's model list: every served model, `created` in Unix seconds.
  nlohmann::json data = nlohmann::json::array();
  for (const Model& m : models_) {
    data.push_back({{"id", m.name}, {"object", "model"}, {"created", created_unix_s_}, {"owned_by", "tokenbatch"}});
  }
  const nlohmann::json models = {{"object", "list"}, {"data", std::move(data)}};
  reply(HttpReply{.status = 200, .body = models.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  return {};
}

std::string Router::MetricsText() const {
  std::vector<MetricsSnapshot> metrics;
  std::vector<LabeledMetrics> labeled;
  metrics.reserve(models_.size());
  for (const Model& m : models_) metrics.push_back(m.service->metrics());
  for (std::size_t i = 0; i < models_.size(); ++i) {
    labeled.push_back({absl::StrCat("model=\"", LabelValue(models_[i].name), "\""), &metrics[i]});
  }
  std::string out = MetricsSnapshotText(labeled);
  if (const SharedDeviceMemory* device = device_memory()) out += DeviceMemoryText(device->snapshot());
  absl::StrAppend(&out,
                  "# HELP tokenbatch_lb_weight_percent Weight this replica asks load balancers for (HAProxy agent "
                  "check), from its queued tokens and estimated backlog\n",
                  "# TYPE tokenbatch_lb_weight_percent gauge\ntokenbatch_lb_weight_percent ", LoadWeight(metrics),
                  "\n");
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
