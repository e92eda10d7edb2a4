#include "tokenbatch/hf/model_directory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "nlohmann/json.hpp"

namespace tokenbatch::hf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json BertConfig() {
  return {{"model_type", "bert"},          {"vocab_size", 100},         {"hidden_size", 32},
          {"num_hidden_layers", 2},        {"num_attention_heads", 4},  {"intermediate_size", 64},
          {"max_position_embeddings", 64}, {"hidden_act", "gelu"},      {"pad_token_id", 0}};
}

class ModelDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tb_model_dir_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const json& j) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << j.dump();
  }
  // A sentence-transformers directory: Transformer, mean Pooling, a Dense, Normalize.
  void WriteSentenceTransformer() {
    Write("config.json", BertConfig());
    Write("modules.json", json::array({{{"idx", 0}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
                                       {{"idx", 1}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}},
                                       {{"idx", 2}, {"path", "2_Dense"}, {"type", "sentence_transformers.models.Dense"}},
                                       {{"idx", 3}, {"path", "3_Normalize"}, {"type", "sentence_transformers.models.Normalize"}}}));
    Write("1_Pooling/config.json", {{"pooling_mode_mean_tokens", true}, {"include_prompt", false}});
    Write("2_Dense/config.json", {{"in_features", 32}, {"out_features", 16}, {"bias", false},
                                  {"activation_function", "torch.nn.modules.activation.Tanh"}});
    Write("sentence_bert_config.json", {{"max_seq_length", 40}});
    Write("config_sentence_transformers.json",
          {{"prompts", {{"query", "query: "}, {"passage", "passage: "}}}, {"default_prompt_name", "query"}});
  }
  std::string Error() {
    auto m = ReadModelDirectory(dir_.string());
    EXPECT_FALSE(m.ok());
    return m.ok() ? "" : std::string(m.status().message());
  }
  fs::path dir_;
};

TEST_F(ModelDirectoryTest, ReadsEveryModule) {
  WriteSentenceTransformer();
  auto m = ReadModelDirectory(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.architecture, Architecture::kBert);
  EXPECT_EQ(m->config.head_dim, 8);
  EXPECT_EQ(m->config.type_vocab_size, 2);
  ASSERT_TRUE(m->pooling.has_value());
  EXPECT_EQ(*m->pooling, backend::Pooling::kMean);
  EXPECT_FALSE(m->include_prompt);
  ASSERT_EQ(m->dense.size(), 1u);
  EXPECT_EQ(m->dense[0].out_features, 16);
  EXPECT_FALSE(m->dense[0].bias);
  EXPECT_EQ(m->dense[0].activation, "tanh");
  EXPECT_TRUE(m->normalize);
  EXPECT_EQ(m->max_seq_length, 40);
  EXPECT_EQ(m->prompts.at("passage"), "passage: ");
  EXPECT_EQ(m->default_prompt_name, "query");
}

TEST_F(ModelDirectoryTest, PlainTransformersDirectoryHasNoPooling) {
  json c = BertConfig();
  c["model_type"] = "xlm-roberta";
  c["pad_token_id"] = 1;
  Write("config.json", c);
  auto m = ReadModelDirectory(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->pooling.has_value());
  EXPECT_EQ(m->config.architecture, Architecture::kXlmRoberta);
  EXPECT_EQ(m->max_seq_length, 62);  // 64 positions less the reserved pad + 1
}

TEST_F(ModelDirectoryTest, Qwen3GroupedQueryHeads) {
  json c = {{"model_type", "qwen3"},     {"vocab_size", 100},       {"hidden_size", 64},
            {"num_hidden_layers", 2},    {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"head_dim", 32},            {"intermediate_size", 96}, {"max_position_embeddings", 128},
            {"rope_theta", 1000000.0},   {"rope_scaling", nullptr}};
  Write("config.json", c);
  auto m = ReadModelDirectory(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.num_key_value_heads, 2);
  EXPECT_EQ(m->config.head_dim, 32);
  EXPECT_EQ(m->config.hidden_act, "silu");
  c["num_key_value_heads"] = 3;
  Write("config.json", c);
  EXPECT_NE(Error().find("not a multiple of num_key_value_heads"), std::string::npos);
}

