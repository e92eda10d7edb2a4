// ParseSpladeHead and sparse model directories read by ReadModelDirectory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tokenbatch/hf/model_directory.h"

namespace tokenbatch::hf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

json Config(const std::string& architecture, const std::string& model_type = "bert") {
  return {{"architectures", {architecture}}, {"model_type", model_type}, {"vocab_size", 100},
          {"hidden_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
          {"intermediate_size", 64}, {"max_position_embeddings", 64}};
}

absl::StatusOr<std::optional<SpladeHead>> Parse(const json& config, const json& pooling = json()) {
  return ParseSpladeHead(config.dump(), pooling.is_null() ? "" : pooling.dump(), "dir/1_SpladePooling/config.json");
}

TEST(SpladeHeadTest, AMaskedLmIsSparseWithTeisDefaults) {
  auto h = Parse(Config("BertForMaskedLM"));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(h->has_value());
  EXPECT_EQ((*h)->architecture_class, "BertForMaskedLM");
  EXPECT_TRUE((*h)->max_pooling);
  EXPECT_FALSE((*h)->log1p_twice);
  EXPECT_FALSE(Parse(Config("BertModel"))->has_value());
}

TEST(SpladeHeadTest, TheSpladePoolingModuleSetsPoolingAndActivation) {
  auto h = Parse(Config("BertForMaskedLM"), {{"pooling_strategy", "sum"}, {"activation_function", "log1p_relu"}});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_FALSE((*h)->max_pooling);
  EXPECT_TRUE((*h)->log1p_twice);
}

TEST(SpladeHeadTest, RefusalsNameTheFieldAndTheValue) {
  auto message = [](const absl::StatusOr<std::optional<SpladeHead>>& h) {
    EXPECT_FALSE(h.ok());
    return h.ok() ? std::string() : std::string(h.status().message());
  };
  EXPECT_THAT(message(Parse(Config("BertModel"), {{"pooling_strategy", "max"}})),
              HasSubstr("SpladePooling reads a masked-language-model head, and config.json's architectures names "
                        "\"BertModel\""));
  EXPECT_THAT(message(Parse(Config("XLMRobertaForMaskedLM", "xlm-roberta"))),
              HasSubstr("XLMRobertaForMaskedLM with model_type \"xlm-roberta\" is not supported for sparse"));
  EXPECT_THAT(message(Parse(Config("BertForMaskedLM"), {{"pooling_strategy", "mean"}})),
              HasSubstr("pooling_strategy \"mean\" is not supported (supported: max, sum)"));
  EXPECT_THAT(message(Parse(Config("BertForMaskedLM"), {{"activation_function", "gelu"}})),
              HasSubstr("activation_function \"gelu\" is not supported (supported: relu, log1p_relu)"));
}

TEST(SpladeHeadTest, SparseEncoderDirectoryIsSparseWithoutPooling) {
  const fs::path dir = fs::temp_directory_path() / ("tb_splade_dir_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "1_SpladePooling");
  std::ofstream(dir / "config.json") << Config("BertForMaskedLM").dump();
  // What sentence-transformers 6 writes for a SparseEncoder.
  std::ofstream(dir / "modules.json")
      << json::array({{{"idx", 0}, {"name", "0"}, {"path", ""},
                       {"type", "sentence_transformers.base.modules.transformer.Transformer"}},
                      {{"idx", 1}, {"name", "1"}, {"path", "1_SpladePooling"},
                       {"type", "sentence_transformers.sparse_encoder.modules.splade_pooling.SpladePooling"}}})
             .dump();
  std::ofstream(dir / "1_SpladePooling" / "config.json") << json{{"pooling_strategy", "sum"}}.dump();
  auto m = ReadModelDirectory(dir.string());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->splade.has_value());
  EXPECT_FALSE(m->splade->max_pooling);
  EXPECT_FALSE(m->pooling.has_value());
  EXPECT_FALSE(m->classifier.has_value());
  // A Normalize module after SpladePooling is refused.
  std::ofstream(dir / "modules.json")
      << json::array({{{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "Transformer"}},
                      {{"idx", 1}, {"name", "1"}, {"path", "1_SpladePooling"}, {"type", "SpladePooling"}},
                      {{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "Normalize"}}})
             .dump();
  auto normalized = ReadModelDirectory(dir.string());
  fs::remove_all(dir);
  ASSERT_FALSE(normalized.ok());
  EXPECT_THAT(normalized.status().message(), HasSubstr("a SpladePooling model takes no Dense or Normalize module"));
}

}  // namespace
}  // namespace tokenbatch::hf
