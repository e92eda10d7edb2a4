// Scores from a classifier's logits, and the rerank and predict answers (see
// score_api.h).
#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "api/score_api.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;

double Activate(double x, backend::ScoreActivation a) {
  switch (a) {
    case backend::ScoreActivation::kIdentity:
      return x;
    case backend::ScoreActivation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case backend::ScoreActivation::kTanh:
      return std::tanh(x);
  }
  return x;
}

// Indices 0..n-1 by score, highest first; ties keep index order. A NaN (a
// half-precision overflow) ranks last, so the order stays a strict weak one.
std::vector<std::size_t> ByScore(const std::vector<double>& scores) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto key = [&](std::size_t i) { return std::isnan(scores[i]) ? -HUGE_VAL : scores[i]; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) > key(b); });
  return order;
}

// Scores are computed in float32; written as the nearest double of that float,
// as the Python servers write them.
double AsFloat(double x) { return static_cast<double>(static_cast<float>(x)); }

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

double RerankScore(const std::vector<float>& logits, const backend::ClassifierInfo& model, bool raw_scores) {
  const double x = logits.empty() ? 0.0 : logits[0];
  return raw_scores ? x : Activate(x, model.activation);
}

std::vector<double> PredictScores(const std::vector<float>& logits, const backend::ClassifierInfo& model, bool raw_scores) {
  std::vector<double> out(logits.begin(), logits.end());
  if (raw_scores || out.empty()) return out;
  if (out.size() == 1) {
    out[0] = Activate(out[0], model.activation);
    return out;
  }
  if (model.label_scoring == backend::LabelScoring::kIdentity) return out;
  if (model.label_scoring == backend::LabelScoring::kSigmoid) {
    for (double& x : out) x = Activate(x, backend::ScoreActivation::kSigmoid);
    return out;
  }
  // Softmax, shifted by the largest logit so that exp cannot overflow.
  const double top = *std::max_element(out.begin(), out.end());
  double total = 0;
  for (double& x : out) total += (x = std::exp(x - top));
  for (double& x : out) x /= total;
  return out;
}

std::string RerankBody(const RerankRequest& request, const std::vector<std::vector<float>>& logits,
                       const backend::ClassifierInfo& model, std::string_view served_model, std::int64_t tokens,
                       std::string_view id) {
  std::vector<double> scores;
  scores.reserve(logits.size());
  for (const auto& l : logits) scores.push_back(AsFloat(RerankScore(l, model, request.raw_scores)));
  std::vector<std::size_t> order = ByScore(scores);
  if (request.top_n && static_cast<std::size_t>(*request.top_n) < order.size()) order.resize(*request.top_n);
  json results = json::array();
  for (std::size_t i : order) {
    json r = {{"index", i}, {request.cohere ? "relevance_score" : "score", scores[i]}};
    if (request.return_documents) {
      if (request.cohere) {
        r["document"] = {{"text", request.documents[i]}};
      } else {
        r["text"] = request.documents[i];
      }
    }
    results.push_back(std::move(r));
  }
  if (!request.cohere) return Dump(results);
  return Dump(json{{"id", std::string(id)},
                   {"model", std::string(served_model)},
                   {"results", std::move(results)},
                   {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

std::string PredictBody(const PredictRequest& request, const std::vector<std::vector<float>>& logits,
                        const backend::ClassifierInfo& model) {
  json out = json::array();
  for (const auto& l : logits) {
    std::vector<double> scores = PredictScores(l, model, request.raw_scores);
    json predictions = json::array();
    for (std::size_t k : ByScore(scores)) {
      predictions.push_back(
          {{"score", AsFloat(scores[k])}, {"label", k < model.labels.size() ? model.labels[k] : std::to_string(k)}});
    }
    out.push_back(std::move(predictions));
  }
  if (!request.batch && out.size() == 1) return Dump(out[0]);
  return Dump(out);
}

}  // namespace tokenbatch::server