TEST_F(ModelDirectoryTest, ErrorsNameTheFileAndWhatIsSupported) {
  EXPECT_NE(Error().find("config.json: missing"), std::string::npos);
  json c = BertConfig();
  c["model_type"] = "t5";
  Write("config.json", c);
  std::string e = Error();
  EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  EXPECT_NE(e.find("supported: bert, xlm-roberta, roberta, qwen3"), std::string::npos) << e;
  c = BertConfig();
  c["hidden_size"] = "big";
  Write("config.json", c);
  EXPECT_NE(Error().find("hidden_size must be an integer > 0"), std::string::npos);
  c = BertConfig();
  c.erase("num_hidden_layers");
  Write("config.json", c);
  EXPECT_NE(Error().find("needs num_hidden_layers"), std::string::npos);

  WriteSentenceTransformer();
  Write("1_Pooling/config.json", {{"pooling_mode_max_tokens", true}});
  EXPECT_NE(Error().find("pooling_mode_max_tokens is not supported"), std::string::npos);
  WriteSentenceTransformer();
  Write("config_sentence_transformers.json", {{"prompts", {{"query", "q: "}}}, {"default_prompt_name", "doc"}});
  EXPECT_NE(Error().find("default_prompt_name \"doc\" is not among the prompts"), std::string::npos);
  WriteSentenceTransformer();
  Write("modules.json", json::array({{{"path", "../elsewhere"}, {"type", "sentence_transformers.models.Pooling"}}}));
  EXPECT_NE(Error().find("leaves the model directory"), std::string::npos);
  fs::remove_all(dir_ / "modules.json");
  std::ofstream(dir_ / "config.json") << "{ truncated";
  EXPECT_NE(Error().find("not a JSON object"), std::string::npos);
}

TEST_F(ModelDirectoryTest, ModulesRunInTheirOrderOrNotAtAll) {
  WriteSentenceTransformer();
  Write("modules.json", json::array({{{"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
                                     {{"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}},
                                     {{"path", "3_Normalize"}, {"type", "sentence_transformers.models.Normalize"}},
                                     {{"path", "2_Dense"}, {"type", "sentence_transformers.models.Dense"}}}));
  EXPECT_NE(Error().find("module Dense is out of order"), std::string::npos);
}

TEST_F(ModelDirectoryTest, WrongTypesAndMissingDefaultsFollowTransformers) {
  WriteSentenceTransformer();
  Write("2_Dense/config.json", {{"in_features", 32}, {"out_features", 16}, {"bias", "yes"}});
  EXPECT_NE(Error().find("bias must be true or false"), std::string::npos);
  Write("2_Dense/config.json", {{"in_features", 32}, {"out_features", 16}});  // Dense's default: Tanh
  auto m = ReadModelDirectory(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->dense[0].activation, "tanh");

  json xlmr = BertConfig();
  xlmr["model_type"] = "xlm-roberta";
  xlmr.erase("pad_token_id");
  Write("config.json", xlmr);
  m = ReadModelDirectory(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.pad_token_id, 1);
  EXPECT_EQ(m->config.type_vocab_size, 2);

  json huge = BertConfig();
  huge["num_hidden_layers"] = 1000000000000;
  Write("config.json", huge);
  EXPECT_NE(Error().find("num_hidden_layers 1000000000000 is above the largest supported"), std::string::npos);
  json qwen = {{"model_type", "qwen3"}, {"vocab_size", 100}, {"hidden_size", 64}, {"num_hidden_layers", 1},
               {"num_attention_heads", 4}, {"intermediate_size", 96}, {"max_position_embeddings", 128},
               {"hidden_act", "laplace"}};
  Write("config.json", qwen);
  EXPECT_NE(Error().find("hidden_act \"laplace\" is not supported (supported: gelu, "), std::string::npos) << Error();
  qwen["hidden_act"] = "gelu";  // Qwen3MLP applies ACT2FN[hidden_act] too
  Write("config.json", qwen);
  EXPECT_TRUE(ReadModelDirectory(dir_.string()).ok());
}

TEST_F(ModelDirectoryTest, TokenizerSettingsFollowTransformersAndSentenceTransformers) {
  WriteSentenceTransformer();
  auto plain = ReadModelDirectory(dir_.string());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->do_lower_case);
  EXPECT_FALSE(plain->truncate_left);

  Write("sentence_bert_config.json", {{"max_seq_length", 40}, {"do_lower_case", true}});
  Write("tokenizer_config.json", {{"truncation_side", "left"}, {"padding_side", "right"}, {"add_eos_token", true}});
  auto m = ReadModelDirectory(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->do_lower_case);
  EXPECT_TRUE(m->truncate_left);
  // BERT's absolute positions would start in left padding: refused.
  Write("tokenizer_config.json", {{"padding_side", "left"}});
  EXPECT_NE(Error().find("padding_side \"left\" is not supported for bert"), std::string::npos) << Error();

  for (const auto& [field, value, message] :
       {std::tuple{"truncation_side", json("middle"), "truncation_side \"middle\" is not supported"},
        {"padding_side", json(3), "padding_side must be a string"},
        {"add_eos_token", json("yes"), "add_eos_token must be true or false"}}) {
    json config = {{"add_bos_token", false}};
    config[field] = value;
    Write("tokenizer_config.json", config);
    EXPECT_NE(Error().find(message), std::string::npos) << field << ": " << Error();
  }
  Write("tokenizer_config.json", json::object());
  Write("sentence_bert_config.json", {{"do_lower_case", "true"}});
  EXPECT_NE(Error().find("do_lower_case must be true or false"), std::string::npos) << Error();
}

}  // namespace
}  // namespace tokenbatch::hf
