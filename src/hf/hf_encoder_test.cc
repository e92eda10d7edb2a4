// HfEncoder on the real all-MiniLM-L6-v2 (meaning, layouts, batching) and on
// small hand-written directories (every way a model directory can be broken).
// Parity against sentence-transformers itself is tests/python/hf_parity.py.
#include "tokenbatch/hf/hf_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "testing/build_paths.h"
#include "testing/float_compare.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/hf/cpu_low_precision.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::hf {
namespace {

namespace fs = std::filesystem;
using backend::Embedding;
using backend::EmbeddingInput;
using nlohmann::json;

// Whole-model outputs compared across layouts and batch shapes: six layers of
// float32 rounding in different kernel shapes stay well inside 1e-4 of the
// largest value.
constexpr double kModelTolerance = 1e-4;

const std::string kMiniLm = tokenbatch::testing::ModelDir() + "/all-MiniLM-L6-v2";

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

class MiniLmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::is_directory(kMiniLm)) << kMiniLm << " is missing: run scripts/prepare_assets.sh";
    auto tok = tokenizer::Tokenizer::FromFile(kMiniLm + "/tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status();
    tokenizer_ = std::move(*tok).release();
  }
  static void TearDownTestSuite() { delete tokenizer_; }

  static std::unique_ptr<HfEncoder> Load(Execution execution, const std::string& dtype = "float32") {
    auto e = HfEncoder::Load({.model_dir = kMiniLm, .dtype = dtype, .execution = execution, .num_threads = 1});
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }
  static EmbeddingInput Input(const std::string& text) {
    auto enc = tokenizer_->Encode(text);
    EXPECT_TRUE(enc.ok());
    EmbeddingInput in;
    in.input_ids.assign(enc->ids.begin(), enc->ids.end());
    return in;
  }
  static std::vector<Embedding> Embed(const HfEncoder& e, const std::vector<std::string>& texts) {
    std::vector<EmbeddingInput> inputs;
    for (const std::string& t : texts) inputs.push_back(Input(t));
    auto out = e.Embed(inputs);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Embedding>(texts.size());
  }
  static tokenizer::Tokenizer* tokenizer_;
};
tokenizer::Tokenizer* MiniLmTest::tokenizer_ = nullptr;

TEST_F(MiniLmTest, ReadsTheDirectoryAsSentenceTransformersDoes) {
  auto e = Load(Execution::kPacked);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->hidden_size(), 384);
  EXPECT_EQ(e->pooling(), backend::Pooling::kMean);
  EXPECT_TRUE(e->normalize());  // the Normalize module
  EXPECT_EQ(e->model().max_seq_length, 256);  // sentence_bert_config.json, below 512 positions
  EXPECT_EQ(e->model().config.model_type, "bert");
}

// A query lands closer to the passage that answers it than to an unrelated one.
TEST_F(MiniLmTest, EmbeddingsCarryMeaning) {
  struct Triple {
    std::string query, relevant, unrelated;
  } triples[] = {
      {"How do I bake a loaf of bread at home?",
       "Mix flour, water, yeast and salt, knead the dough, let it rise, then bake it at 220 C for 35 minutes.",
       "Form 1040 is the standard federal income tax return filed by individuals in the United States."},
      {"What is the capital of France?", "Paris is the capital and largest city of France.",
       "The mitochondria is the organelle that produces most of a cell's energy."},
      {"How can I fix a flat bicycle tire?",
       "Remove the wheel, find the puncture in the inner tube, patch it and pump the tire back up.",
       "The stock market closed higher today after the central bank held interest rates steady."},
      {"symptoms of the flu", "Influenza usually brings fever, chills, muscle aches, cough and fatigue.",
       "The museum's new wing displays sculptures from the Renaissance period."},
      {"best way to learn a programming language",
       "Write small programs every day, read other people's code and build a project you care about.",
       "Our hotel room had a balcony overlooking the sea and a large bathtub."},
  };
  auto e = Load(Execution::kPacked);
  ASSERT_NE(e, nullptr);
  for (const Triple& t : triples) {
    std::vector<Embedding> v = Embed(*e, {t.query, t.relevant, t.unrelated});
    const double near = Cosine(v[0].values, v[1].values);
    const double far = Cosine(v[0].values, v[2].values);
    EXPECT_GT(near, far + 0.2) << t.query << ": relevant " << near << ", unrelated " << far;
  }
}

