#include "backend/postprocess.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

// A request (aggregate init would trip -Wmissing-field-initializers).
EmbeddingInput Req(std::vector<int32_t> ids = {}, std::vector<int32_t> types = {},
                   std::optional<bool> normalize = {}, int dimensions = 0) {
  EmbeddingInput in;
  in.input_ids = std::move(ids);
  in.token_type_ids = std::move(types);
  in.normalize = normalize;
  in.dimensions = dimensions;
  return in;
}


TEST(PoolingNameTest, RoundTrips) {
  for (Pooling p : {Pooling::kCls, Pooling::kMean, Pooling::kLast}) {
    absl::StatusOr<Pooling> parsed = ParsePooling(PoolingName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(PoolingName(Pooling::kMean), "mean");
  absl::StatusOr<Pooling> bad = ParsePooling("max");
  EXPECT_EQ(GetErrorKind(bad.status()), ErrorKind::kInvalidArgument);
  EXPECT_NE(std::string(bad.status().message()).find("\"max\""), std::string::npos);
}

TEST(FinishEmbeddingTest, TruncatesThenNormalises) {
  const std::vector<float> pooled = {3, 4, 12, 100};
  Embedding full = FinishEmbedding(pooled, 0, false);
  EXPECT_EQ(full.values, pooled);
  // First 2 values (3, 4) have norm 5: truncation happens before normalisation.
  Embedding two = FinishEmbedding(pooled, 2, true);
  ASSERT_EQ(two.values.size(), 2u);
  EXPECT_FLOAT_EQ(two.values[0], 0.6f);
  EXPECT_FLOAT_EQ(two.values[1], 0.8f);
  // (3, 4, 12) has norm 13.
  Embedding three = FinishEmbedding(pooled, 3, true);
  EXPECT_FLOAT_EQ(three.values[2], 12.0f / 13.0f);
  Embedding raw_two = FinishEmbedding(pooled, 2, false);
  EXPECT_EQ(raw_two.values, (std::vector<float>{3, 4}));
}

TEST(FinishEmbeddingTest, ZeroVectorStaysZero) {
  const std::vector<float> zeros = {0, 0, 0};
  Embedding e = FinishEmbedding(zeros, 0, true);
  EXPECT_EQ(e.values, zeros);
}

class ValidateInputsTest : public ::testing::Test {
 protected:
  ValidateInputsTest() {
    options_.vocab_size = 100;
    options_.max_positions = 8;
  }
  ErrorKind Check(const EmbeddingInput& in, bool accepts_types = true) {
    std::vector<EmbeddingInput> batch = {Req({1, 2}), in};
    return GetErrorKind(ValidateInputs(batch, options_, /*hidden_size=*/16, accepts_types));
  }
  EncoderOptions options_;
};

TEST_F(ValidateInputsTest, AcceptsWellFormedRequests) {
  EXPECT_EQ(Check(Req({0, 99, 5})), ErrorKind::kNone);
  EXPECT_EQ(Check(Req({1, 2, 3, 4, 5, 6, 7, 8}, {0, 0, 0, 0, 1, 1, 1, 1})),
            ErrorKind::kNone);
  EXPECT_EQ(Check(Req({1}, {}, true, 16)), ErrorKind::kNone);
  EXPECT_EQ(Check(Req({1}, {0}), /*accepts_types=*/false), ErrorKind::kNone);
}

TEST_F(ValidateInputsTest, RefusesBadRequestsNamingTheCause) {
  EXPECT_EQ(Check(Req()), ErrorKind::kInvalidArgument);                   // empty
  EXPECT_EQ(Check(Req({100})), ErrorKind::kInvalidArgument);              // id >= vocab
  EXPECT_EQ(Check(Req({-1})), ErrorKind::kInvalidArgument);               // id < 0
  EXPECT_EQ(Check(Req({1, 2, 3, 4, 5, 6, 7, 8, 9})),                     // > max_positions
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(Check(Req({1, 2}, {0})), ErrorKind::kInvalidArgument);        // types length
  EXPECT_EQ(Check(Req({1}, {1}), false), ErrorKind::kInvalidArgument);    // types unused
  EXPECT_EQ(Check(Req({1}, {}, {}, 17)), ErrorKind::kInvalidArgument);    // dims > H
  EXPECT_EQ(Check(Req({1}, {}, {}, -1)), ErrorKind::kInvalidArgument);    // dims < 0

  std::vector<EmbeddingInput> batch = {Req({1}), Req({1, 100})};
  absl::Status s = ValidateInputs(batch, options_, 16, true);
  EXPECT_EQ(std::string(s.message()),
            "request 1 token 1 has id 100, outside [0, vocab_size 100)");
}

TEST_F(ValidateInputsTest, UncheckedBoundsWhenZero) {
  options_.vocab_size = 0;
  options_.max_positions = 0;
  EXPECT_EQ(Check(Req({1000000, 1, 2, 3, 4, 5, 6, 7, 8, 9})), ErrorKind::kNone);
  EXPECT_EQ(Check(Req({-5})), ErrorKind::kInvalidArgument);
}

}  // namespace
TEST(SparseEmbeddingTest, KeepsTheIdsAboveZeroInOrder) {
  const std::vector<float> weights{0, 0.5f, 0, 2, -1, 0.25f};
  const Embedding e = SparseEmbedding(weights);
  EXPECT_EQ(e.indices, (std::vector<int32_t>{1, 3, 5}));
  EXPECT_EQ(e.values, (std::vector<float>{0.5f, 2, 0.25f}));
  EXPECT_TRUE(SparseEmbedding(std::vector<float>(4, 0.0f)).indices.empty());
}

}  // namespace tokenbatch::backend
