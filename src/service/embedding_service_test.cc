// EmbeddingService without HTTP: the windows an oversize input is split into
// each reach the backend with the tokenizer's special ends ([CLS] ... [SEP]), and
// the request still gets one embedding; prompts are prepended, counted and told
// to the backend.
#include "tokenbatch/service/embedding_service.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/test_gated_encoder.h"
#include "testing/tokenizer_data.h"
#include "testing/wait_until.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

// Records the ids of every input it is given; returns zero vectors of width 4.
class RecordingBackend : public backend::Encoder {
 public:
  absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    thread_ = std::this_thread::get_id();
    for (const auto& in : inputs) {
      seen_.push_back(in.input_ids);
      prompt_tokens_.push_back(in.prompt_tokens);
    }
    return std::vector<backend::Embedding>(inputs.size(), backend::Embedding{.values = {1, 0, 0, 0}});
  }
  int hidden_size() const override { return 4; }
  backend::EncoderInfo info() const override { return {.name = "recording"}; }
  std::vector<std::vector<std::int32_t>> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  std::vector<int> prompt_tokens() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prompt_tokens_;
  }
  // The thread of the last Embed call (the Batcher's worker).
  std::thread::id thread() const {
    std::lock_guard<std::mutex> lock(mu_);
    return thread_;
  }
  int calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::vector<std::int32_t>> seen_;
  mutable std::vector<int> prompt_tokens_;
  mutable std::thread::id thread_;
  mutable int calls_ = 0;
};

absl::StatusOr<EmbedResult> EmbedNow(EmbeddingService& service, EmbedRequest request) {
  std::promise<absl::StatusOr<EmbedResult>> result;
  service.Embed(std::move(request), [&](absl::StatusOr<EmbedResult> r) { result.set_value(std::move(r)); });
  return result.get_future().get();
}

TEST(EmbeddingServiceSplit, EveryWindowCarriesTheSpecialEnds) {
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::string text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
  auto whole = (*tok)->Encode(text);
  ASSERT_TRUE(whole.ok());
  ASSERT_GT(whole->ids.size(), 12u);  // [CLS] + 14 words + [SEP]: several windows of 6

  ServiceOptions options;
  options.batcher.scheduler.max_input_tokens = 6;
  options.batcher.scheduler.split_overlap_tokens = 2;
  options.batcher.scheduler.oversize = OversizePolicy::kSplit;
  options.batcher.scheduler.max_wait = Duration::zero();
  auto backend = std::make_unique<RecordingBackend>();
  const RecordingBackend* recorder = backend.get();
  auto service = EmbeddingService::Create(options, *std::move(tok), std::move(backend));
  ASSERT_TRUE(service.ok()) << service.status();

  std::promise<absl::StatusOr<EmbedResult>> result;
  (*service)->Embed(EmbedRequest{.inputs = {EmbedInput{.text = text}}},
                    [&](absl::StatusOr<EmbedResult> r) { result.set_value(std::move(r)); });
  const absl::StatusOr<EmbedResult> r = result.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->embeddings.size(), 1u);

  const auto windows = recorder->seen();
  ASSERT_GE(windows.size(), 3u);
  for (const auto& w : windows) {
    ASSERT_LE(w.size(), 6u);  // the last window may be shorter
    ASSERT_GT(w.size(), 2u);
    EXPECT_EQ(w.front(), 101) << "window without [CLS]";
    EXPECT_EQ(w.back(), 102) << "window without [SEP]";
  }
}

