// ResolveServeConfig: serve's flags and files to options, without a process.
#include "cli/serve_config.h"

#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::cli {
namespace {

using ::testing::HasSubstr;

// The files of a served model directory "models/minilm" with a tokenizer and
// one prompt.
ServeFiles DirectoryFiles() {
  ServeFiles f;
  f.bundled_tokenizer = "bundled/qwen3.json";
  f.model_dir = "models/minilm";
  f.directory = ModelDirectoryFacts{.prompts = {{"query", "query: "}},
                                    .default_prompt_name = "",
                                    .tokenizer_path = "models/minilm/tokenizer.json",
                                    .name = "minilm"};
  return f;
}

// A calibration measured on the CPU for inputs up to 512 tokens and 32 rows.
backend::CalibrationFile Calibration() {
  backend::CalibrationFile c;
  c.device = "cpu";
  c.memory = backend::QuadraticFit{.c0 = 1000, .c1 = 10, .c2 = 0.5};
  c.limits = backend::BudgetLimits{.memory_budget_bytes = 1 << 30, .max_input_tokens = 512, .max_batch_size = 32};
  c.recommendation = backend::Recommendation{.sum_tokens = 8000, .padded_tokens = 6000, .memory_bytes = 900000};
  c.fingerprint = backend::ModelFingerprint{.architecture = "bert", .hidden_size = 384, .num_layers = 6,
                                            .num_heads = 12, .vocab_size = 30522, .dtype = "float32",
                                            .execution = "packed", .attention = "sdpa"};
  return c;
}

TEST(ResolveServeConfig, DefaultsServeTheDirectoryPackedWithTeiDefaults) {
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(ServeArgs{}, DirectoryFiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->encoder.kind, EncoderChoice::Kind::kHfDirectory);
  EXPECT_EQ(c->encoder.hf.model_dir, "models/minilm");
  EXPECT_EQ(c->encoder.hf.execution, hf::Execution::kPacked);
  EXPECT_EQ(c->encoder.hf.attention, hf::AttentionImplementation::kAuto);
  EXPECT_FALSE(c->encoder.hf.normalize.has_value());  // the directory's Normalize module decides
  const SchedulerOptions& s = c->service.batcher.scheduler;
  // Packed runs compute no padding: budgeted by the sum, with no padding floor.
  EXPECT_EQ(s.cost_model.name(), "sum");
  EXPECT_EQ(s.length_aware_min_padding_efficiency, 0.0);
  EXPECT_EQ(s.max_batch_tokens, SchedulerOptions{}.max_batch_tokens);
  EXPECT_EQ(s.max_batch_size, SchedulerOptions{}.max_batch_size);
  EXPECT_EQ(s.max_wait, SchedulerOptions{}.max_wait);
  EXPECT_TRUE(s.adaptive_wait);
  EXPECT_EQ(s.policy, PackingPolicy::kLengthAware);
  EXPECT_EQ(s.oversize, OversizePolicy::kReject);
  EXPECT_TRUE(c->service.auto_truncate);  // TEI's
  EXPECT_EQ(c->service.batcher.shutdown_on_destroy, ShutdownMode::kDrain);
  EXPECT_EQ(c->server.drain, ShutdownMode::kDrain);
  EXPECT_EQ(c->tokenizer, "models/minilm/tokenizer.json");
  EXPECT_EQ(c->server.model_name, "minilm");
  EXPECT_EQ(c->server.port, server::ServerOptions{}.port);
  EXPECT_EQ(c->service.prompts.size(), 1u);
  EXPECT_EQ(c->service.default_prompt, "");
  EXPECT_TRUE(c->warnings.empty());
}

TEST(ResolveServeConfig, TheDirectorysTokenizerSettingsAndPairTruncation) {
  absl::StatusOr<ServeConfig> plain = ResolveServeConfig(ServeArgs{}, DirectoryFiles());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->tokenizer_options.lowercase);
  EXPECT_EQ(plain->service.truncation_direction, server::TruncationDirection::kRight);
  EXPECT_EQ(plain->service.pair_truncation, tokenizer::PairTruncation::kLongestFirst);  // CrossEncoder's and TEI's

  ServeFiles files = DirectoryFiles();
  files.directory->tokenizer_options.lowercase = true;
  files.directory->truncate_left = true;
  files.directory->torch_dtype = "bfloat16";
  ServeArgs only_second;
  only_second.pair_truncation = "only_second";
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(only_second, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->tokenizer_options.lowercase);
  EXPECT_EQ(c->service.truncation_direction, server::TruncationDirection::kLeft);
  EXPECT_EQ(c->service.pair_truncation, tokenizer::PairTruncation::kOnlySecond);
  ASSERT_EQ(c->warnings.size(), 1u);  // the checkpoint's dtype is not the one served
  EXPECT_NE(c->warnings[0].find("dtype bfloat16"), std::string::npos) << c->warnings[0];

