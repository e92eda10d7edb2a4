// TorchEncoder: a TorchScript text-embedding model run through libtorch.
//
// The scheduler's runtime hands a backend a batch of requests and expects one
// result per request, in order:
//
//   absl::StatusOr<std::vector<Embedding>> Embed(std::span<const EmbeddingInput>)
//
// Embed builds one right-padded batch from the requests (int64 input_ids and
// attention_mask of shape [B, Lmax], B = number of requests, Lmax = longest request
// in tokens; padding uses `pad_token_id` and mask 0), runs the module's forward
// under inference mode, and pools each request's rows of the last hidden state
// [B, Lmax, H] into one vector of H floats:
//   cls   row 0 (BERT-style encoders),
//   mean  the mean of the request's real rows (mask-aware, padding excluded),
//   last  the request's last real row (decoder embedding models, e.g. Qwen3-Embedding).
// Then, per request, it keeps the first `dimensions` values (Matryoshka
// truncation) and, if asked, L2-normalises what it kept — truncate first, then
// normalise, as sentence-transformers and OpenAI's `dimensions` do, so that a
// truncated embedding is still unit length.
//
// The module's forward must accept (input_ids, attention_mask) or
// (input_ids, attention_mask, token_type_ids) and return the last hidden state as a
// float tensor [B, L, H], or a dict holding it (key `output_name`, default
// "last_hidden_state") or a tuple/list holding it (index `output_index`, default 0).
// Load runs a probe batch [2, 3] and refuses a model whose output has another shape.
//
// libtorch stays out of this header (pimpl), so including it costs nothing.
//
// Errors (all as values; no exception escapes any function here):
//   InvalidArgumentError  bad options, an empty request, an id < 0 or >= vocab_size,
//                         a request longer than max_positions, token_type_ids of the
//                         wrong length, dimensions outside [0, H].
//   OutOfMemoryError      an allocation failed during the forward
//                         (c10::OutOfMemoryError, std::bad_alloc, or a message with
//                         "out of memory" / "not enough memory" /
//                         "DefaultCPUAllocator: can't allocate"); the runtime may
//                         bisect the batch and retry.
//   BackendError          any other exception, with its message.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder_info.h"

namespace tokenbatch::backend {

// Options for TorchEncoder::Load. Each field's default is the one given here.
struct EncoderOptions {
  // TorchScript file written by torch.jit.save. Required.
  std::string model_path;
  // "cpu", or "cuda" / "cuda:N" when libtorch was built with CUDA (else Load fails).
  std::string device = "cpu";
  Pooling pooling = Pooling::kCls;
  // L2-normalise embeddings; a request may override it (EmbeddingInput::normalize).
  bool normalize = false;
  // For a module returning a dict: the key of the last hidden state.
  std::string output_name = "last_hidden_state";
  // For a module returning a tuple or list: the index of the last hidden state.
  int output_index = 0;
  // Token id written into padding positions (the tokenizer's pad id). Masked out,
  // so any valid id works, but it must be < vocab_size.
  int64_t pad_token_id = 0;
  // CPU threads per forward: libtorch's intra-op threads (at::set_num_threads,
  // applied on each calling thread since OpenMP keeps the count per thread) and,
  // when the BLAS is OpenBLAS, its thread count (openblas_set_num_threads, which
  // is process-wide: the last Load that sets it wins); beside OpenBLAS's pool,
  // libtorch's own operators get one thread and OpenBLAS all of them
  // (OperatorThreads, src/backend/torch_guard.h, says why). 0 leaves both
  // defaults (all cores; beside OpenBLAS that is the case OperatorThreads
  // avoids, unless BatcherOptions::set_forward_threads sets each forward's). Oversubscription is costly: on a shared machine a forward waits
  // for descheduled threads (docs/benchmarks.md, "Threads per forward").
  int num_threads = 0;
  // Longest request accepted, in tokens (the model's position table). 0 = unchecked.
  int64_t max_positions = 0;
  // Number of rows of the embedding table; ids must be < vocab_size. 0 = unchecked
  // here (the module then fails on a bad id with a BackendError).
  int64_t vocab_size = 0;
};

// One request: its token ids and how its embedding should be post-processed.
struct EmbeddingInput {
  std::vector<int32_t> input_ids;       // 1..max_positions ids, each in [0, vocab_size)
  std::vector<int32_t> token_type_ids;  // empty (all zero) or the same length as input_ids
  std::optional<bool> normalize;        // unset: EncoderOptions::normalize
  int dimensions = 0;                   // keep the first `dimensions` values; 0 = all H
  // Leading tokens that a prompt contributed (sentence-transformers' prompt_length:
  // the prompt's tokens with the leading special token). A model whose pooling says
  // include_prompt = false leaves them out of mean pooling; otherwise unused.
  int prompt_tokens = 0;
  // How many leading and trailing ids are the special tokens the tokenizer's
  // template added ([CLS] ... [SEP]; 0 for token-id inputs, used as given). The
  // windows of a truncated or split input restore them (service/input_tokens.h);
  // encoders do not read them.
  int special_prefix = 0;
  int special_suffix = 0;
};

// One result: `values` holds `dimensions` (or H) floats; for a sparse model
// (EncoderInfo::sparse) the weights of the vocabulary ids in `indices`.
struct Embedding {
  std::vector<float> values;
  std::vector<int32_t> indices;  // a sparse model's ids, ascending, one per value; else empty
};

// What calibrate, bench and serve run: a model that embeds one batch of
// requests. Implemented by TorchEncoder (TorchScript files), hf::HfEncoder
// (Hugging Face model directories) and the noop encoder (noop_encoder.h: no
// model, for tests and load tests); the members have TorchEncoder's contracts.
// Embed may be called from several threads at once; the rest never blocks.
class Encoder {
 public:
  virtual ~Encoder() = default;
  // One Embedding per input, in order (see TorchEncoder::Embed): each holds
  // `dimensions` (or all hidden_size()) floats, L2-normalised when the input's
  // normalize (or info().default_normalize) says so; a classifier's raw logits,
  // one per label. Blocks for the forward pass. Errors: InvalidArgument,
  // OutOfMemory, Backend (see the header comment).
  [[nodiscard]] virtual absl::StatusOr<std::vector<Embedding>> Embed(
      std::span<const EmbeddingInput> inputs) const = 0;
  // The width of a full embedding, in floats.
  [[nodiscard]] virtual int hidden_size() const = 0;
  // The model's limits and description (EncoderInfo), fixed after Load.
  [[nodiscard]] virtual EncoderInfo info() const = 0;
  // Whether the model runs on a CUDA device; false unless overridden.
  [[nodiscard]] virtual bool on_cuda() const { return false; }
  // Peak-memory accounting for calibration (see TorchEncoder::ResetPeakMemory).
  // An encoder without memory to measure keeps these: UnimplementedError.
  [[nodiscard]] virtual absl::Status ResetPeakMemory() const {
    return absl::UnimplementedError("this encoder does not measure its memory");
  }
  [[nodiscard]] virtual absl::StatusOr<int64_t> PeakMemoryBytes() const {
    return absl::UnimplementedError("this encoder does not measure its memory");
  }
};

// Sets the CPU threads of the calling thread's next forwards: libtorch's
// intra-op threads for this thread (OpenMP keeps the count per thread) and,
// when the BLAS is OpenBLAS, its thread count, which is process-wide (libtorch's
// own operators then stay on one thread, as EncoderOptions::num_threads says): forwards
// running at once must share one count (BatcherOptions::intra_op hands out 1
// thread each, or every core to a forward running alone). What
// BatcherOptions::set_forward_threads calls for libtorch encoders; an encoder
// loaded with num_threads > 0 applies its own count at each Embed instead, so
// load it with 0. threads >= 1. Never blocks.
void SetForwardThreads(int threads);

class TorchEncoder final : public Encoder {
 public:
  // Loads the module onto the device, puts it in eval mode, and validates it with a
  // probe batch of shape [2, 3] (output must be float [2, 3, H], H > 0).
  // Blocks for the load (about a second for a 90 MB model), which runs on a thread
  // of its own, joined before it returns (RunOnOwnThread in
  // src/backend/torch_guard.h: why a load must not leave an OpenMP team behind).
  // Thread-safe.
  // Errors: InvalidArgumentError (options, missing file, bad output shape,
  // unavailable device), BackendError (the file is not a loadable module or the
  // probe forward throws), OutOfMemoryError (the probe cannot allocate).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TorchEncoder>> Load(
      const EncoderOptions& options);

