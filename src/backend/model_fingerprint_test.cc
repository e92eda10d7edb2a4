#include "backend/model_fingerprint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iterator>
#include <utility>

#include "backend/calibration_file.h"

namespace tokenbatch::backend {
namespace {

using ::testing::HasSubstr;

ModelFingerprint MiniLm() {
  return {.architecture = "bert", .hidden_size = 384, .num_layers = 6, .num_heads = 12,
          .vocab_size = 30522, .dtype = "float32", .quantization = "", .execution = "packed", .attention = "sdpa",
          .pooling = "mean", .threads = 2};
}

TEST(ModelFingerprintTest, FromTheEncodersInfo) {
  EncoderInfo info{.name = "hf", .architecture = "bert", .layer_width = 384, .num_layers = 6, .num_heads = 12, .execution = "packed", .dtype = "float32", .attention = "sdpa", .pooling = "mean",
                   .vocab_size = 30522};
  // A Dense module's or a classifier's output width is not the layers' width.
  EXPECT_EQ(FingerprintOf(info, 768, 2), MiniLm());
  info.layer_width = 0;  // a TorchScript module says only its output width
  EXPECT_EQ(FingerprintOf(info, 384, 2), MiniLm());
}

TEST(ModelFingerprintTest, JsonRoundTrip) {
  const nlohmann::json j = FingerprintJson(MiniLm());
  EXPECT_EQ(j.at("hidden_size"), 384);
  EXPECT_EQ(j.at("execution"), "packed");
  absl::StatusOr<ModelFingerprint> back = ParseFingerprint(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, MiniLm());
}

TEST(ModelFingerprintTest, AMissingOrBadFieldIsNamed) {
  nlohmann::json j = FingerprintJson(MiniLm());
  j.erase("num_heads");
  EXPECT_THAT(ParseFingerprint(j).status().message(), HasSubstr("fingerprint.num_heads is missing"));
  const std::pair<const char*, nlohmann::json> bad[] = {
      {"attention", 3},         {"hidden_size", -1},   {"hidden_size", 384.9}, {"threads", true},
      {"threads", 4294967297},  {"pooling", nullptr},
  };
  const char* messages[] = {
      "fingerprint.attention must be a string",
      "fingerprint.hidden_size must be in [0, 9223372036854775806], got -1",
      "fingerprint.hidden_size must be an integer",
      "fingerprint.threads must be an integer",
      "fingerprint.threads must be in [0, 1048576], got 4294967297",
      "fingerprint.pooling must be a string",
  };
  for (std::size_t i = 0; i < std::size(bad); ++i) {
    j = FingerprintJson(MiniLm());
    j[bad[i].first] = bad[i].second;
    EXPECT_THAT(ParseFingerprint(j).status().message(), HasSubstr(messages[i])) << i;
  }
  j = FingerprintJson(MiniLm());
  j["heads"] = 12;
  EXPECT_THAT(ParseFingerprint(j).status().message(), HasSubstr("fingerprint: unknown field \"heads\""));
  EXPECT_FALSE(ParseFingerprint(nlohmann::json::array()).ok());
}

// The defects a held-back battery found: a 384-wide file accepted for a 64-wide
// model, a packed/sdpa file for --execution padded or --attn-implementation eager;
// and a head that computes more (splade's B x L x vocabulary logits).
TEST(ModelFingerprintTest, EachDifferenceIsRefusedNamingTheFieldAndBothValues) {
  EXPECT_TRUE(CheckFingerprint(MiniLm(), MiniLm(), "f.json").ok());
  struct Case {
    void (*change)(ModelFingerprint&);
    const char* message;
  };
  const Case cases[] = {
      {[](ModelFingerprint& f) { f.hidden_size = 64; }, "f.json was measured on hidden_size 384, and the model served has 64"},
      {[](ModelFingerprint& f) { f.execution = "padded"; }, "on execution packed, and the model served has padded"},
      {[](ModelFingerprint& f) { f.attention = "eager"; }, "on attention sdpa, and the model served has eager"},
      {[](ModelFingerprint& f) { f.architecture = "qwen3"; }, "on architecture bert, and the model served has qwen3"},
      {[](ModelFingerprint& f) { f.num_layers = 12; }, "on num_layers 6, and the model served has 12"},
      {[](ModelFingerprint& f) { f.num_heads = 6; }, "on num_heads 12, and the model served has 6"},
      {[](ModelFingerprint& f) { f.vocab_size = 250002; }, "on vocab_size 30522, and the model served has 250002"},
      {[](ModelFingerprint& f) { f.dtype = "bfloat16"; }, "on dtype float32, and the model served has bfloat16"},
      {[](ModelFingerprint& f) { f.quantization = "int8"; }, "on quantization none, and the model served has int8"},
      {[](ModelFingerprint& f) { f.threads = 1; }, "on threads 2, and the model served has 1"},
      {[](ModelFingerprint& f) { f.pooling = "splade"; }, "on pooling mean, and the model served has splade"},
      {[](ModelFingerprint& f) { f.pooling = ""; }, "on pooling mean, and the model served has none"},
  };
  for (const Case& c : cases) {
    ModelFingerprint served = MiniLm();
    c.change(served);
    const absl::Status s = CheckFingerprint(MiniLm(), served, "f.json");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

TEST(ModelFingerprintTest, ACalibrationFileCarriesItsFingerprint) {
  const nlohmann::json file = {
      {"device", "cpu"},
      {"grid", nlohmann::json::array({{{"batch_size", 1}, {"seq_len", 16}, {"latency_us", 10.0}, {"peak_bytes", 0}}})},
      {"memory_model", {{"c0", 0}, {"c1", 1}, {"c2", 0}}},
      {"latency_model_us", {{"a", 1}, {"b", 1}, {"c", 0}}},
      {"memory_budget_bytes", 1000},
      {"max_input_tokens", 128},
      {"max_batch_size", 0},
      {"forward_bytes", 1000},
      {"memory_limit_bytes", 2000},
      {"headroom", 0.1},
      {"loaded_process_bytes", 500},
      {"fingerprint", FingerprintJson(MiniLm())}};
  absl::StatusOr<CalibrationFile> parsed = ParseCalibrationFile(file);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->fingerprint.has_value());
  EXPECT_EQ(*parsed->fingerprint, MiniLm());
  nlohmann::json without = file;
  without.erase("fingerprint");
  parsed = ParseCalibrationFile(without);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->fingerprint.has_value());
  nlohmann::json broken = file;
  broken["fingerprint"].erase("threads");
  EXPECT_THAT(ParseCalibrationFile(broken).status().message(), HasSubstr("fingerprint.threads"));
}

}  // namespace
}  // namespace tokenbatch::backend
