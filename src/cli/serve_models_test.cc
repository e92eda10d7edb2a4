// Several models in one serve: the per-model flags split into one ServeArgs
// per model, and the plan's checks and shared device budget, without a process.
#include "cli/serve_models.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::cli {
namespace {

using ::testing::HasSubstr;

ServeFiles Directory(const std::string& name) {
  ServeFiles f;
  f.bundled_tokenizer = "bundled/qwen3.json";
  f.model_dir = "models/" + name;
  f.directory = ModelDirectoryFacts{.tokenizer_path = "models/" + name + "/tokenizer.json", .name = name};
  return f;
}

// A CPU calibration for inputs up to 512 tokens: bytes = 1000 + 10·B·L + 0.5·B·L²,
// its budget shrunk by a fifth for the fit's shortfall.
backend::CalibrationFile Calibration(std::string device = "cpu") {
  backend::CalibrationFile c;
  c.device = std::move(device);
  c.memory = backend::QuadraticFit{.c0 = 1000, .c1 = 10, .c2 = 0.5};
  c.limits = backend::BudgetLimits{.memory_budget_bytes = 800'000'000,
                                   .max_input_tokens = 512,
                                   .max_batch_size = 64,
                                   .forward_limit_bytes = 1'000'000'000};
  c.recommendation = backend::Recommendation{.sum_tokens = 8000, .padded_tokens = 6000, .memory_bytes = 800'000'000};
  c.fingerprint = backend::ModelFingerprint{.architecture = "bert", .hidden_size = 384, .num_layers = 6,
                                            .num_heads = 12, .vocab_size = 30522, .dtype = "float32",
                                            .execution = "packed", .attention = "sdpa"};
  return c;
}

struct Resolved {
  std::vector<ServeArgs> args;
  std::vector<ServeFiles> files;
  absl::StatusOr<ServePlan> plan = absl::UnknownError("not resolved");
};

// Splits, resolves each model as serve does, and plans; `files` by model.
Resolved Plan(const ServeArgs& shared, const PerModelArgs& per_model, std::vector<ServeFiles> files) {
  Resolved r;
  absl::StatusOr<std::vector<ServeArgs>> args = SplitPerModel(shared, per_model);
  EXPECT_TRUE(args.ok()) << args.status();
  if (!args.ok()) return r;
  r.args = *args;
  r.files = std::move(files);
  std::vector<ServeConfig> configs;
  for (std::size_t m = 0; m < r.args.size(); ++m) {
    absl::StatusOr<ServeConfig> c = ResolveServeConfig(r.args[m], r.files[m]);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return r;
    configs.push_back(*c);
  }
  r.plan = ResolveServePlan(std::move(configs), r.args, r.files);
  return r;
}

TEST(SplitPerModel, OneModelByDefault) {
  ServeArgs shared;
  shared.port = 9000;
  absl::StatusOr<std::vector<ServeArgs>> args = SplitPerModel(shared, {});
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->size(), 1u);
  EXPECT_EQ((*args)[0].model_id, "");
  EXPECT_EQ((*args)[0].port, 9000);
}

TEST(SplitPerModel, AFlagGivenOnceHoldsForEveryModelAndOncePerModelForEach) {
  PerModelArgs p{.model_id = {"dirs/embed", "dirs/rerank"},
                 .pooling = {"mean"},
                 .max_batch_tokens = {8192, 2048},
                 .device_memory_weight = {3, 1}};
  absl::StatusOr<std::vector<ServeArgs>> args = SplitPerModel(ServeArgs{}, p);
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->size(), 2u);
  EXPECT_EQ((*args)[0].model_id, "dirs/embed");
  EXPECT_EQ((*args)[1].model_id, "dirs/rerank");
  EXPECT_EQ((*args)[0].pooling, "mean");
  EXPECT_EQ((*args)[1].pooling, "mean");
  EXPECT_EQ((*args)[0].max_batch_tokens, 8192);
  EXPECT_EQ((*args)[1].max_batch_tokens, 2048);
  EXPECT_EQ((*args)[0].device_memory_weight, 3);
  EXPECT_EQ((*args)[1].max_batch_requests, ServeArgs{}.max_batch_requests);  // not given: the default
}