  ~TorchEncoder();
  TorchEncoder(const TorchEncoder&) = delete;
  TorchEncoder& operator=(const TorchEncoder&) = delete;

  // Embeds `inputs` as one padded batch; returns one Embedding per input, in order.
  // An empty span returns an empty vector. Blocks for the forward pass
  // (milliseconds to seconds, growing with B·Lmax and B·Lmax²).
  //
  // Thread-safety: safe to call from several threads at once, each with its own
  // batch. It relies on (1) the module's parameters never being written after Load
  // (inference mode, eval mode, no training), and (2) TorchScript's graph executor
  // being safe for concurrent runs of one method (it locks while it compiles a
  // plan and keeps no per-run state in the module). Concurrent calls share the
  // process-wide intra-op thread pool, so N callers on a C-core CPU want
  // num_threads about C / N.
  //
  // Errors: see the header comment; a failed batch returns one status for the whole
  // batch (no partial results).
  [[nodiscard]] absl::StatusOr<std::vector<Embedding>> Embed(
      std::span<const EmbeddingInput> inputs) const override;

  // H: the width of the last hidden state, found by the load probe.
  [[nodiscard]] int hidden_size() const override;
  // name "torch"; pooling, default_normalize, vocab_size and max_positions as
  // the options say.
  [[nodiscard]] EncoderInfo info() const override;
  [[nodiscard]] const EncoderOptions& options() const;
  // True when the module runs on a CUDA device.
  [[nodiscard]] bool on_cuda() const override;

  // Peak-memory accounting for calibration. ResetPeakMemory marks the start of a
  // measurement; PeakMemoryBytes returns the peak since then, in bytes, above the
  // level at the reset.
  //   cpu:  process-wide resident memory. Reset trims the malloc heap
  //         (malloc_trim), records VmRSS, and resets the high-water mark by writing
  //         "5" to /proc/self/clear_refs (Linux >= 4.0); the peak is VmHWM minus
  //         that VmRSS. Anything else the process does meanwhile counts too, so
  //         measure with nothing else running.
  //   cuda: the caching allocator's peak allocated bytes on the device minus the
  //         allocated bytes at the reset. Compiled only against a CUDA libtorch;
  //         untested (no GPU on the development machine).
  // Not thread-safe with each other or with Embed on other threads. Errors:
  // BackendError if /proc cannot be read or written.
  [[nodiscard]] absl::Status ResetPeakMemory() const override;
  [[nodiscard]] absl::StatusOr<int64_t> PeakMemoryBytes() const override;

 private:
  struct Impl;
  explicit TorchEncoder(std::unique_ptr<Impl> impl);
  // Load's work, on the calling thread.
  static absl::StatusOr<std::unique_ptr<TorchEncoder>> LoadOnThisThread(const EncoderOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenbatch::backend
