#include "backend/postprocess.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {

absl::Status ValidateInputs(std::span<const EmbeddingInput> inputs, const EncoderOptions& options,
                            int hidden_size, bool accepts_token_types) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EmbeddingInput& in = inputs[i];
    const int64_t n = static_cast<int64_t>(in.input_ids.size());
    if (n == 0) return InvalidArgumentError(absl::StrCat("request ", i, " has no tokens"));
    if (options.max_positions > 0 && n > options.max_positions) {
      return InvalidArgumentError(absl::StrCat("request ", i, " has ", n,
                                               " tokens, more than max_positions ",
                                               options.max_positions));
    }
    for (int64_t j = 0; j < n; ++j) {
      const int32_t id = in.input_ids[j];
      if (id < 0 || (options.vocab_size > 0 && id >= options.vocab_size)) {
        return InvalidArgumentError(absl::StrCat("request ", i, " token ", j, " has id ", id,
                                                 ", outside [0, vocab_size ",
                                                 options.vocab_size, ")"));
      }
    }
    if (!in.token_type_ids.empty()) {
      if (static_cast<int64_t>(in.token_type_ids.size()) != n) {
        return InvalidArgumentError(absl::StrCat("request ", i, " has ",
                                                 in.token_type_ids.size(),
                                                 " token_type_ids for ", n, " tokens"));
      }
      for (int32_t t : in.token_type_ids) {
        if (t < 0 || (!accepts_token_types && t != 0)) {
          return InvalidArgumentError(absl::StrCat(
              "request ", i, " has token_type_id ", t,
              accepts_token_types ? "" : " but the model's forward takes no token_type_ids"));
        }
      }
    }
    if (in.dimensions < 0 || in.dimensions > hidden_size) {
      return InvalidArgumentError(absl::StrCat("request ", i, " asks for dimensions ",
                                               in.dimensions, "; the model has ", hidden_size));
    }
  }
  return absl::OkStatus();
}

Embedding FinishEmbedding(std::span<const float> pooled, int dimensions, bool normalize) {
  const size_t keep = dimensions > 0 ? std::min<size_t>(dimensions, pooled.size()) : pooled.size();
  Embedding out;
  out.values.assign(pooled.begin(), pooled.begin() + keep);
  if (normalize) {
    double sum = 0;
    for (float v : out.values) sum += static_cast<double>(v) * v;
    const double norm = std::max(std::sqrt(sum), 1e-12);
    for (float& v : out.values) v = static_cast<float>(v / norm);
  }
  return out;
}

Embedding SparseEmbedding(std::span<const float> weights) {
  Embedding e;
  for (std::size_t v = 0; v < weights.size(); ++v) {
    if (weights[v] > 0) {
      e.indices.push_back(static_cast<int32_t>(v));
      e.values.push_back(weights[v]);
    }
  }
  return e;
}

}  // namespace tokenbatch::backend