  ServeArgs bad;
  bad.pair_truncation = "only_first";
  absl::StatusOr<ServeConfig> refused = ResolveServeConfig(bad, DirectoryFiles());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--pair-truncation"), std::string::npos) << refused.status();
}

TEST(ResolveServeConfig, EncoderChoices) {
  ServeArgs noop;
  noop.backend = "noop";
  noop.noop_hidden = 16;
  ServeFiles bundled;
  bundled.bundled_tokenizer = "bundled/qwen3.json";
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(noop, bundled);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->encoder.kind, EncoderChoice::Kind::kNoop);
  EXPECT_EQ(c->encoder.noop.hidden_size, 16);
  EXPECT_TRUE(c->encoder.noop.normalize);
  EXPECT_EQ(c->server.model_name, "noop");
  EXPECT_EQ(c->tokenizer, "bundled/qwen3.json");
  // Padding is computed: padded budget, the scheduler's padding floor.
  EXPECT_EQ(c->service.batcher.scheduler.cost_model.name(), "padded");
  EXPECT_EQ(c->service.batcher.scheduler.length_aware_min_padding_efficiency,
            SchedulerOptions{}.length_aware_min_padding_efficiency);

  ServeArgs torchscript;
  torchscript.model = "models/tiny.pt";
  torchscript.model_id = "ignored/dir";
  bundled.torchscript_vocab_size = 1000;
  bundled.torchscript_max_positions = 128;
  c = ResolveServeConfig(torchscript, bundled);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->encoder.kind, EncoderChoice::Kind::kTorchScript);
  EXPECT_EQ(c->encoder.torchscript.model_path, "models/tiny.pt");
  EXPECT_EQ(c->encoder.torchscript.pooling, backend::Pooling::kMean);
  EXPECT_TRUE(c->encoder.torchscript.normalize);
  EXPECT_EQ(c->encoder.torchscript.vocab_size, 1000);
  EXPECT_EQ(c->encoder.torchscript.max_positions, 128);
  EXPECT_EQ(c->server.model_name, "tiny");
  EXPECT_EQ(c->model_path, "models/tiny.pt");
  ASSERT_EQ(c->warnings.size(), 1u);  // both --model and --model-id
  EXPECT_THAT(c->warnings[0], HasSubstr("serving the TorchScript --model"));

  ServeArgs padded;
  padded.execution = "padded";
  padded.pooling = "cls";
  padded.normalize = "no";
  padded.attention = "eager";
  c = ResolveServeConfig(padded, DirectoryFiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->encoder.hf.execution, hf::Execution::kPadded);
  EXPECT_EQ(c->encoder.hf.attention, hf::AttentionImplementation::kEager);
  EXPECT_EQ(c->encoder.hf.pooling, backend::Pooling::kCls);
  EXPECT_EQ(c->encoder.hf.normalize, std::optional<bool>(false));
  EXPECT_EQ(c->service.batcher.scheduler.cost_model.name(), "padded");
}