// sentence-transformers' encode(prompt_name=...): the prompt text goes in front
// of the input, its tokens count, and prompt_length = the prompt tokenised alone
// less its trailing [SEP] ([CLS] included).
TEST(EmbeddingServicePrompts, PrependedCountedAndToldToTheBackend) {
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto with_query = (*tok)->Encode("query: hello world");
  auto with_passage = (*tok)->Encode("passage: hello world");
  ASSERT_TRUE(with_query.ok() && with_passage.ok());

  ServiceOptions options;
  options.batcher.scheduler.max_wait = Duration::zero();
  options.batcher.scheduler.max_input_tokens = 6;
  options.prompts = {{"query", "query: "}, {"passage", "passage: "}};
  options.default_prompt = "passage: ";
  auto backend = std::make_unique<RecordingBackend>();
  const RecordingBackend* recorder = backend.get();
  auto service = EmbeddingService::Create(options, *std::move(tok), std::move(backend));
  ASSERT_TRUE(service.ok()) << service.status();

  auto named = EmbedNow(**service, EmbedRequest{.inputs = {EmbedInput{.text = "hello world"}}, .prompt_name = "query"});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->tokens, static_cast<std::int64_t>(with_query->ids.size()));
  auto by_default = EmbedNow(**service, EmbedRequest{.inputs = {EmbedInput{.text = "hello world"}}});
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  std::vector<std::vector<std::int32_t>> want = {
      std::vector<std::int32_t>(with_query->ids.begin(), with_query->ids.end()),
      std::vector<std::int32_t>(with_passage->ids.begin(), with_passage->ids.end())};
  EXPECT_EQ(recorder->seen(), want);
  EXPECT_EQ(recorder->prompt_tokens(), (std::vector<int>{3, 3}));  // [CLS] query : / [CLS] passage :

  // Cut from the left to 6 tokens: [CLS] query : hello world again [SEP] loses
  // "query", the prompt's first token, so pooling leaves out [CLS] and ":" only.
  auto cut = EmbedNow(**service, EmbedRequest{.inputs = {EmbedInput{.text = "hello world again"}},
                                              .truncate = true,
                                              .truncation_direction = TruncationDirection::kLeft,
                                              .prompt_name = "query"});
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(recorder->seen().back().size(), 6u);
  EXPECT_EQ(recorder->prompt_tokens().back(), 2);

  auto unknown = EmbedNow(**service, EmbedRequest{.inputs = {EmbedInput{.text = "x"}}, .prompt_name = "doc"});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()), ::testing::HasSubstr("(passage, query)"));
  auto ids = EmbedNow(**service, EmbedRequest{.inputs = {EmbedInput{.is_ids = true, .ids = {101, 7592, 102}}},
                                              .prompt_name = "query"});
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
}

// Fan-out and fan-in: a request's inputs go to the Batcher one by one and the
// request is answered once, when the last is resolved, with the first failure.
TEST(EmbeddingServiceFanIn, OneFailingInputFailsTheRequestOnceNamingIt) {
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto service = EmbeddingService::Create({}, *std::move(tok), backend::MakeNoopEncoder({.hidden_size = 4, .fail_on_id = 666}));
  ASSERT_TRUE(service.ok()) << service.status();
  std::atomic<int> calls{0};
  std::promise<absl::Status> result;
  (*service)->Embed(EmbedRequest{.inputs = {EmbedInput{.is_ids = true, .ids = {1, 2}},
                                            EmbedInput{.is_ids = true, .ids = {3, 666}},
                                            EmbedInput{.is_ids = true, .ids = {4}}}},
                    [&](absl::StatusOr<EmbedResult> r) {
                      if (calls.fetch_add(1) == 0) result.set_value(r.status());
                    });
  const absl::Status status = result.get_future().get();
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kBackend);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("input[1]: "));
  (*service).reset();  // drains: any late resolution would call back again
  EXPECT_EQ(calls.load(), 1);
}

// The noop backend's injected out-of-memory fails any batch over its token limit;
// the service retries halves, so only an input over the limit by itself fails.
TEST(EmbeddingServiceFanIn, InjectedOutOfMemoryFailsOnlyTheInputTooLargeAlone) {
  const auto backend = backend::MakeNoopEncoder({.hidden_size = 4, .oom_above_tokens = 4});
  const std::vector<backend::EmbeddingInput> pair{{.input_ids = {1, 2, 3}}, {.input_ids = {4, 5}}};
  EXPECT_EQ(GetErrorKind(backend->Embed(pair).status()), ErrorKind::kOutOfMemory);
  EXPECT_TRUE(backend->Embed(std::span(pair).first(1)).ok());

  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto service =
      EmbeddingService::Create({}, *std::move(tok), backend::MakeNoopEncoder({.hidden_size = 4, .oom_above_tokens = 4}));
  ASSERT_TRUE(service.ok()) << service.status();
  std::promise<absl::Status> small, large;
  (*service)->Embed(
      EmbedRequest{.inputs = {EmbedInput{.is_ids = true, .ids = {1, 2, 3}}, EmbedInput{.is_ids = true, .ids = {4, 5}},
                              EmbedInput{.is_ids = true, .ids = {6, 7, 8, 9}}}},
      [&](absl::StatusOr<EmbedResult> r) { small.set_value(r.status()); });
  (*service)->Embed(EmbedRequest{.inputs = {EmbedInput{.is_ids = true, .ids = {1, 2, 3, 4, 5}}}},
                    [&](absl::StatusOr<EmbedResult> r) { large.set_value(r.status()); });
  EXPECT_TRUE(small.get_future().get().ok());
  EXPECT_EQ(GetErrorKind(large.get_future().get()), ErrorKind::kOutOfMemory);
}

