// EmbeddingService: tokenizer -> Batcher -> backend, without any HTTP.
//
// The backend is any backend::Encoder (TorchScript, a Hugging Face directory,
// or the noop encoder); its info() says whether it is a cross-encoder and
// which limits apply. The parts (src/service): input_preparation.h (prompt,
// tokens and truncation per input, pure), batcher_adapter.h (the Batcher's
// batch, slice and merge functions), pending.h (the fan-in of a request's
// inputs and its cancellation), work_queue.h (the tokenizer threads).
//
// A client request holds one or more inputs (texts or token ids, or for a
// cross-encoder backend (query, document) pairs: EmbedInput::text_pair, encoded
// by the tokenizer's pair template with the document cut to max_input_tokens
// unless the request's truncate is false, see PairToTokens). Embed tokenises
// them on ServiceOptions::tokenizer_threads threads (never on the caller's thread,
// which is an I/O thread; the threads drain their queue in bulk and are woken
// only when needed, see src/service/work_queue.h), submits each input to the
// Batcher as its own request (so the inputs of one client request may land in
// different batches), and calls the callback once all are resolved. Oversize inputs follow the Batcher's oversize
// policy one by one; a request-level `truncate` cuts an input to max_input_tokens first (TEI's truncate /
// auto-truncate). If any input fails, the others are cancelled and the request fails with the first error, its message
// prefixed with the input index.
//
// Thread-safety: every method may be called from any thread. Callbacks run on a
// tokenizer-pool thread, a Batcher worker or deadline thread, or the thread that
// cancels (a disconnect), and must not block. An Embed answer is handed from the
// worker to a tokenizer thread when the worker's next batch would otherwise wait
// for it (CallbackDelaysNextBatch), so formatting a reply does not delay the model.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/runtime/batcher_options.h"
#include "tokenbatch/runtime/metrics.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/service/embed_types.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::server {

// What EmbeddingService::Create does when max_batch_tokens cannot hold one
// input of the input limit (max_input_tokens when set, else the backend's
// max_positions): such inputs, which the model accepts, would otherwise be cut
// or refused by the batching budget alone.
enum class ShortBudget {
  kRefuse,  // Create fails with InvalidArgument naming the budget, the limit and the fixes
  kRaise,   // max_batch_tokens becomes the cost of one such input: for a budget
            // that is a default nobody chose (`tokenbatch serve` without
            // --max-batch-tokens or --calibration)
};

struct ServiceOptions {
  BatcherOptions batcher;
  // When batcher.scheduler.max_batch_tokens cannot hold one input of the input
  // limit: refuse at Create (a budget the caller chose) or raise it (a default).
  ShortBudget short_budget = ShortBudget::kRefuse;
  int tokenizer_threads = 2;
  // Default of EmbedRequest::truncate (TEI's --auto-truncate). Off in the
  // library, where a caller chooses; `tokenbatch serve` turns it on, as TEI's
  // server does, unless --oversize split needs long inputs whole.
  bool auto_truncate = false;
  // The end a truncation cuts when a request does not say (TEI's
  // truncation_direction): the model's tokenizer_config.json truncation_side,
  // as transformers' tokenizers cut.
  TruncationDirection truncation_direction = TruncationDirection::kRight;
  // Which texts of a cross-encoder's (query, document) pair are cut to the
  // model's limit: longest_first (the default) as sentence-transformers'
  // CrossEncoder and TEI cut, or only_second, which keeps the query whole.
  tokenizer::PairTruncation pair_truncation = tokenizer::PairTruncation::kLongestFirst;
  // Prompts a request may name (config_sentence_transformers.json's "prompts"):
  // name -> text prepended to each text input. Its tokens count toward the
  // budget and the usage, as in sentence-transformers and TEI, and are told to
  // the backend (EmbeddingInput::prompt_tokens) for pooling that leaves them out.
  std::map<std::string, std::string> prompts;
  // Prepended when a request names no prompt ("" = none): TEI's --default-prompt,
  // or the text of --default-prompt-name / the model's default_prompt_name.
  std::string default_prompt;
};

class EmbeddingService {
 public:
  using EmbedCallback = std::function<void(absl::StatusOr<EmbedResult>)>;
  using TokenizeCallback = std::function<void(absl::StatusOr<std::vector<std::vector<TokenInfo>>>)>;

  // Starts the tokenizer pool and the Batcher. The scheduler's max_input_tokens is
  // capped at the backend's max_positions, and max_batch_tokens must hold one
  // input of that many tokens (options.short_budget; src/service/input_limit.h).
  // Errors: InvalidArgument for bad options (those of Batcher::Create), a budget
  // below the input limit under ShortBudget::kRefuse, or a missing tokenizer or
  // backend.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EmbeddingService>> Create(
      ServiceOptions options, std::unique_ptr<tokenizer::Tokenizer> tokenizer,
      std::unique_ptr<backend::Encoder> backend);
  ~EmbeddingService();

  // Embeds `request` asynchronously; `done` is called exactly once. The returned
  // function cancels whatever of the request is not done yet (for a client that
  // disconnected): queued inputs are removed, not computed. Errors passed to
  // `done`: InvalidArgument (invalid UTF-8, an empty input, an id out of range,
  // bad dimensions, a pair for an embedding backend), Oversize (also, with
  // only_second pair truncation, a pair whose query leaves no room for its document), QueueFull, ShuttingDown, Cancelled, Backend,
  // OutOfMemory, DeadlineExceeded (request.deadline passed); messages start with "input[i]: " when one input is the
  // cause.
  std::function<void()> Embed(EmbedRequest request, EmbedCallback done);

  // Tokenises `texts` on the pool; `done` is called exactly once.
  void Tokenize(std::vector<std::string> texts, bool add_special_tokens, TokenizeCallback done);

  // Turns each list of token ids back into text on the pool (Tokenizer::Decode);
  // `done` is called exactly once, with one string per list or the first error:
  // InvalidArgument "ids[i]: id N at position K is not in the vocabulary ...",
  // ShuttingDown.
  using DecodeCallback = std::function<void(absl::StatusOr<std::vector<std::string>>)>;
  void Decode(std::vector<std::vector<std::uint32_t>> ids, bool skip_special_tokens, DecodeCallback done);

  // Hand-off batching for I/O threads. While a DeferWakeups object lives on a
  // thread, Embed, Tokenize and Decode called on that thread queue their work without
  // waking a tokenizer thread; the caller must call WakeTokenizers() after it is
  // destroyed (an I/O thread does so once per burst of requests, so a burst
  // costs one wake-up). Not copyable; nests.
  class DeferWakeups {
   public:
    DeferWakeups();
    ~DeferWakeups();
    DeferWakeups(const DeferWakeups&) = delete;
    DeferWakeups& operator=(const DeferWakeups&) = delete;
  };
  // Wakes a tokenizer thread if queued work needs one. Thread-safe, never blocks.
  void WakeTokenizers();

  // Stops accepting, drains or fails the queue per `mode`, waits for the tokenizer
  // pool and the workers. Blocks. Idempotent.
  void Shutdown(ShutdownMode mode);

  [[nodiscard]] MetricsSnapshot metrics() const;
  [[nodiscard]] std::int64_t max_input_tokens() const;
  [[nodiscard]] const ServiceOptions& options() const;
  [[nodiscard]] const backend::Encoder& backend() const;

 private:
  struct Impl;
  explicit EmbeddingService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenbatch::server
