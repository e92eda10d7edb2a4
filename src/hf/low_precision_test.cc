// bfloat16 and int8 against float32 on the real all-MiniLM-L6-v2, per text, on
// real texts (the tokenizer tests' corpus, none of which the int8 load probe
// sees): the quality bounds docs/benchmarks.md reports, checked on every run
// on a CPU with the instructions each mode needs; on one without them, Load's
// refusal is checked instead (cpu_low_precision.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "testing/build_paths.h"
#include "tokenbatch/hf/cpu_low_precision.h"
#include "tokenbatch/hf/hf_encoder.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::hf {
namespace {

const std::string kMiniLm = tokenbatch::testing::ModelDir() + "/all-MiniLM-L6-v2";

// Every tenth text of the corpus, as token ids.
std::vector<backend::EmbeddingInput> Texts() {
  auto tok = tokenizer::Tokenizer::FromFile(kMiniLm + "/tokenizer.json");
  EXPECT_TRUE(tok.ok()) << tok.status();
  std::ifstream in(tokenbatch::testing::TestDataDir() + "/tokenizer/realtext.jsonl");
  std::vector<backend::EmbeddingInput> out;
  std::string line;
  for (int i = 0; tok.ok() && std::getline(in, line); ++i) {
    if (i % 10 != 0) continue;
    auto enc = (*tok)->Encode(nlohmann::json::parse(line)["text"].get<std::string>());
    if (!enc.ok() || enc->ids.empty()) continue;
    backend::EmbeddingInput input;
    input.input_ids.assign(enc->ids.begin(), enc->ids.begin() + std::min<std::size_t>(enc->ids.size(), 256));
    out.push_back(std::move(input));
  }
  return out;
}

std::vector<backend::Embedding> Embed(const HfEncoderOptions& options, const std::vector<backend::EmbeddingInput>& in,
                                      backend::EncoderInfo* info = nullptr) {
  auto e = HfEncoder::Load(options);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok()) return {};
  if (info != nullptr) *info = (*e)->info();
  std::vector<backend::Embedding> out;
  for (std::size_t i = 0; i < in.size(); i += 32) {
    auto batch = (*e)->Embed(std::span(in).subspan(i, std::min<std::size_t>(32, in.size() - i)));
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok()) return {};
    out.insert(out.end(), batch->begin(), batch->end());
  }
  return out;
}

// Per text: cos(a_i, b_i).
std::vector<double> Cosines(const std::vector<backend::Embedding>& a, const std::vector<backend::Embedding>& b) {
  std::vector<double> out;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double dot = 0, na = 0, nb = 0;
    for (std::size_t k = 0; k < a[i].values.size(); ++k) {
      dot += double(a[i].values[k]) * b[i].values[k];
      na += double(a[i].values[k]) * a[i].values[k];
      nb += double(b[i].values[k]) * b[i].values[k];
    }
    out.push_back(dot / std::sqrt(na * nb));
  }
  return out;
}

class LowPrecisionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    texts_ = new std::vector<backend::EmbeddingInput>(Texts());
    reference_ = new std::vector<backend::Embedding>(Embed({.model_dir = kMiniLm, .num_threads = 2}, *texts_));
  }
  static void TearDownTestSuite() {
    delete texts_;
    delete reference_;
  }
  static std::vector<backend::EmbeddingInput>* texts_;
  static std::vector<backend::Embedding>* reference_;
};
std::vector<backend::EmbeddingInput>* LowPrecisionTest::texts_ = nullptr;
std::vector<backend::Embedding>* LowPrecisionTest::reference_ = nullptr;

// On a CPU without `instructions`, Load refuses the mode `options` asks for,
// naming them.
void ExpectRefused(const HfEncoderOptions& options, const std::string& instructions) {
  std::printf("this CPU lacks %s: checking that Load refuses the mode\n", instructions.c_str());
  auto e = HfEncoder::Load(options);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(instructions + ", which this CPU lacks"), std::string::npos) << e.status();
}

TEST_F(LowPrecisionTest, Bfloat16KeepsEveryTextWithinCosine0999) {
  if (!DetectCpuLowPrecision().avx512_bf16) {
    ExpectRefused({.model_dir = kMiniLm, .dtype = "bfloat16", .num_threads = 2}, "AVX-512 BF16");
    return;
  }
  ASSERT_GE(texts_->size(), 150u);
  const std::vector<double> c =
      Cosines(*reference_, Embed({.model_dir = kMiniLm, .dtype = "bfloat16", .num_threads = 2}, *texts_));
  ASSERT_EQ(c.size(), texts_->size());
  std::printf("bfloat16 against float32 on %zu texts: min cosine %.6f\n", c.size(), *std::min_element(c.begin(), c.end()));
  EXPECT_GE(*std::min_element(c.begin(), c.end()), 0.999);
}

// The goal: cosine 0.99 for every text (issue #41). The bound on the mean,
// below the values measured on Debian's libtorch and on the PyPI wheel's alike,
// catches a regression that stays above the goal (keeping no feature in
// float32, or 7-bit activations, FBGEMM's reduce_range, fall below both).
TEST_F(LowPrecisionTest, Int8KeepsEveryTextWithinCosine099) {
  if (!DetectCpuLowPrecision().avx512_vnni) {
    ExpectRefused({.model_dir = kMiniLm, .num_threads = 2, .quantize = Quantization::kInt8}, "AVX-512 VNNI");
    return;
  }
  backend::EncoderInfo info;
  const std::vector<double> c =
      Cosines(*reference_, Embed({.model_dir = kMiniLm, .num_threads = 2, .quantize = Quantization::kInt8}, *texts_,
                                 &info));
  ASSERT_EQ(c.size(), texts_->size());
  const double mean = std::accumulate(c.begin(), c.end(), 0.0) / static_cast<double>(c.size());
  std::printf("int8 against float32 on %zu texts: min cosine %.6f, mean %.6f\n", c.size(),
              *std::min_element(c.begin(), c.end()), mean);
  EXPECT_GE(*std::min_element(c.begin(), c.end()), 0.99);
  EXPECT_GE(mean, 0.996);
  EXPECT_EQ(info.quantization, "int8");
  ASSERT_TRUE(info.quantization_quality.has_value());
  std::printf("int8 against float32 on the load probe: min cosine %.6f\n",
              info.quantization_quality->min_cosine);
  EXPECT_EQ(info.quantization_quality->probe_inputs, 16);
  EXPECT_GT(info.quantization_quality->min_cosine, 0.9);
  EXPECT_LT(info.quantization_quality->min_cosine, 1.0);  // it was measured, not assumed
}

TEST(LowPrecision, Int8NeedsFloat32WeightsOnTheCpu) {
  auto e = HfEncoder::Load({.model_dir = kMiniLm, .dtype = "bfloat16", .quantize = Quantization::kInt8});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("int8 quantization runs float32 weights on the CPU"), std::string::npos);
}

}  // namespace
}  // namespace tokenbatch::hf