TEST(SplitPerModel, NamesAloneMakeSeveralModels) {
  // Two noop models (no directory), told apart by name.
  ServeArgs shared;
  shared.backend = "noop";
  absl::StatusOr<std::vector<ServeArgs>> args = SplitPerModel(shared, {.served_model_name = {"a", "b"}});
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->size(), 2u);
  EXPECT_EQ((*args)[1].served_model_name, "b");
  EXPECT_EQ((*args)[1].backend, "noop");
}

TEST(SplitPerModel, AFlagGivenNeitherOnceNorOncePerModelIsRefused) {
  absl::StatusOr<std::vector<ServeArgs>> args =
      SplitPerModel(ServeArgs{}, {.model_id = {"a", "b", "c"}, .calibration = {"x.json", "y.json"}});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(),
              HasSubstr("--calibration is given 2 times for 3 models: give it once, for every model, or once per model"));
}

TEST(ResolveServePlan, TwoModelsWithOneNameAreRefused) {
  Resolved r = Plan(ServeArgs{}, {.model_id = {"a/minilm", "b/minilm"}}, {Directory("minilm"), Directory("minilm")});
  ASSERT_FALSE(r.plan.ok());
  EXPECT_THAT(r.plan.status().message(), HasSubstr("two models are named \"minilm\": give each its own "
                                                   "--served-model-name"));
  r = Plan(ServeArgs{}, {.model_id = {"a/minilm", "b/minilm"}, .served_model_name = {"a", "b"}},
           {Directory("minilm"), Directory("minilm")});
  ASSERT_TRUE(r.plan.ok()) << r.plan.status();
  EXPECT_EQ(r.plan->models[1].server.model_name, "b");
  EXPECT_FALSE(r.plan->device_memory.has_value());
}

TEST(ResolveServePlan, IntraOpAdaptiveIsForOneModel) {
  ServeArgs adaptive;
  adaptive.intra_op = "adaptive";
  Resolved r = Plan(adaptive, {.model_id = {"a/minilm", "b/bge"}}, {Directory("minilm"), Directory("bge")});
  ASSERT_FALSE(r.plan.ok());
  EXPECT_THAT(r.plan.status().message(), HasSubstr("serve them with --intra-op fixed"));
  r = Plan(adaptive, {.model_id = {"a/minilm"}}, {Directory("minilm")});
  ASSERT_TRUE(r.plan.ok()) << r.plan.status();
  EXPECT_TRUE(r.plan->models[0].service.batcher.intra_op.has_value());

  // auto (the default) is fixed for several models, adaptive for one.
  std::vector<ServeFiles> two{Directory("minilm"), Directory("bge")};
  for (ServeFiles& f : two) f.cpu_cores = 2;
  r = Plan(ServeArgs{}, {.model_id = {"a/minilm", "b/bge"}}, two);
  ASSERT_TRUE(r.plan.ok()) << r.plan.status();
  for (const ServeConfig& c : r.plan->models) EXPECT_FALSE(c.service.batcher.intra_op.has_value());
  r = Plan(ServeArgs{}, {.model_id = {"a/minilm"}}, {two[0]});
  ASSERT_TRUE(r.plan.ok()) << r.plan.status();
  EXPECT_TRUE(r.plan->models[0].service.batcher.intra_op.has_value());
}