TEST(ResolveServeConfig, FlagsThatDependOnEachOther) {
  ServeArgs split;
  split.oversize = "split";
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(split, DirectoryFiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->service.auto_truncate);  // long inputs reach the scheduler whole

  ServeArgs prompt;
  prompt.default_prompt_name = "query";
  c = ResolveServeConfig(prompt, DirectoryFiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.default_prompt, "query: ");

  ServeArgs agent;
  agent.lb_agent_port = 9090;
  agent.lb_agent_backlog_ms = 250;
  agent.shutdown = "cancel";
  agent.shutdown_delay_ms = 1500;
  c = ResolveServeConfig(agent, DirectoryFiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server.lb_agent_port, std::optional<std::uint16_t>(9090));
  EXPECT_EQ(c->server.half_weight_backlog, std::chrono::microseconds(250'000));
  EXPECT_EQ(c->server.drain, ShutdownMode::kCancelQueued);
  EXPECT_EQ(c->shutdown_delay, std::chrono::milliseconds(1500));

  ServeFiles keyed = DirectoryFiles();
  keyed.api_key = "from-the-file";
  ServeArgs key_file;
  key_file.api_key_file = "key.txt";
  c = ResolveServeConfig(key_file, keyed);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server.api_key, "from-the-file");
}

TEST(ResolveServeConfig, TheCalibrationSizesTheBudgetWithinWhatItMeasured) {
  ServeFiles files = DirectoryFiles();
  files.calibration = Calibration();
  ServeArgs args;
  args.max_batch_requests = 32;
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(args, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.batcher.scheduler.max_batch_tokens, 8000);  // the sum recommendation (packed)
  EXPECT_EQ(c->service.batcher.scheduler.max_input_tokens, 512);   // the calibration's

  args.execution = "padded";
  c = ResolveServeConfig(args, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.batcher.scheduler.max_batch_tokens, 6000);

  args.cost_model = "memory";
  c = ResolveServeConfig(args, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.batcher.scheduler.cost_model.name(), "memory");
  EXPECT_EQ(c->service.batcher.scheduler.max_batch_tokens, 900000);
  // A calibrated budget is never raised to hold a longer input: the service
  // refuses one that cannot (server::ShortBudget), and the model loaded must
  // be the one measured.
  EXPECT_EQ(c->service.short_budget, server::ShortBudget::kRefuse);
  EXPECT_EQ(c->budget_origin, "--calibration " + args.calibration);
  ASSERT_TRUE(c->calibrated_fingerprint.has_value());
  EXPECT_EQ(*c->calibrated_fingerprint, *files.calibration->fingerprint);

  args.cost_model = "";
  args.max_batch_tokens = 3000;  // the flag wins
  c = ResolveServeConfig(args, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.batcher.scheduler.max_batch_tokens, 3000);
}

struct Refusal {
  std::string name;
  std::function<void(ServeArgs&, ServeFiles&)> change;
  std::string message;  // a part of the error's message
};

TEST(ResolveServeConfig, RefusesWhatCannotWorkNamingTheFlag) {
  const std::vector<Refusal> refusals = {
      {"negative wait", [](ServeArgs& a, ServeFiles&) { a.max_wait_ms = -1; }, "--max-wait-ms must be >= 0, got -1"},
      {"batch window", [](ServeArgs& a, ServeFiles&) { a.batch_window = "sometimes"; },
       "--batch-window: unknown batch window 'sometimes'; expected one of: adaptive, fixed"},
      {"policy", [](ServeArgs& a, ServeFiles&) { a.policy = "random"; },
       "--policy: unknown packing policy 'random'; expected one of: fifo, bucketed, length_aware"},
      {"oversize", [](ServeArgs& a, ServeFiles&) { a.oversize = "drop"; }, "--oversize: unknown oversize policy"},
      {"shutdown", [](ServeArgs& a, ServeFiles&) { a.shutdown = "abort"; }, "--shutdown: unknown shutdown mode"},
      {"execution", [](ServeArgs& a, ServeFiles&) { a.execution = "ragged"; }, "--execution: unknown execution"},
      {"attention", [](ServeArgs& a, ServeFiles&) { a.attention = "flash"; },
       "--attn-implementation: unknown attention implementation \"flash\"; expected one of: auto, sdpa, eager"},
      {"pooling", [](ServeArgs& a, ServeFiles&) { a.pooling = "max"; }, "--pooling: unknown pooling \"max\""},
      {"negative slack", [](ServeArgs& a, ServeFiles&) { a.anchor_slack_us = -2; }, "--anchor-slack-us must be >= 0"},
      {"negative budget", [](ServeArgs& a, ServeFiles&) { a.max_batch_tokens = -5; },
       "--max-batch-tokens must be >= 0, got -5"},
      {"cost model", [](ServeArgs& a, ServeFiles&) { a.cost_model = "flops"; }, "--cost-model: unknown cost model"},
      {"memory without calibration", [](ServeArgs& a, ServeFiles&) { a.cost_model = "memory"; },
       "--cost-model memory needs --calibration FILE"},
      {"auto-truncate with split",
       [](ServeArgs& a, ServeFiles&) {
         a.oversize = "split";
         a.auto_truncate_given = true;
       },
       "--auto-truncate cuts long inputs before --oversize split"},
      {"normalize", [](ServeArgs& a, ServeFiles&) { a.normalize = "maybe"; },
       "--normalize must be true or false, got maybe"},
      {"backend", [](ServeArgs& a, ServeFiles&) { a.backend = "gpu"; }, "--backend must be torch or noop, got gpu"},
      {"noop width",
       [](ServeArgs& a, ServeFiles&) {
         a.backend = "noop";
         a.noop_hidden = 0;
       },
       "--noop-hidden must be >= 1, got 0"},
      {"both prompts",
       [](ServeArgs& a, ServeFiles&) {
         a.default_prompt = "q: ";
         a.default_prompt_name = "query";
       },
       "pass --default-prompt or --default-prompt-name, not both"},
      {"unknown prompt", [](ServeArgs& a, ServeFiles&) { a.default_prompt_name = "passage"; },
       "--default-prompt-name passage: the model has no such prompt"},
      {"directory without a tokenizer", [](ServeArgs&, ServeFiles& f) { f.directory->tokenizer_path = ""; },
       "--model-id models/minilm has no tokenizer.json; pass --tokenizer"},
      {"key twice",
       [](ServeArgs& a, ServeFiles&) {
         a.api_key = "k";
         a.api_key_file = "key.txt";
       },
       "--api-key-file is given and a key is set too"},
      {"small header limit", [](ServeArgs& a, ServeFiles&) { a.header_limit = 100; },
       "--header-limit must be >= 1024 bytes, got 100"},
      {"negative shutdown delay", [](ServeArgs& a, ServeFiles&) { a.shutdown_delay_ms = -1; },
       "--shutdown-delay-ms must be >= 0"},
      {"agent backlog", [](ServeArgs& a, ServeFiles&) { a.lb_agent_backlog_ms = 0; },
       "--lb-agent-backlog-ms must be a positive number"},
      {"agent port", [](ServeArgs& a, ServeFiles&) { a.lb_agent_port = a.port; },
       "--lb-agent-port must differ from --port"},
      {"calibration: longer inputs",
       [](ServeArgs& a, ServeFiles& f) {
         f.calibration = Calibration();
         a.max_batch_requests = 32;
         a.max_input_tokens = 1024;
       },
       "--max-input-tokens 1024 is above the 512 tokens"},
      {"calibration: more rows", [](ServeArgs&, ServeFiles& f) { f.calibration = Calibration(); },
       "--max-batch-requests 64 is above the max_batch_size 32"},
      {"calibration: another device",
       [](ServeArgs& a, ServeFiles& f) {
         f.calibration = Calibration();
         a.max_batch_requests = 32;
         a.device = "cuda:0";
       },
       "was measured on cpu, and this server runs on cuda:0"},
      {"calibration: several workers",
       [](ServeArgs& a, ServeFiles& f) {
         f.calibration = Calibration();
         a.max_batch_requests = 32;
         a.workers = 2;
       },
       "budgets one forward at a time, and --workers 2 runs 2 at once"},
      {"calibration: no budget for the cost model",
       [](ServeArgs& a, ServeFiles& f) {
         f.calibration = Calibration();
         f.calibration->recommendation->sum_tokens = 0;
         a.max_batch_requests = 32;
       },
       "--calibration has no recommended budget for cost model sum"},
      {"calibration: no fingerprint",
       [](ServeArgs& a, ServeFiles& f) {
         f.calibration = Calibration();
         f.calibration->fingerprint.reset();
         a.max_batch_requests = 32;
         a.calibration = "old.json";
       },
       "--calibration old.json records no fingerprint of the model it measured"},
      {"scheduler validation", [](ServeArgs& a, ServeFiles&) { a.max_batch_requests = 0; }, "max_batch_size"},
  };
  for (const Refusal& r : refusals) {
    ServeArgs args;
    ServeFiles files = DirectoryFiles();
    r.change(args, files);
    absl::StatusOr<ServeConfig> c = ResolveServeConfig(args, files);
    ASSERT_FALSE(c.ok()) << r.name;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << r.name;
    EXPECT_THAT(c.status().message(), HasSubstr(r.message)) << r.name;
  }
}

TEST(ResolveServeConfig, OnlyADefaultBudgetMayBeRaisedToHoldOneLongestInput) {
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(ServeArgs{}, DirectoryFiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.short_budget, server::ShortBudget::kRaise);
  EXPECT_EQ(c->budget_origin, "the default");
  ServeArgs chosen;
  chosen.max_batch_tokens = 100;
  c = ResolveServeConfig(chosen, DirectoryFiles());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.short_budget, server::ShortBudget::kRefuse);
  EXPECT_EQ(c->budget_origin, "--max-batch-tokens");
}

TEST(ResolveServeConfig, TheNoopBackendRunsNoModelSoNoFingerprintIsChecked) {
  ServeArgs args;
  args.backend = "noop";
  args.max_batch_requests = 32;
  ServeFiles files;
  files.bundled_tokenizer = "bundled/qwen3.json";
  files.calibration = Calibration();
  files.calibration->fingerprint.reset();
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(args, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->calibrated_fingerprint.has_value());
}

TEST(ChooseModelDirectory, TheFlagElseTheBundledOneUnlessTorchScriptOrNoop) {
  ServeArgs a;
  EXPECT_EQ(ChooseModelDirectory(a, "bundled"), "bundled");
  a.model_id = "mine";
  EXPECT_EQ(ChooseModelDirectory(a, "bundled"), "mine");
  a.model = "m.pt";
  EXPECT_EQ(ChooseModelDirectory(a, "bundled"), "");
  a.model = "";
  a.backend = "noop";
  EXPECT_EQ(ChooseModelDirectory(a, "bundled"), "");
}

}  // namespace
}  // namespace tokenbatch::cli
