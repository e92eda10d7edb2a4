// ParseClassifierHead and a CrossEncoder directory read by ReadModelDirectory.
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

json Config(const std::string& architecture, const std::string& model_type) {
  return {{"architectures", {architecture}},
          {"model_type", model_type},
          {"vocab_size", 100},
          {"hidden_size", 32},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"intermediate_size", 64},
          {"max_position_embeddings", 64}};
}

absl::StatusOr<std::optional<ClassifierHead>> Parse(const json& config, const json& st = json()) {
  return ParseClassifierHead(config.dump(), st.is_null() ? "" : st.dump(), "dir/config.json");
}

TEST(ClassifierHeadTest, AnEmbeddingModelHasNone) {
  auto head = Parse(Config("BertModel", "bert"));
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_FALSE(head->has_value());
}

TEST(ClassifierHeadTest, LabelsComeFromId2LabelInIdOrder) {
  json config = Config("BertForSequenceClassification", "bert");
  config["id2label"] = {{"1", "entailment"}, {"0", "contradiction"}, {"2", "neutral"}};
  auto head = Parse(config);
  ASSERT_TRUE(head.ok() && head->has_value()) << head.status();
  EXPECT_EQ((*head)->labels, (std::vector<std::string>{"contradiction", "entailment", "neutral"}));
  // CrossEncoder's default for more than one label: the logits as they are.
  EXPECT_EQ((*head)->activation, ScoreActivation::kIdentity);
  EXPECT_EQ((*head)->architecture_class, "BertForSequenceClassification");
}

TEST(ClassifierHeadTest, ActivationFollowsCrossEncoderNewestSettingFirst) {
  json config = Config("XLMRobertaForSequenceClassification", "xlm-roberta");
  config["id2label"] = {{"0", "LABEL_0"}};
  auto by_default = Parse(config);
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_EQ((*by_default)->activation, ScoreActivation::kSigmoid);  // one label

  config["sbert_ce_default_activation_function"] = "torch.nn.modules.linear.Identity";
  EXPECT_EQ((*Parse(config))->activation, ScoreActivation::kIdentity);
  config["sentence_transformers"] = {{"activation_fn", "torch.nn.modules.activation.Tanh"}};
  EXPECT_EQ((*Parse(config))->activation, ScoreActivation::kTanh);
  EXPECT_EQ((*Parse(config, {{"activation_fn", "torch.nn.modules.activation.Sigmoid"}}))->activation,
            ScoreActivation::kSigmoid);
}

TEST(ClassifierHeadTest, NumLabelsWithoutId2LabelGivesThatManyDefaultLabels) {
  json config = Config("BertForSequenceClassification", "bert");
  EXPECT_EQ((*Parse(config))->labels, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));  // transformers' default
  config["num_labels"] = 1;  // how most rerankers are saved
  auto one = Parse(config);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)->labels, (std::vector<std::string>{"LABEL_0"}));
  EXPECT_EQ((*one)->activation, ScoreActivation::kSigmoid);
  config["num_labels"] = 3;
  EXPECT_EQ((*Parse(config))->labels, (std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"}));
  // id2label wins over a num_labels that disagrees, as in transformers.
  config["id2label"] = {{"0", "no"}, {"1", "yes"}};
  EXPECT_EQ((*Parse(config))->labels, (std::vector<std::string>{"no", "yes"}));
  config.erase("id2label");
  for (const json& bad : {json(0), json(-1), json("3"), json(1.5), json(70000)}) {
    config["num_labels"] = bad;
    auto refused = Parse(config);
    ASSERT_FALSE(refused.ok()) << bad.dump();
    EXPECT_NE(refused.status().message().find("num_labels"), std::string::npos) << refused.status();
  }
}

TEST(ClassifierHeadTest, ProblemTypeDecidesHowSeveralLabelsAreScored) {
  json config = Config("BertForSequenceClassification", "bert");
  config["num_labels"] = 3;
  EXPECT_EQ((*Parse(config))->label_scoring, backend::LabelScoring::kSoftmax);
  config["problem_type"] = "single_label_classification";
  EXPECT_EQ((*Parse(config))->label_scoring, backend::LabelScoring::kSoftmax);
  config["problem_type"] = "multi_label_classification";
  EXPECT_EQ((*Parse(config))->label_scoring, backend::LabelScoring::kSigmoid);
  config["problem_type"] = "regression";
  EXPECT_EQ((*Parse(config))->label_scoring, backend::LabelScoring::kIdentity);
  config["problem_type"] = "ranking";
  auto refused = Parse(config);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("problem_type \"ranking\" is not supported"), std::string::npos)
      << refused.status();
}

TEST(ClassifierHeadTest, ErrorsNameTheFieldAndWhatIsSupported) {
  auto other = Parse(Config("DebertaV2ForSequenceClassification", "deberta-v2"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("DebertaV2ForSequenceClassification"), std::string::npos);
  EXPECT_NE(other.status().message().find("supported: BertForSequenceClassification"), std::string::npos);

  auto mismatched = Parse(Config("BertForSequenceClassification", "xlm-roberta"));
  EXPECT_FALSE(mismatched.ok());

  json config = Config("BertForSequenceClassification", "bert");
  for (const json& labels :
       {json{{"0", "a"}, {"2", "b"}}, json{{"x", "a"}}, json{{"0", 3}}, json::object(), json::array({"a"})}) {
    config["id2label"] = labels;
    auto bad = Parse(config);
    ASSERT_FALSE(bad.ok()) << labels.dump();
    EXPECT_NE(bad.status().message().find("id2label"), std::string::npos) << bad.status();
  }
  config.erase("id2label");
  auto softmax = Parse(config, {{"activation_fn", "torch.nn.modules.activation.Softmax"}});
  ASSERT_FALSE(softmax.ok());
  EXPECT_NE(softmax.status().message().find("Softmax\" is not supported"), std::string::npos);
}

TEST(ClassifierHeadTest, CrossEncoderDirectoryIsAClassifierWithoutPooling) {
  const fs::path dir = fs::temp_directory_path() / ("tb_ce_dir_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  json config = Config("BertForSequenceClassification", "bert");
  config["id2label"] = {{"0", "LABEL_0"}};
  std::ofstream(dir / "config.json") << config.dump();
  // What sentence-transformers 6 writes for a CrossEncoder: one Transformer module.
  std::ofstream(dir / "modules.json") << json::array(
                                             {{{"idx", 0},
                                               {"name", "0"},
                                               {"path", ""},
                                               {"type", "sentence_transformers.base.modules.transformer.Transformer"}}})
                                             .dump();
  std::ofstream(dir / "config_sentence_transformers.json")
      << json{{"model_type", "CrossEncoder"}, {"activation_fn", "torch.nn.modules.linear.Identity"}}.dump();
  auto m = ReadModelDirectory(dir.string());
  fs::remove_all(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->classifier.has_value());
  EXPECT_FALSE(m->pooling.has_value());
  EXPECT_EQ(m->classifier->labels.size(), 1u);
  EXPECT_EQ(m->classifier->activation, ScoreActivation::kIdentity);
}

}  // namespace
}  // namespace tokenbatch::hf
