// EmbeddingBackend: what the server runs a batch on.
//
// The server's Batcher hands a backend one batch of tokenised inputs and expects
// one embedding per input, in order (the contract of backend::Encoder::Embed,
// whose torch-free types are reused here). Three implementations:
//   torch  backend::TorchEncoder on a TorchScript model, and
//   hf     hf::HfEncoder on a Hugging Face model directory (MakeTorchBackend and
//          MakeHfBackend in model_backends.h, built with the libtorch backend);
//   noop   fixed vectors without a model, for load tests of the HTTP path and for
//          tests that need no model (MakeNoopBackend).
// Embed may be called from several Batcher workers at once and blocks for the
// forward pass (or the noop delay).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::server {

// The function a cross-encoder's logits go through to become scores
// (sentence-transformers' CrossEncoder activation_fn).
enum class ScoreActivation { kIdentity, kSigmoid, kTanh };

// What makes a backend a classifier / cross-encoder rather than an embedding
// model: Embed returns labels.size() raw logits per input, and the routes
// /rerank and /predict apply `activation` (or softmax) to them.
struct ClassifierInfo {
  std::vector<std::string> labels;  // by id (config.json id2label)
  ScoreActivation activation = ScoreActivation::kSigmoid;
  // The model reads token type ids (BERT), so a pair's second text gets the
  // template's types (1); false (XLM-R): every token is type 0.
  bool token_types = false;
};

// What /info says about the model.
struct BackendInfo {
  std::string architecture;       // config.json model_type ("bert", ...); "" when unknown
  std::string dtype = "float32";  // weights and activations
  std::string pooling;            // "cls" | "mean" | "last"; "" when not pooled here
  std::optional<ClassifierInfo> classifier;  // unset: an embedding model
};

class EmbeddingBackend {
 public:
  virtual ~EmbeddingBackend() = default;
  // One embedding per input, same order; each holds `dimensions` (or all
  // hidden_size()) floats, L2-normalised when the input's normalize (or the
  // backend's default) says so. Thread-safe; blocks for the forward pass.
  // Errors: those of backend::TorchEncoder::Embed (InvalidArgument, OutOfMemory,
  // Backend).
  [[nodiscard]] virtual absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const = 0;
  // H, the full embedding width (the largest `dimensions`).
  [[nodiscard]] virtual int hidden_size() const = 0;
  // Ids must be < vocab_size(); 0 = not checked.
  [[nodiscard]] virtual std::int64_t vocab_size() const = 0;
  // Longest input in tokens (the model's position table); 0 = unbounded.
  [[nodiscard]] virtual std::int64_t max_positions() const = 0;
  // Whether embeddings are L2-normalised when an input does not say.
  [[nodiscard]] virtual bool default_normalize() const = 0;
  // "noop", "torch" or "hf".
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual BackendInfo info() const { return {}; }
};

struct NoopBackendOptions {
  int hidden_size = 384;  // H, floats per embedding
  // Sleep per batch, to stand in for a forward pass in tests (e.g. to keep inputs
  // queued). 0 = return at once.
  std::chrono::microseconds delay{0};
  bool normalize = true;  // default when an input does not say
  // >= 0: a batch holding an input with this token id fails with BackendError, so
  // tests can exercise failure isolation and HTTP 500. -1 = never fail.
  std::int32_t fail_on_id = -1;
  // > 0: a batch holding more than this many tokens in total fails with
  // OutOfMemory, as a device that runs out of memory on large batches would;
  // failure isolation then retries its halves (runtime/isolation.h), so only an
  // input longer than this alone fails. 0 = never.
  std::int64_t oom_above_tokens = 0;
  // Non-empty: the backend is a classifier with these labels (BackendInfo::
  // classifier, sigmoid activation, token types read); hidden_size is then ignored
  // and each input gets labels.size() values by the formula below, unnormalised,
  // with x_0 + 31·n + 7·(the sum of its token type ids) as the offset, so that a
  // test sees whether a pair's types reached the backend.
  std::vector<std::string> labels;
};

// A backend that computes nothing: embedding value j of an input with ids
// x_0..x_{n-1} is ((x_0 + 31·n + j) mod 97) / 97 (then truncated to `dimensions`
// and normalised as asked), so distinct inputs get distinct, checkable vectors
// at a cost of O(H) per input. Fails only as NoopBackendOptions::fail_on_id and
// oom_above_tokens ask.
[[nodiscard]] std::unique_ptr<EmbeddingBackend> MakeNoopBackend(const NoopBackendOptions& options);

}  // namespace tokenbatch::server
