// Router's token routes: TEI's /tokenize and /decode, vLLM's /detokenize (see
// router.h). Parsed by api_parse.cc, answered by the service's tokenizer.
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "api/api.h"
#include "api/router.h"

namespace tokenbatch::server {

std::function<void()> Router::Tokenize(HttpRequest request, Respond reply) {
  auto parsed = ParseTokenize(request.body, ApiLimits{.max_client_batch_size = options_.max_client_batch_size});
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    reply(ErrorReply(ApiFlavor::kTei, *e));
    return {};
  }
  const Model* chosen = Choose(std::get<TokenizeRequest>(parsed).model, ApiFlavor::kTei, reply);
  if (chosen == nullptr) return {};
  auto texts = std::make_shared<std::vector<std::string>>(std::get<TokenizeRequest>(parsed).texts);
  chosen->service->Tokenize(*texts, std::get<TokenizeRequest>(parsed).add_special_tokens,
                     [reply = std::move(reply), texts](auto r) {
                       if (!r.ok()) return reply(ErrorReply(ApiFlavor::kTei, FromStatus(r.status())));
                       reply(HttpReply{.status = 200, .body = TokenizeBody(*texts, *r)});
                     });
  return {};
}

void Router::DecodeIds(HttpRequest request, Respond reply, bool vllm) {
  const ApiLimits limits{.max_client_batch_size = options_.max_client_batch_size};
  const ApiFlavor flavor = vllm ? ApiFlavor::kOpenAi : ApiFlavor::kTei;
  auto parsed = vllm ? ParseDetokenize(request.body, limits) : ParseDecode(request.body, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    if (vllm && e->status == 422) e->status = 400;  // vLLM answers every bad request with 400
    return reply(ErrorReply(flavor, *e));
  }
  DecodeRequest& r = std::get<DecodeRequest>(parsed);
  const Model* chosen = Choose(r.model, flavor, reply);
  if (chosen == nullptr) return;
  // The service names the list as "ids[i]"; a single list is `ids` (TEI) or `tokens` (vLLM).
  const std::string single_name = r.batch ? "" : (vllm ? "`tokens`: " : "`ids`: ");
  chosen->service->Decode(
      std::move(r.ids), r.skip_special_tokens,
      [reply = std::move(reply), flavor, vllm, single_name](absl::StatusOr<std::vector<std::string>> texts) {
        if (!texts.ok()) {
          ApiError e = FromStatus(texts.status());
          if (!single_name.empty() && e.message.rfind("ids[0]: ", 0) == 0) {
            e.message = single_name + e.message.substr(8);
          }
          if (vllm && e.status == 422) e.status = 400;
          return reply(ErrorReply(flavor, e));
        }
        reply(HttpReply{.status = 200, .body = vllm ? DetokenizeBody(texts->at(0)) : DecodeBody(*texts)});
      });
}

std::function<void()> Router::Decode(HttpRequest request, Respond reply) {
  DecodeIds(std::move(request), std::move(reply), /*vllm=*/false);
  return {};
}
std::function<void()> Router::Detokenize(HttpRequest request, Respond reply) {
  DecodeIds(std::move(request), std::move(reply), /*vllm=*/true);
  return {};
}

}  // namespace tokenbatch::server