TEST(ResolveServePlan, TheDeviceMemoryIsSharedByTheCalibratedModels) {
  ServeArgs shared;
  shared.device_memory = 2'000'000'000;
  std::vector<ServeFiles> files{Directory("embed"), Directory("rerank")};
  files[0].calibration = Calibration();
  files[1].calibration = Calibration();
  Resolved r = Plan(shared,
                    {.model_id = {"embed", "rerank"},
                     .calibration = {"embed.json", "rerank.json"},
                     .device_memory_weight = {3, 1},
                     .device_memory_guaranteed = {0, 100'000'000}},
                    files);
  ASSERT_TRUE(r.plan.ok()) << r.plan.status();
  ASSERT_TRUE(r.plan->device_memory.has_value());
  const DeviceMemoryBudgetOptions& budget = *r.plan->device_memory;
  EXPECT_EQ(budget.limit_bytes, 2'000'000'000);
  ASSERT_EQ(budget.models.size(), 2u);
  EXPECT_EQ(budget.models[0].name, "embed");
  EXPECT_EQ(budget.models[0].weight, 3);
  EXPECT_EQ(budget.models[1].guaranteed_bytes, 100'000'000);
  // The fit raised by its shortfall (1e9 / 8e8 = 1.25): the longest input of
  // 512 tokens alone is 1.25 · (1000 + 10·512 + 0.5·512²) bytes.
  ASSERT_EQ(r.plan->memory_models.size(), 2u);
  EXPECT_EQ(r.plan->memory_models[0].c1(), 12.5);
  EXPECT_EQ(budget.models[0].largest_batch_bytes, 1.25 * (1000 + 10 * 512 + 0.5 * 512 * 512));
  // Several workers are safe under the shared budget, which admits each batch by its bytes.
  shared.workers = 2;
  EXPECT_TRUE(Plan(shared, {.model_id = {"embed", "rerank"}, .calibration = {"embed.json", "rerank.json"}}, files)
                  .plan.ok());
}

TEST(ResolveServePlan, DeviceMemoryRefusalsNameTheModelAndTheCause) {
  ServeArgs shared;
  shared.device_memory = 2'000'000'000;
  std::vector<ServeFiles> files{Directory("embed"), Directory("rerank")};
  files[0].calibration = Calibration();
  Resolved r = Plan(shared, {.model_id = {"embed", "rerank"}, .calibration = {"embed.json", ""}}, files);
  ASSERT_FALSE(r.plan.ok());
  EXPECT_THAT(r.plan.status().message(), HasSubstr("model \"rerank\" has no --calibration"));

  // The noop backend, which runs on no device, takes any calibration: two must still agree.
  ServeArgs noop = shared;
  noop.backend = "noop";
  std::vector<ServeFiles> noop_files(2);
  noop_files[0].calibration = Calibration();
  noop_files[1].calibration = Calibration("cuda:0");
  r = Plan(noop, {.served_model_name = {"embed", "rerank"}, .calibration = {"embed.json", "rerank.json"}},
           noop_files);
  ASSERT_FALSE(r.plan.ok());
  EXPECT_THAT(r.plan.status().message(), HasSubstr("model \"rerank\" was calibrated on cuda:0 but \"embed\" on cpu"));

  // The reranker's guarantee leaves the embedder less than its longest input needs.
  files[1].calibration = Calibration();
  shared.device_memory = 300'000;
  r = Plan(shared,
           {.model_id = {"embed", "rerank"},
            .calibration = {"embed.json", "rerank.json"},
            .device_memory_guaranteed = {0, 200'000}},
           files);
  ASSERT_FALSE(r.plan.ok());
  EXPECT_THAT(r.plan.status().message(),
              HasSubstr("--device-memory 300000: the memory models do not fit the limit together: model embed's "
                        "longest input alone needs 171490 bytes, and the limit of 300000 bytes less the other models' guarantees leaves it 100000"));

  ServeArgs no_limit;
  r = Plan(no_limit, {.model_id = {"embed", "rerank"}, .device_memory_weight = {2}},
           {Directory("embed"), Directory("rerank")});
  ASSERT_FALSE(r.plan.ok());
  EXPECT_THAT(r.plan.status().message(), HasSubstr("share --device-memory: pass it too"));
}

TEST(SplitPerModel, QuantizeIsPerModelAndAppliesToDirectoriesOnly) {
  absl::StatusOr<std::vector<ServeArgs>> args =
      SplitPerModel(ServeArgs{}, {.model_id = {"embed", "rerank"}, .quantize = {"int8", "none"}});
  ASSERT_TRUE(args.ok()) << args.status();
  absl::StatusOr<ServeConfig> c = ResolveServeConfig((*args)[0], Directory("embed"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->encoder.hf.quantize, hf::Quantization::kInt8);
  c = ResolveServeConfig((*args)[1], Directory("rerank"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->encoder.hf.quantize, hf::Quantization::kNone);
  ServeArgs noop;
  noop.backend = "noop";
  noop.quantize = "int8";
  c = ResolveServeConfig(noop, ServeFiles{});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--quantize applies to a --model-id directory"));
  ServeArgs bad;
  bad.quantize = "int4";
  c = ResolveServeConfig(bad, Directory("embed"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("--quantize"));
}

}  // namespace
}  // namespace tokenbatch::cli
