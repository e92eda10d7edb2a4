// EmbeddingService: tokenise on a pool, one Batcher request per input, gather.
#include "tokenbatch/server/embedding_service.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/batcher.h"
#include "tokenbatch/runtime/mutex.h"
#include "server/input_tokens.h"
#include "server/work_queue.h"

namespace tokenbatch::server {
namespace {

// What one Batcher request carries: the backend input and when it was queued
// (for the queue-time header).
struct Item {
  backend::EmbeddingInput input;
  TimePoint queued{};
  SpecialEnds specials;  // restored in every truncate / split window
};
struct ItemOut {
  std::vector<float> values;
  double queue_us = 0;
  double inference_us = 0;
};
using ServiceBatcher = Batcher<Item, ItemOut>;

double MicrosBetween(TimePoint a, TimePoint b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Code points in valid UTF-8 (the API checked it): every byte but the
// continuation bytes 10xxxxxx starts one.
std::int64_t CountCodePoints(std::string_view text) {
  std::int64_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The same status (code and kind payload) with `prefix` before its message.
absl::Status Prefixed(const absl::Status& status, std::string_view prefix) {
  absl::Status out(status.code(), absl::StrCat(ToAbsl(prefix), status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Weighted mean of a split input's window embeddings (weights: window tokens).
// The backend normalised each part when asked, so the mean is normalised again
// when every part is unit length.
absl::StatusOr<ItemOut> MergeWindows(std::span<const ItemOut> parts, std::span<const TokenWindow> windows) {
  if (parts.empty()) return BackendError("split request produced no windows");
  ItemOut out;
  out.values.assign(parts[0].values.size(), 0.0f);
  double total = 0;
  bool all_unit = true;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (parts[k].values.size() != out.values.size()) return BackendError("window embeddings differ in width");
    const double w = static_cast<double>(windows[k].size());
    total += w;
    double norm2 = 0;
    for (std::size_t j = 0; j < out.values.size(); ++j) {
      out.values[j] += static_cast<float>(w * parts[k].values[j]);
      norm2 += double(parts[k].values[j]) * parts[k].values[j];
    }
    all_unit = all_unit && std::abs(norm2 - 1.0) < 1e-3;
    out.queue_us = std::max(out.queue_us, parts[k].queue_us);
    out.inference_us += parts[k].inference_us;
  }
  double norm2 = 0;
  for (float& x : out.values) {
    x = static_cast<float>(x / total);
    norm2 += double(x) * x;
  }
  if (all_unit && norm2 > 0) {
    for (float& x : out.values) x = static_cast<float>(x / std::sqrt(norm2));
  }
  return out;
}

// One client request in flight: its inputs' results and who to tell. Shared by
// the tokenizer thread that submits its inputs, the Batcher threads that resolve
// them and the I/O thread of a client that disconnects.
struct Pending {
  explicit Pending(std::size_t inputs) : outs(inputs), remaining(inputs + 1) {}  // + the submitter's hold

  Mutex mu;
  std::vector<ItemOut> outs ABSL_GUARDED_BY(mu);
  std::vector<RequestId> ids ABSL_GUARDED_BY(mu);  // submitted so far
  absl::Status error ABSL_GUARDED_BY(mu);          // the first failure
  std::atomic<std::size_t> remaining;
  // Set by Embed before the request is posted; called by Answer.
  EmbeddingService::EmbedCallback done;
  // Counts and times written by RunEmbed before it releases its hold, then read
  // (and the embeddings added) by Answer: `remaining` orders the two.
  EmbedResult result;
  ServiceBatcher* batcher = nullptr;

  // Counts `k` inputs as resolved; true for the call that counted the last one,
  // which must then call Answer (once).
  bool CountDown(std::size_t k) { return remaining.fetch_sub(k) == k; }
  // Counts `k` inputs as resolved; the last one answers on this thread.
  void Release(std::size_t k) {
    if (CountDown(k)) Answer();
  }
  // Calls `done` with the first failure, or with every input's embedding.
  void Answer() {
    absl::Status failure;
    std::vector<ItemOut> resolved;
    {
      // A client's disconnect can still call Fail (from an I/O thread) now.
      MutexLock lock(&mu);
      failure = error;
      resolved.swap(outs);
    }
    if (!failure.ok()) {
      done(std::move(failure));
      return;
    }
    for (ItemOut& o : resolved) {
      result.queue_us = std::max(result.queue_us, o.queue_us);
      result.inference_us = std::max(result.inference_us, o.inference_us);
      result.embeddings.push_back(std::move(o.values));
    }
    done(std::move(result));
  }
  // Records `status` as the request's failure (if first) and cancels the rest.
  void Fail(absl::Status status) ABSL_LOCKS_EXCLUDED(mu) {
    std::vector<RequestId> to_cancel;
    {
      MutexLock lock(&mu);
      if (!error.ok()) return;
      error = std::move(status);
      to_cancel = ids;
    }
    for (RequestId id : to_cancel) batcher->Cancel(id);  // may call back here: lock released
  }
};

}  // namespace

struct EmbeddingService::Impl {
  ServiceOptions options;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<EmbeddingBackend> backend;
  std::optional<ClassifierInfo> classifier;  // backend->info().classifier, read once
  std::unique_ptr<ServiceBatcher> batcher;
  std::int64_t max_input_tokens = 0;
  // The tokenizer threads; refuses posts once Shutdown began.
  std::unique_ptr<WorkQueue> pool;
  std::once_flag shutdown_once;

  bool Post(WorkQueue::Task task) { return pool->Post(std::move(task), /*wake=*/defer_depth == 0); }
  // > 0 while a DeferWakeups lives on this thread.
  static thread_local int defer_depth;

  void RunEmbed(const std::shared_ptr<Pending>& p, EmbedRequest& request);

  // The prompt a request gets, and how many leading tokens it becomes:
  // sentence-transformers' prompt_length, the prompt tokenised alone less its
  // trailing special tokens (so the leading [CLS] counts); 0 for no prompt.
  struct Prompt {
    std::string text;
    std::int64_t tokens = 0;
  };
  absl::StatusOr<Prompt> ResolvePrompt(const EmbedRequest& request) const;
  // Input i of `request`, a (query, document) pair, for a classifier backend.
  absl::StatusOr<InputTokens> TokenizePair(const EmbedRequest& request, std::size_t i) const;
};

absl::StatusOr<InputTokens> EmbeddingService::Impl::TokenizePair(const EmbedRequest& request, std::size_t i) const {
  if (!classifier.has_value()) {
    return InvalidArgumentError("a (query, document) pair needs a cross-encoder model; this one embeds");
  }
  // The document is cut unless the request says not to, whatever
  // auto_truncate says: a cross-encoder cuts every pair to the model's limit by
  // default. (sentence-transformers' CrossEncoder cuts "longest_first", which
  // agrees with this only_second cut while the query is at most half the room.)
  return PairToTokens(*tokenizer, request.inputs[i],
                      PairTokenLimits{.vocab_size = backend->vocab_size(),
                                      .max_input_tokens = max_input_tokens,
                                      .truncate = request.truncate.value_or(true),
                                      .direction = request.truncation_direction,
                                      .token_types = classifier->token_types});
}

absl::StatusOr<EmbeddingService::Impl::Prompt> EmbeddingService::Impl::ResolvePrompt(
    const EmbedRequest& request) const {
  Prompt prompt{.text = options.default_prompt};
  if (request.prompt_name.has_value() && !request.prompt_name->empty()) {
    auto it = options.prompts.find(*request.prompt_name);
    if (it == options.prompts.end()) {
      std::vector<std::string> names;
      for (const auto& [name, text] : options.prompts) names.push_back(name);
      return InvalidArgumentError(absl::StrCat("prompt_name \"", *request.prompt_name, "\" is not one of the model's ",
                                               "prompts (", names.empty() ? "it has none" : absl::StrJoin(names, ", "),
                                               ")"));
    }
    prompt.text = it->second;
  }
  if (prompt.text.empty()) return prompt;
  EmbedInput alone;
  alone.text = prompt.text;
  absl::StatusOr<InputTokens> ids = InputToTokens(*tokenizer, alone, InputTokenLimits{});
  if (!ids.ok()) return Prefixed(ids.status(), "prompt: ");
  prompt.tokens = static_cast<std::int64_t>(ids->ids.size()) - ids->specials.suffix;
  return prompt;
}

void EmbeddingService::Impl::RunEmbed(const std::shared_ptr<Pending>& p, EmbedRequest& request) {
  const std::size_t n = request.inputs.size();
  const TimePoint t0 = SteadyClock::now();
  const int hidden = backend->hidden_size();
  if (request.dimensions < 0 || request.dimensions > hidden) {
    p->done(InvalidArgumentError(
        absl::StrCat("dimensions ", request.dimensions, " outside [1, ", hidden, "] (the model's width)")));
    return;
  }
  InputTokenLimits limits{.vocab_size = backend->vocab_size(),
                          .truncate_to = request.truncate.value_or(options.auto_truncate) ? max_input_tokens : 0,
                          .direction = request.truncation_direction};
  absl::StatusOr<Prompt> prompt = ResolvePrompt(request);
  if (!prompt.ok()) {
    p->done(prompt.status());
    return;
  }
  std::vector<Item> items(n);
  for (std::size_t i = 0; i < n; ++i) {
    // TEI counts a text's characters and a token-id input's ids.
    p->result.characters += request.inputs[i].is_ids ? static_cast<std::int64_t>(request.inputs[i].ids.size())
                                                     : CountCodePoints(request.inputs[i].text) +
                                                           CountCodePoints(request.inputs[i].text_pair.value_or(""));
    // A cross-encoder takes its texts as sent: prompts are an embedding model's.
    if (!prompt->text.empty() && !request.inputs[i].is_ids && !classifier.has_value()) {
      request.inputs[i].text.insert(0, prompt->text);
    } else if (request.prompt_name.has_value() && !request.prompt_name->empty() && request.inputs[i].is_ids) {
      p->done(InvalidArgumentError(absl::StrCat("input[", i, "]: prompt_name applies to text inputs, not token ids")));
      return;
    }
    absl::StatusOr<InputTokens> ids = request.inputs[i].text_pair.has_value()
                                          ? TokenizePair(request, i)
                                          : InputToTokens(*tokenizer, request.inputs[i], limits);
    if (!ids.ok()) {
      p->done(Prefixed(ids.status(), absl::StrCat("input[", i, "]: ")));
      return;
    }
    p->result.tokens += static_cast<std::int64_t>(ids->ids.size());
    items[i].input.input_ids = std::move(ids->ids);
    items[i].input.token_type_ids = std::move(ids->token_type_ids);
    items[i].specials = ids->specials;
    items[i].input.normalize = request.normalize;
    items[i].input.dimensions = request.dimensions;
    if (!request.inputs[i].is_ids && prompt->tokens > 0 && !classifier.has_value()) {
      const auto kept = static_cast<std::int64_t>(items[i].input.input_ids.size());
      std::int64_t prompt_tokens = prompt->tokens;
      // A left truncation cuts the prompt's tokens first (after the leading
      // special tokens): what pooling leaves out shrinks by what was cut.
      if (limits.truncate_to > 0 && limits.direction == TruncationDirection::kLeft) {
        absl::StatusOr<std::size_t> whole = tokenizer->Count(request.inputs[i].text);
        const std::int64_t cut = whole.ok() ? static_cast<std::int64_t>(*whole) - kept : 0;
        prompt_tokens = std::max<std::int64_t>(ids->specials.prefix, prompt_tokens - cut);
      }
      items[i].input.prompt_tokens = static_cast<int>(std::min<std::int64_t>(prompt_tokens, kept - 1));
    }
  }
  p->result.tokenize_us = MicrosBetween(t0, SteadyClock::now());

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
    const auto tokens = static_cast<std::int64_t>(items[i].input.input_ids.size());
    items[i].queued = SteadyClock::now();
    absl::StatusOr<RequestId> id =
        batcher->Submit(std::move(items[i]), tokens, submit, [this, p, i](absl::StatusOr<ItemOut> r) {
          if (r.ok()) {
            MutexLock lock(&p->mu);
            p->outs[i] = *std::move(r);
          } else {
            p->Fail(Prefixed(r.status(), absl::StrCat("input[", i, "]: ")));
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
        });
    if (!id.ok()) {
      refused = Prefixed(id.status(), absl::StrCat("input[", i, "]: "));
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
    std::unique_ptr<EmbeddingBackend> backend) {
  if (tokenizer == nullptr) return InvalidArgumentError("EmbeddingService needs a tokenizer");
  if (backend == nullptr) return InvalidArgumentError("EmbeddingService needs a backend");
  if (options.tokenizer_threads < 1) {
    return InvalidArgumentError(absl::StrCat("tokenizer_threads must be >= 1, got ", options.tokenizer_threads));
  }
  SchedulerOptions& sched = options.batcher.scheduler;
  if (const std::optional<ClassifierInfo> classifier = backend->info().classifier) {
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
  const std::int64_t positions = backend->max_positions();
  if (positions > 0) {
    const std::int64_t derived = EffectiveMaxInputTokens(sched);
    if (sched.max_input_tokens == 0 || sched.max_input_tokens > positions) {
      sched.max_input_tokens = std::min(derived, positions);
    }
  }
  auto impl = std::make_unique<Impl>();
  const EmbeddingBackend* raw = backend.get();
  absl::StatusOr<std::unique_ptr<ServiceBatcher>> batcher = ServiceBatcher::Create(
      options.batcher,
      [raw](std::span<const Item> items) -> absl::StatusOr<std::vector<ItemOut>> {
        const TimePoint start = SteadyClock::now();
        std::vector<backend::EmbeddingInput> inputs;
        inputs.reserve(items.size());
        for (const Item& it : items) inputs.push_back(it.input);
        absl::StatusOr<std::vector<backend::Embedding>> embedded = raw->Embed(inputs);
        if (!embedded.ok()) return embedded.status();
        const TimePoint end = SteadyClock::now();
        std::vector<ItemOut> out(items.size());
        for (std::size_t i = 0; i < items.size(); ++i) {
          out[i].values = std::move((*embedded)[i].values);
          out[i].queue_us = MicrosBetween(items[i].queued, start);
          out[i].inference_us = MicrosBetween(start, end);
        }
        return out;
      },
      ServiceBatcher::Hooks{
          .slice = [](const Item& in, TokenWindow w) -> absl::StatusOr<Item> {
            Item out;
            // Only single texts get here, never a pair (PairToTokens cuts or
            // refuses it), so there are no token types to window; a classifier's
            // single texts are never split (Create refuses split for one).
            out.input.input_ids = WindowIds(in.input.input_ids, w, in.specials);
            out.input.normalize = in.input.normalize;
            out.input.dimensions = in.input.dimensions;
            // The prompt lies in the first window only.
            if (w.begin == 0) {
              out.input.prompt_tokens = std::min(in.input.prompt_tokens, static_cast<int>(w.end - w.begin) - 1);
            }
            out.queued = in.queued;
            out.specials = in.specials;
            return out;
          },
          .merge = MergeWindows});
  if (!batcher.ok()) return batcher.status();
  impl->max_input_tokens = EffectiveMaxInputTokens(options.batcher.scheduler);
  impl->batcher = *std::move(batcher);
  impl->pool = std::make_unique<WorkQueue>(options.tokenizer_threads);
  impl->options = std::move(options);
  impl->tokenizer = std::move(tokenizer);
  impl->classifier = backend->info().classifier;
  impl->backend = std::move(backend);
  return std::unique_ptr<EmbeddingService>(new EmbeddingService(std::move(impl)));
}

std::function<void()> EmbeddingService::Embed(EmbedRequest request, EmbedCallback done) {
  auto p = std::make_shared<Pending>(request.inputs.size());  // RunEmbed holds it until it has submitted all
  p->done = std::move(done);
  p->batcher = impl_->batcher.get();
  Impl* impl = impl_.get();
  const bool posted = impl->Post([impl, p, req = std::move(request)]() mutable { impl->RunEmbed(p, req); });
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
const EmbeddingBackend& EmbeddingService::backend() const { return *impl_->backend; }

}  // namespace tokenbatch::server
