// EmbeddingService: the wiring of the tokenizer pool, input preparation, the
// Batcher and the fan-in of each request's inputs.
#include "tokenbatch/service/embedding_service.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "service/batcher_adapter.h"
#include "service/input_limit.h"
#include "service/input_preparation.h"
#include "service/pending.h"
#include "service/work_queue.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/batcher.h"

namespace tokenbatch::server {

struct EmbeddingService::Impl {
  ServiceOptions options;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<backend::Encoder> backend;
  InputPreparation preparation;  // from the options and backend->info(), once
  std::unique_ptr<ServiceBatcher> batcher;
  std::int64_t max_input_tokens = 0;
  // The tokenizer threads; refuses posts once Shutdown began.
  std::unique_ptr<WorkQueue> pool;
  std::once_flag shutdown_once;

  bool Post(WorkQueue::Task task) { return pool->Post(std::move(task), /*wake=*/defer_depth == 0); }
  // > 0 while a DeferWakeups lives on this thread.
  static thread_local int defer_depth;

  // Prepares `request`'s inputs and submits them; answers through `p`.
  void RunEmbed(const std::shared_ptr<Pending>& p, const EmbedRequest& request);
  // Input i's Batcher callback: records its result, and answers when it was
  // the request's last.
  void Resolved(const std::shared_ptr<Pending>& p, std::size_t i, absl::StatusOr<ItemOut> r);
};

void EmbeddingService::Impl::Resolved(const std::shared_ptr<Pending>& p, std::size_t i, absl::StatusOr<ItemOut> r) {
  if (r.ok()) {
    MutexLock lock(&p->mu);
    p->outs[i] = *std::move(r);
  } else {
    p->Fail(WithMessagePrefix(r.status(), absl::StrCat("input[", i, "]: ")));
  }
  if (!p->CountDown(1)) return;
  // The answer (the caller formats its reply there) goes to a tokenizer
  // thread when the worker's next batch would wait for it; inline when the
  // worker has nothing else to do (a hand-off costs a thread wake-up), or
  // when the pool has stopped (shutdown drains the Batcher after it) or
  // cannot take it. Queued behind the tokenisation already waiting, not
  // ahead of it: ahead measured slower (docs/benchmarks.md).
  bool posted = false;
  if (CallbackDelaysNextBatch()) {
    try {
      posted = pool->Post([p] { p->Answer(); });
    } catch (...) {
    }
  }
  if (!posted) p->Answer();
}

void EmbeddingService::Impl::RunEmbed(const std::shared_ptr<Pending>& p, const EmbedRequest& request) {
  const std::size_t n = request.inputs.size();
  const TimePoint t0 = SteadyClock::now();
  absl::StatusOr<PreparedInputs> prepared = PrepareInputs(*tokenizer, preparation, request);
  if (!prepared.ok()) {
    p->done(prepared.status());
    return;
  }
  p->result.tokens = prepared->tokens;
  p->result.characters = prepared->characters;
  p->result.tokenize_us = std::chrono::duration<double, std::micro>(SteadyClock::now() - t0).count();

  if (request.deadline.has_value() && SteadyClock::now() >= *request.deadline) {
    p->done(DeadlineExceededError("the request's deadline passed before its inputs were queued"));
    return;
  }
  const SubmitOptions submit{.priority = request.priority, .deadline = request.deadline};
  std::size_t submitted = 0;
  absl::Status refused;
  for (std::size_t i = 0; i < n; ++i) {
    MutexLock lock(&p->mu);
    if (!p->error.ok()) break;  // cancelled or an earlier input failed
    backend::EmbeddingInput& input = prepared->inputs[i];
    const auto tokens = static_cast<std::int64_t>(input.input_ids.size());
    p->queued[i] = SteadyClock::now();
    absl::StatusOr<RequestId> id = batcher->Submit(
        std::move(input), tokens, submit, [this, p, i](absl::StatusOr<ItemOut> r) { Resolved(p, i, std::move(r)); });
    if (!id.ok()) {
      refused = WithMessagePrefix(id.status(), absl::StrCat("input[", i, "]: "));
      break;
    }
    p->ids.push_back(*id);
    ++submitted;
  }
  if (!refused.ok()) p->Fail(std::move(refused));
  p->Release(n - submitted + 1);  // the unsubmitted inputs and this function's hold
}

thread_local int EmbeddingService::Impl::defer_depth = 0;

EmbeddingService::DeferWakeups::DeferWakeups() { ++Impl::defer_depth; }
EmbeddingService::DeferWakeups::~DeferWakeups() { --Impl::defer_depth; }
void EmbeddingService::WakeTokenizers() { impl_->pool->Wake(); }

EmbeddingService::EmbeddingService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EmbeddingService::~EmbeddingService() { Shutdown(impl_->options.batcher.shutdown_on_destroy); }

absl::StatusOr<std::unique_ptr<EmbeddingService>> EmbeddingService::Create(
    ServiceOptions options, std::unique_ptr<tokenizer::Tokenizer> tokenizer,
    std::unique_ptr<backend::Encoder> backend) {
  if (tokenizer == nullptr) return InvalidArgumentError("EmbeddingService needs a tokenizer");
  if (backend == nullptr) return InvalidArgumentError("EmbeddingService needs a backend");
  if (options.tokenizer_threads < 1) {
    return InvalidArgumentError(absl::StrCat("tokenizer_threads must be >= 1, got ", options.tokenizer_threads));
  }
  SchedulerOptions& sched = options.batcher.scheduler;
  const backend::EncoderInfo info = backend->info();
  if (info.classifier) {
    // A score is not an average over windows of a text.
    if (sched.oversize == OversizePolicy::kSplit) {
      return InvalidArgumentError(
          "a cross-encoder's scores cannot be averaged over windows: use oversize truncate "
          "or reject, not split");
    }
    // A tokenizer that cannot encode pairs is a model-file problem: refuse it at
    // start, not on every rerank.
    if (absl::StatusOr<tokenizer::Encoding> probe = tokenizer->EncodePair("a", "b"); !probe.ok()) {
      const absl::string_view m = probe.status().message();
      return InvalidArgumentError(absl::StrCat("the cross-encoder's tokenizer: ", m));
    }
  }
  // Per-id weights max-pooled over a text are not the mean of its windows' weights.
  if (info.sparse && sched.oversize == OversizePolicy::kSplit) {
    return InvalidArgumentError(
        "sparse embeddings cannot be merged over windows: use oversize truncate or reject, not split");
  }
  absl::StatusOr<bool> raised = ResolveInputLimit(sched, info.max_positions, options.short_budget);
  if (!raised.ok()) return raised.status();
  auto impl = std::make_unique<Impl>();
  absl::StatusOr<std::unique_ptr<ServiceBatcher>> batcher =
      ServiceBatcher::Create(options.batcher, EncoderBatchFunction(backend.get()), WindowHooks());
  if (!batcher.ok()) return batcher.status();
  impl->max_input_tokens = EffectiveMaxInputTokens(options.batcher.scheduler);
  impl->batcher = *std::move(batcher);
  impl->pool = std::make_unique<WorkQueue>(options.tokenizer_threads);
  impl->options = std::move(options);
  impl->tokenizer = std::move(tokenizer);
  impl->preparation = InputPreparation{.vocab_size = info.vocab_size,
                                       .max_input_tokens = impl->max_input_tokens,
                                       .hidden_size = backend->hidden_size(),
                                       .auto_truncate = impl->options.auto_truncate,
                                       .truncation_direction = impl->options.truncation_direction,
                                       .pair_truncation = impl->options.pair_truncation,
                                       .prompts = impl->options.prompts,
                                       .default_prompt = impl->options.default_prompt};
  if (info.classifier) impl->preparation.cross_encoder_token_types = info.classifier->token_types;
  impl->preparation.sparse = info.sparse;
  CountPromptTokens(*impl->tokenizer, impl->preparation);
  impl->backend = std::move(backend);
  return std::unique_ptr<EmbeddingService>(new EmbeddingService(std::move(impl)));
}

std::function<void()> EmbeddingService::Embed(EmbedRequest request, EmbedCallback done) {
  ServiceBatcher* batcher = impl_->batcher.get();
  // RunEmbed holds it until it has submitted all inputs.
  auto p = std::make_shared<Pending>(request.inputs.size(), std::move(done),
                                     [batcher](RequestId id) { batcher->Cancel(id); });
  Impl* impl = impl_.get();
  const bool posted = impl->Post([impl, p, req = std::move(request)] { impl->RunEmbed(p, req); });
  if (!posted) {
    p->done(ShuttingDownError("the server is shutting down"));
    return [] {};
  }
  return [p] { p->Fail(CancelledError("the client disconnected")); };
}

void EmbeddingService::Tokenize(std::vector<std::string> texts, bool add_special_tokens, TokenizeCallback done) {
  auto shared_done = std::make_shared<TokenizeCallback>(std::move(done));
  const tokenizer::Tokenizer* tok = impl_->tokenizer.get();
  const bool posted = impl_->Post([tok, shared_done, texts = std::move(texts), add_special_tokens] {
    std::vector<std::vector<TokenInfo>> out(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
      absl::StatusOr<tokenizer::Encoding> enc =
          tok->Encode(texts[i], {.add_special_tokens = add_special_tokens, .with_offsets = true});
      if (!enc.ok()) {
        const absl::string_view m = enc.status().message();  // the tokenizer's status has no kind
        (*shared_done)(tokenbatch::InvalidArgumentError(absl::StrCat("input[", i, "]: ", m)));
        return;
      }
      out[i].resize(enc->ids.size());
      for (std::size_t k = 0; k < enc->ids.size(); ++k) {
        const bool special = k < enc->special.size() && enc->special[k] != 0;
        out[i][k] = TokenInfo{.id = enc->ids[k],
                              .special = special,
                              .start = k < enc->offsets.size() ? enc->offsets[k].first : 0,
                              .stop = k < enc->offsets.size() ? enc->offsets[k].second : 0,
                              .token = special ? tok->IdToToken(enc->ids[k]).value_or("") : std::string()};
      }
    }
    (*shared_done)(std::move(out));
  });
  if (!posted) (*shared_done)(ShuttingDownError("the server is shutting down"));
}

void EmbeddingService::Decode(std::vector<std::vector<std::uint32_t>> ids, bool skip_special_tokens,
                              DecodeCallback done) {
  auto shared_done = std::make_shared<DecodeCallback>(std::move(done));
  const tokenizer::Tokenizer* tok = impl_->tokenizer.get();
  const bool posted = impl_->Post([tok, shared_done, ids = std::move(ids), skip_special_tokens] {
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      absl::StatusOr<std::string> text = tok->Decode(ids[i], skip_special_tokens);
      if (!text.ok()) {
        const absl::string_view m = text.status().message();
        (*shared_done)(tokenbatch::InvalidArgumentError(absl::StrCat("ids[", i, "]: ", m)));
        return;
      }
      out.push_back(std::move(*text));
    }
    (*shared_done)(std::move(out));
  });
  if (!posted) (*shared_done)(ShuttingDownError("the server is shutting down"));
}

void EmbeddingService::Shutdown(ShutdownMode mode) {
  std::call_once(impl_->shutdown_once, [&] {
    impl_->pool->Join();  // every request already received is tokenised and submitted
    impl_->batcher->Shutdown(mode);
  });
}

MetricsSnapshot EmbeddingService::metrics() const { return impl_->batcher->metrics(); }
std::int64_t EmbeddingService::max_input_tokens() const { return impl_->max_input_tokens; }
const ServiceOptions& EmbeddingService::options() const { return impl_->options; }
const backend::Encoder& EmbeddingService::backend() const { return *impl_->backend; }

}  // namespace tokenbatch::server
