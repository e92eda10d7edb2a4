// Fuzz target: every route's request-body parser (api/api.h, score_api.h).
// The first byte picks the parser, the rest is the body as a client sends it:
// JSON with token-id arrays, numbers, escapes and nesting. A parser must answer
// every body with a request or an ApiError carrying a 4xx status, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "fuzz/fuzz_check.h"
#include "api/api.h"
#include "api/score_api.h"

namespace {

using tokenbatch::server::ApiError;
using tokenbatch::server::ApiLimits;

// Returns the parsed request (pointing into `parsed`), or null after checking that the error is a
// client error that says something.
template <typename Request>
const Request* CheckAnswer(const std::variant<Request, ApiError>& parsed) {
  if (const auto* error = std::get_if<ApiError>(&parsed)) {
    FUZZ_CHECK(error->status >= 400 && error->status < 500);
    FUZZ_CHECK(!error->message.empty());
    return nullptr;
  }
  return &std::get<Request>(parsed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  namespace s = tokenbatch::server;
  // A small client batch limit, so that the 413 path is reached by short inputs.
  const ApiLimits limits{.max_client_batch_size = 8, .max_json_depth = 16};
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0:
      if (const auto parsed = s::ParseOpenAiEmbeddings(body, limits); const auto* r = CheckAnswer(parsed)) {
        FUZZ_CHECK(!r->request.inputs.empty() && r->request.inputs.size() <= limits.max_client_batch_size);
      }
      break;
    case 1:
      if (const auto parsed = s::ParseTeiEmbed(body, limits); const auto* r = CheckAnswer(parsed)) {
        FUZZ_CHECK(!r->request.inputs.empty() && r->request.inputs.size() <= limits.max_client_batch_size);
      }
      break;
    case 2:
      CheckAnswer(s::ParseTokenize(body, limits));
      break;
    case 3:
      CheckAnswer(s::ParseDecode(body, limits));
      break;
    case 4:
      CheckAnswer(s::ParseDetokenize(body, limits));
      break;
    case 5:
      if (const auto parsed = s::ParseRerank(body, limits); const auto* r = CheckAnswer(parsed)) {
        FUZZ_CHECK(!r->query.empty());
        FUZZ_CHECK(!r->documents.empty() && r->documents.size() <= limits.max_client_batch_size);
        FUZZ_CHECK(!r->top_n || *r->top_n >= 1);
      }
      break;
    case 6:
      CheckAnswer(s::ParsePredict(body, limits));
      break;
    case 7:
      if (const auto parsed = s::ParseSparseEmbed(body, limits); const auto* r = CheckAnswer(parsed)) {
        FUZZ_CHECK(!r->request.inputs.empty() && r->request.inputs.size() <= limits.max_client_batch_size);
        FUZZ_CHECK(!r->top_k || *r->top_k >= 1);
        FUZZ_CHECK(!r->threshold || *r->threshold >= 0);
      }
      break;
  }
  return 0;
}