// Packed and padded layouts, and one input alone or in a mixed batch, give the
// same embeddings.
TEST_F(MiniLmTest, LayoutsAndBatchShapesAgree) {
  const std::vector<std::string> texts = {
      "short", "a somewhat longer sentence with several more words in it", "中文句子，带标点。",
      "emoji 🎉🙂 and accents: café, naïve, Straße", std::string(600, 'x') + " long"};
  auto packed = Load(Execution::kPacked);
  auto padded = Load(Execution::kPadded);
  ASSERT_NE(packed, nullptr);
  ASSERT_NE(padded, nullptr);
  std::vector<Embedding> a = Embed(*packed, texts);
  std::vector<Embedding> b = Embed(*padded, texts);
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_TRUE(testing::FloatsNear(a[i].values, b[i].values, kModelTolerance)) << "text " << i;
    std::vector<Embedding> alone = Embed(*packed, {texts[i]});
    EXPECT_TRUE(testing::FloatsNear(alone[0].values, a[i].values, kModelTolerance)) << "text " << i;
  }
}

TEST_F(MiniLmTest, InputsAreCheckedBeforeTheForward) {
  auto e = Load(Execution::kPacked);
  ASSERT_NE(e, nullptr);
  EmbeddingInput too_long;
  too_long.input_ids.assign(257, 100);
  EmbeddingInput bad_id;
  bad_id.input_ids = {101, 30522, 102};
  EmbeddingInput bad_type = Input("hello");
  bad_type.token_type_ids.assign(bad_type.input_ids.size(), 2);
  for (const EmbeddingInput& in : {too_long, bad_id, bad_type}) {
    auto out = e->Embed(std::vector<EmbeddingInput>{in});
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  }
}

// bfloat16 weights and activations stay close to float32 on the CPU (on a CPU
// without AVX-512 BF16, Load refuses bfloat16: low_precision_test.cc).
TEST_F(MiniLmTest, Bfloat16IsCloseToFloat32) {
  if (!DetectCpuLowPrecision().avx512_bf16) {
    EXPECT_FALSE(HfEncoder::Load({.model_dir = kMiniLm, .dtype = "bfloat16"}).ok());
    return;
  }
  auto f32 = Load(Execution::kPacked);
  auto bf16 = Load(Execution::kPacked, "bfloat16");
  ASSERT_NE(bf16, nullptr);
  std::vector<Embedding> a = Embed(*f32, {"How do I bake a loaf of bread at home?"});
  std::vector<Embedding> b = Embed(*bf16, {"How do I bake a loaf of bread at home?"});
  EXPECT_GT(Cosine(a[0].values, b[0].values), 0.99);
}

// --- Broken directories -------------------------------------------------------

// Writes a safetensors file of F32 tensors (name -> shape), values from `rng`.
void WriteWeights(const fs::path& path, const std::map<std::string, std::vector<int64_t>>& tensors,
                  std::mt19937& rng) {
  json header = json::object();
  std::string data;
  std::normal_distribution<float> normal(0.0f, 0.1f);
  for (const auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + 4 * n}}};
    for (int64_t i = 0; i < n; ++i) {
      const float v = name.find("LayerNorm.weight") != std::string::npos ? 1.0f : normal(rng);
      data.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  const std::string h = header.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((uint64_t(h.size()) >> (8 * i)) & 0xff);
  std::ofstream(path, std::ios::binary) << out << h << data;
}

// The tensors of a BERT with H = 8, 1 layer, vocab 20, 16 positions.
std::map<std::string, std::vector<int64_t>> TinyBertTensors() {
  std::map<std::string, std::vector<int64_t>> t = {
      {"embeddings.word_embeddings.weight", {20, 8}},   {"embeddings.position_embeddings.weight", {16, 8}},
      {"embeddings.token_type_embeddings.weight", {2, 8}}, {"embeddings.LayerNorm.weight", {8}},
      {"embeddings.LayerNorm.bias", {8}}};
  const std::string p = "encoder.layer.0.";
  for (const char* m : {"query", "key", "value"}) {
    t[p + "attention.self." + m + ".weight"] = {8, 8};
    t[p + "attention.self." + m + ".bias"] = {8};
  }
  t[p + "attention.output.dense.weight"] = {8, 8};
  t[p + "attention.output.dense.bias"] = {8};
  t[p + "attention.output.LayerNorm.weight"] = {8};
  t[p + "attention.output.LayerNorm.bias"] = {8};
  t[p + "intermediate.dense.weight"] = {16, 8};
  t[p + "intermediate.dense.bias"] = {16};
  t[p + "output.dense.weight"] = {8, 16};
  t[p + "output.dense.bias"] = {8};
  t[p + "output.LayerNorm.weight"] = {8};
  t[p + "output.LayerNorm.bias"] = {8};
  return t;
}

class BrokenDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tb_hf_encoder_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "1_Pooling");
    config_ = {{"model_type", "bert"},          {"vocab_size", 20}, {"hidden_size", 8},
               {"num_hidden_layers", 1},        {"num_attention_heads", 2}, {"intermediate_size", 16},
               {"max_position_embeddings", 16}, {"type_vocab_size", 2}};
    WriteJson("config.json", config_);
    WriteJson("modules.json", json::array({{{"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
                                           {{"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}}}));
    WriteJson("1_Pooling/config.json", {{"pooling_mode_cls_token", true}});
    tensors_ = TinyBertTensors();
    std::mt19937 rng(3);
    WriteWeights(dir_ / "model.safetensors", tensors_, rng);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void WriteJson(const std::string& name, const json& j) { std::ofstream(dir_ / name) << j.dump(); }
  void RewriteWeights() {
    std::mt19937 rng(3);
    WriteWeights(dir_ / "model.safetensors", tensors_, rng);
  }
  // The load error's message (and that it is an InvalidArgumentError).
  std::string LoadError(const std::string& dtype = "float32") {
    auto e = HfEncoder::Load({.model_dir = dir_.string(), .dtype = dtype});
    if (e.ok()) return "loaded";
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << e.status();
    return std::string(e.status().message());
  }
  fs::path dir_;
  json config_;
  std::map<std::string, std::vector<int64_t>> tensors_;
};

TEST_F(BrokenDirectoryTest, AWellFormedTinyModelLoadsAndRuns) {
  auto e = HfEncoder::Load({.model_dir = dir_.string()});
  ASSERT_TRUE(e.ok()) << e.status();
  EmbeddingInput in;
  in.input_ids = {1, 5, 7, 2};
  auto out = (*e)->Embed(std::vector<EmbeddingInput>{in});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].values.size(), 8u);
  for (float v : (*out)[0].values) EXPECT_TRUE(std::isfinite(v));
}

TEST_F(BrokenDirectoryTest, MissingTensorIsNamedWithItsShape) {
  tensors_.erase("encoder.layer.0.output.dense.weight");
  RewriteWeights();
  const std::string e = LoadError();
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("\"encoder.layer.0.output.dense.weight\" is missing (expected shape [8, 16])"), std::string::npos)
      << e;
}

TEST_F(BrokenDirectoryTest, MisShapedTensorIsNamedWithBothShapes) {
  tensors_["encoder.layer.0.intermediate.dense.weight"] = {16, 9};
  RewriteWeights();
  const std::string e = LoadError();
  EXPECT_NE(e.find("\"encoder.layer.0.intermediate.dense.weight\" has shape [16, 9], expected [16, 8]"),
            std::string::npos)
      << e;
}

TEST_F(BrokenDirectoryTest, TruncatedWeightsAreRefused) {
  const fs::path weights = dir_ / "model.safetensors";
  fs::resize_file(weights, fs::file_size(weights) - 100);
  const std::string e = LoadError();
  EXPECT_NE(e.find("outside the data buffer"), std::string::npos) << e;
}

TEST_F(BrokenDirectoryTest, UnsupportedArchitectureListsTheSupportedOnes) {
  config_["model_type"] = "mistral";
  WriteJson("config.json", config_);
  const std::string e = LoadError();
  EXPECT_NE(e.find("model_type \"mistral\" is not supported (supported: bert, xlm-roberta, roberta, qwen3)"),
            std::string::npos)
      << e;
}

TEST_F(BrokenDirectoryTest, DenseLayerOfTheWrongWidth) {
  WriteJson("modules.json", json::array({{{"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
                                         {{"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}},
                                         {{"path", "2_Dense"}, {"type", "sentence_transformers.models.Dense"}}}));
  fs::create_directories(dir_ / "2_Dense");
  WriteJson("2_Dense/config.json", {{"in_features", 6}, {"out_features", 4}});
  const std::string e = LoadError();
  EXPECT_NE(e.find("in_features 6 does not match the width before it, 8"), std::string::npos) << e;
}

TEST_F(BrokenDirectoryTest, NoPoolingModuleAsksForOne) {
  fs::remove(dir_ / "modules.json");
  EXPECT_NE(LoadError().find("--pooling"), std::string::npos);
  auto e = HfEncoder::Load({.model_dir = dir_.string(), .pooling = backend::Pooling::kMean});
  EXPECT_TRUE(e.ok()) << e.status();
}

// The same tiny BERT as a three-label BertForSequenceClassification (no
// modules.json, as transformers saves it; no "bert." prefix, which transformers
// also loads).
void MakeClassifier(json& config, std::map<std::string, std::vector<int64_t>>& tensors) {
  config["architectures"] = {"BertForSequenceClassification"};
  config["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
  tensors["pooler.dense.weight"] = {8, 8};
  tensors["pooler.dense.bias"] = {8};
  tensors["classifier.weight"] = {3, 8};
  tensors["classifier.bias"] = {3};
}

TEST_F(BrokenDirectoryTest, AClassifierGivesLogitsThatReadTokenTypes) {
  fs::remove(dir_ / "modules.json");
  MakeClassifier(config_, tensors_);
  WriteJson("config.json", config_);
  RewriteWeights();
  auto e = HfEncoder::Load({.model_dir = dir_.string()});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->hidden_size(), 3);
  ASSERT_TRUE((*e)->model().classifier.has_value());
  EXPECT_FALSE((*e)->normalize());
  EmbeddingInput first, second;
  first.input_ids = second.input_ids = {1, 5, 3, 7, 2};
  second.token_type_ids = {0, 0, 0, 1, 1};  // a pair: its second text is type 1
  auto out = (*e)->Embed(std::vector<EmbeddingInput>{first, second});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].values.size(), 3u);
  for (float v : (*out)[0].values) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NE((*out)[0].values, (*out)[1].values);
  // A batch gives each input what it gets alone.
  auto alone = (*e)->Embed(std::vector<EmbeddingInput>{second});
  ASSERT_TRUE(alone.ok()) << alone.status();
  for (size_t k = 0; k < 3; ++k) EXPECT_NEAR((*alone)[0].values[k], (*out)[1].values[k], 1e-5);
}

TEST_F(BrokenDirectoryTest, AClassifierHeadOfTheWrongShapeIsNamed) {
  fs::remove(dir_ / "modules.json");
  MakeClassifier(config_, tensors_);
  WriteJson("config.json", config_);
  tensors_["classifier.weight"] = {2, 8};  // two labels' worth for three in id2label
  RewriteWeights();
  const std::string e = LoadError();
  EXPECT_NE(e.find("\"classifier.weight\" has shape [2, 8], expected [3, 8]"), std::string::npos) << e;
  tensors_.erase("classifier.weight");
  RewriteWeights();
  EXPECT_NE(LoadError().find("\"classifier.weight\" is missing"), std::string::npos);
}

TEST_F(BrokenDirectoryTest, PoolingAndNormalizeDoNotApplyToAClassifier) {
  fs::remove(dir_ / "modules.json");
  MakeClassifier(config_, tensors_);
  WriteJson("config.json", config_);
  RewriteWeights();
  for (const HfEncoderOptions& options :
       {HfEncoderOptions{.model_dir = dir_.string(), .pooling = backend::Pooling::kMean},
        HfEncoderOptions{.model_dir = dir_.string(), .normalize = true}}) {
    auto e = HfEncoder::Load(options);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("is a cross-encoder (BertForSequenceClassification)"), std::string::npos)
        << e.status();
  }
}

TEST_F(BrokenDirectoryTest, UnknownDtypeAndDevice) {
  EXPECT_NE(LoadError("float8").find("dtype must be float32, float16 or bfloat16"), std::string::npos);
  auto e = HfEncoder::Load({.model_dir = dir_.string(), .device = "tpu:0"});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("bad device"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace tokenbatch::hf
