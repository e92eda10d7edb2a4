// EmbeddingService without HTTP: the windows an oversize input is split into
// each reach the backend with the tokenizer's special ends ([CLS] ... [SEP]), and
// the request still gets one embedding.
#include "tokenbatch/server/embedding_service.h"

#include <future>
#include <mutex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/tokenizer_data.h"

namespace tokenbatch::server {
namespace {

// Records the ids of every input it is given; returns zero vectors of width 4.
class RecordingBackend : public EmbeddingBackend {
 public:
  absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& in : inputs) seen_.push_back(in.input_ids);
    return std::vector<backend::Embedding>(inputs.size(), backend::Embedding{.values = {1, 0, 0, 0}});
  }
  int hidden_size() const override { return 4; }
  std::int64_t vocab_size() const override { return 0; }
  std::int64_t max_positions() const override { return 0; }
  bool default_normalize() const override { return false; }
  std::string name() const override { return "recording"; }
  std::vector<std::vector<std::int32_t>> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::vector<std::int32_t>> seen_;
};

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

}  // namespace
}  // namespace tokenbatch::server
