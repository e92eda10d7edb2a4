// Router's cross-encoder routes: /rerank, /v1/rerank, /v2/rerank and /predict
// (see router.h; the JSON shapes are score_api.h's). Each (query, document)
// pair, or predict input, is one EmbeddingService input: one scheduler item,
// counted by its own tokens, so a call's pairs spread over batches by length.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/router.h"
#include "api/score_api.h"

namespace tokenbatch::server {

std::function<void()> Router::RerankTei(HttpRequest request, Respond reply) {
  return Rerank(std::move(request), std::move(reply), ApiFlavor::kTei);
}
std::function<void()> Router::RerankOpenAi(HttpRequest request, Respond reply) {
  return Rerank(std::move(request), std::move(reply), ApiFlavor::kOpenAi);
}

std::function<void()> Router::Rerank(HttpRequest request, Respond reply, ApiFlavor flavor) {
  const std::string route = request.target.substr(0, request.target.find('?'));
  auto parsed = ParseRerank(request.body, ApiLimits{.max_client_batch_size = options_.max_client_batch_size});
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    reply(ErrorReply(flavor, *e));
    return {};
  }
  auto rerank = std::make_shared<RerankRequest>(std::get<RerankRequest>(std::move(parsed)));
  const Model* chosen = Choose(rerank->model, flavor, reply);
  if (chosen == nullptr) return {};
  if (!chosen->classifier || chosen->classifier->labels.size() != 1) {
    ApiError e = WrongKind(*chosen, route);
    if (chosen->classifier) {
      e.message = absl::StrCat("model \"", chosen->name, "\" is a classifier with ",
                               chosen->classifier->labels.size(),
                               " labels; reranking needs a cross-encoder with one label (classify with /predict)");
    }
    reply(ErrorReply(flavor, e));
    return {};
  }
  EmbedRequest embed{
      .truncate = rerank->truncate, .truncation_direction = rerank->truncation_direction, .priority = rerank->priority};
  embed.inputs.reserve(rerank->documents.size());
  for (const std::string& document : rerank->documents) {
    embed.inputs.push_back(EmbedInput{.text = rerank->query, .text_pair = document});
  }
  return Score(
      request, std::move(reply), flavor, route, *chosen, std::move(embed),
      [classifier = chosen->classifier, rerank, model = chosen->name, id = request.request_id](const EmbedResult& r) {
        return RerankBody(*rerank, r.embeddings, *classifier, model, r.tokens, id);
      });
}

std::function<void()> Router::Score(const HttpRequest& request, Respond reply, ApiFlavor flavor,
                                    const std::string& route, const Model& model, EmbedRequest embed,
                                    std::function<std::string(const EmbedResult&)> body) {
  embed.normalize = false;  // scores, not vectors
  const auto start = std::chrono::steady_clock::now();
  if (auto e = SetDeadline(request, start, embed)) {
    reply(ErrorReply(flavor, *e));
    return {};
  }
  CountInputs(route, embed.inputs.size());
  return model.service->Embed(std::move(embed), [reply = std::move(reply), flavor, body = std::move(body),
                                            start](absl::StatusOr<EmbedResult> r) {
    if (!r.ok()) return reply(ErrorReply(flavor, FromStatus(r.status())));
    HttpReply out{.status = 200, .body = body(*r)};
    AppendComputeHeaders(out, *r,
                         std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    reply(std::move(out));
  });
}

std::function<void()> Router::Predict(HttpRequest request, Respond reply) {
  const ApiFlavor flavor = ApiFlavor::kTei;
  auto parsed = ParsePredict(request.body, ApiLimits{.max_client_batch_size = options_.max_client_batch_size});
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    reply(ErrorReply(flavor, *e));
    return {};
  }
  auto predict = std::make_shared<PredictRequest>(std::get<PredictRequest>(std::move(parsed)));
  const Model* chosen = Choose(predict->model, flavor, reply);
  if (chosen == nullptr) return {};
  if (!chosen->classifier) {
    reply(ErrorReply(flavor, WrongKind(*chosen, "/predict")));
    return {};
  }
  EmbedRequest embed{.inputs = std::move(predict->inputs),
                     .truncate = predict->truncate,
                     .truncation_direction = predict->truncation_direction,
                     .priority = predict->priority};
  return Score(request, std::move(reply), flavor, "/predict", *chosen, std::move(embed),
               [classifier = chosen->classifier, predict](const EmbedResult& r) {
                 return PredictBody(*predict, r.embeddings, *classifier);
               });
}

}  // namespace tokenbatch::server