// Waits (bounded) until `service` has accepted `n` inputs into its Batcher.
bool WaitForSubmitted(const EmbeddingService& service, std::uint64_t n) {
  return tokenbatch::testing::WaitUntil([&] { return service.metrics().requests_submitted >= n; });
}

// The answer (where the caller formats its reply) runs on a tokenizer thread when
// the worker's next batch would wait for it, and on the worker when it is idle.
TEST(EmbeddingServiceFanIn, TheAnswerLeavesTheWorkerOnlyWhenABatchWaits) {
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto recording = std::make_unique<RecordingBackend>();
  const RecordingBackend* model = recording.get();
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  ServiceOptions options;
  // No batching window: the second input is due the moment the worker is free.
  options.batcher.scheduler.max_wait = Duration::zero();
  auto service = EmbeddingService::Create(
      options, *std::move(tok), std::make_unique<tokenbatch::testing::GatedEncoder>(std::move(recording), gate));
  ASSERT_TRUE(service.ok()) << service.status();
  std::promise<std::thread::id> first, second;
  (*service)->Embed(EmbedRequest{.inputs = {EmbedInput{.text = "first"}}}, [&](absl::StatusOr<EmbedResult> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    first.set_value(std::this_thread::get_id());
  });
  ASSERT_TRUE(gate->WaitForArrivals(1));  // the first batch is held at the gate...
  (*service)->Embed(EmbedRequest{.inputs = {EmbedInput{.text = "second"}}}, [&](absl::StatusOr<EmbedResult> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    second.set_value(std::this_thread::get_id());
  });
  const bool queued = WaitForSubmitted(**service, 2);
  gate->Open();
  ASSERT_TRUE(queued);
  // ...so the second is queued when it ends: the first answer must not hold it up.
  EXPECT_NE(first.get_future().get(), model->thread());
  // Nothing waits behind the second: answered on the worker itself.
  EXPECT_EQ(second.get_future().get(), model->thread());
  EXPECT_EQ(model->calls(), 2);
}

TEST(EmbeddingServiceFanIn, ADisconnectCancelsTheQueuedInputsAndAnswersOnce) {
  auto tok = tokenizer::Tokenizer::FromFile(tokenbatch::testing::TestTokenizerPath("bert"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  // The first batch is held at the gate until the disconnect has been answered.
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  auto service = EmbeddingService::Create(
      {}, *std::move(tok),
      std::make_unique<tokenbatch::testing::GatedEncoder>(backend::MakeNoopEncoder({.hidden_size = 4}), gate));
  ASSERT_TRUE(service.ok()) << service.status();
  std::promise<absl::Status> first;
  std::future<absl::Status> first_done = first.get_future();
  (*service)->Embed(EmbedRequest{.inputs = {EmbedInput{.text = "keeps the worker busy"}}},
                    [&](absl::StatusOr<EmbedResult> r) { first.set_value(r.status()); });
  ASSERT_TRUE(gate->WaitForArrivals(1));
  std::atomic<int> calls{0};
  std::promise<absl::Status> second;
  std::future<absl::Status> second_done = second.get_future();
  std::function<void()> disconnect = (*service)->Embed(
      EmbedRequest{.inputs = {EmbedInput{.text = "a"}, EmbedInput{.text = "b"}, EmbedInput{.text = "c"}}},
      [&](absl::StatusOr<EmbedResult> r) {
        if (calls.fetch_add(1) == 0) second.set_value(r.status());
      });
  ASSERT_TRUE(WaitForSubmitted(**service, 4));  // its three inputs are queued behind the held batch
  disconnect();
  disconnect();
  const bool answered = second_done.wait_for(tokenbatch::testing::kWaitLimit) == std::future_status::ready;
  // The queued inputs were cancelled, not computed after the batch in front.
  EXPECT_EQ(first_done.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  gate->Open();
  ASSERT_TRUE(answered) << "the disconnect did not answer the request";
  EXPECT_EQ(GetErrorKind(second_done.get()), ErrorKind::kCancelled);
  EXPECT_TRUE(first_done.get().ok());
  (*service).reset();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(gate->arrived(), 1);  // only the first batch reached the backend
}

}  // namespace
}  // namespace tokenbatch::server
