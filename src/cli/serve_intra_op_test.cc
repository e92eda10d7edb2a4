// ResolveServeConfig's --intra-op: how one model's forwards share the CPU's
// cores (adaptive, or auto where it applies), and what it refuses.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/serve_config.h"

namespace tokenbatch::cli {
namespace {

using ::testing::HasSubstr;

// A served model directory "models/minilm".
ServeFiles DirectoryFiles() {
  ServeFiles f;
  f.bundled_tokenizer = "bundled/qwen3.json";
  f.model_dir = "models/minilm";
  f.directory = ModelDirectoryFacts{.tokenizer_path = "models/minilm/tokenizer.json", .name = "minilm"};
  return f;
}

TEST(ResolveServeConfig, IntraOpAdaptiveRunsOneWorkerPerCore) {
  ServeFiles files = DirectoryFiles();
  files.cpu_cores = 4;
  ServeArgs fixed;
  fixed.intra_op = "fixed";
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(fixed, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->service.batcher.intra_op.has_value());
  EXPECT_EQ(c->service.batcher.num_workers, 1);

  ServeArgs adaptive;
  adaptive.intra_op = "adaptive";
  adaptive.intra_op_narrow_hold_ms = 30;
  adaptive.threads = 0;
  c = ResolveServeConfig(adaptive, files);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->service.batcher.intra_op.has_value());
  EXPECT_EQ(c->service.batcher.intra_op->cores, 4);  // every CPU the process may use
  EXPECT_EQ(c->service.batcher.intra_op->narrow_hold, std::chrono::milliseconds(30));
  EXPECT_EQ(c->service.batcher.num_workers, 4);
  EXPECT_EQ(c->encoder.hf.num_threads, 0);  // the batcher sets each forward's

  adaptive.threads = 2;  // fewer cores than the machine's
  c = ResolveServeConfig(adaptive, files);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->service.batcher.intra_op->cores, 2);
  EXPECT_EQ(c->service.batcher.num_workers, 2);

  struct Refused {
    std::string what;
    ServeArgs args;
  };
  std::vector<Refused> refused;
  refused.push_back({"drop --workers 3", adaptive});
  refused.back().args.workers = 3;
  refused.push_back({"--intra-op-narrow-hold-ms must be >= 0", adaptive});
  refused.back().args.intra_op_narrow_hold_ms = -1;
  refused.push_back({"needs --backend torch and --device cpu", adaptive});
  refused.back().args.device = "cuda:0";
  refused.push_back({"--intra-op must be auto, fixed or adaptive, got wide", adaptive});
  refused.back().args.intra_op = "wide";
  refused.push_back({"budgets one forward at a time, and --intra-op adaptive runs up to 2 at once", adaptive});
  refused.back().args.calibration = "cal.json";
  for (const Refused& r : refused) {
    c = ResolveServeConfig(r.args, files);
    ASSERT_FALSE(c.ok()) << r.what;
    EXPECT_THAT(c.status().message(), HasSubstr(r.what));
  }
}

TEST(ResolveServeConfig, IntraOpAutoIsAdaptiveWhereItApplies) {
  ServeFiles files = DirectoryFiles();
  files.cpu_cores = 2;
  const ServeArgs defaults;
  ASSERT_EQ(defaults.intra_op, "auto");
  absl::StatusOr<ServeConfig> c = ResolveServeConfig(defaults, files);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->service.batcher.intra_op.has_value());  // libtorch on a 2-core CPU, one worker
  EXPECT_EQ(c->service.batcher.intra_op->cores, 2);
  EXPECT_EQ(c->service.batcher.num_workers, 2);

  struct Fixed {
    std::string why;
    ServeArgs args;
    int cpu_cores = 2;
  };
  std::vector<Fixed> fixed;
  fixed.push_back({"--workers asked for", defaults});
  fixed.back().args.workers = 2;
  fixed.push_back({"a GPU", defaults});
  fixed.back().args.device = "cuda:0";
  fixed.push_back({"one core", defaults, 1});
  fixed.push_back({"--threads 1", defaults});
  fixed.back().args.threads = 1;
  fixed.push_back({"a calibration budgets one forward", defaults});
  fixed.back().args.calibration = "cal.json";
  for (const Fixed& f : fixed) {
    files.cpu_cores = f.cpu_cores;
    c = ResolveServeConfig(f.args, files);
    ASSERT_TRUE(c.ok()) << f.why << ": " << c.status();
    EXPECT_FALSE(c->service.batcher.intra_op.has_value()) << f.why;
    EXPECT_EQ(c->service.batcher.num_workers, f.args.workers) << f.why;
  }
}

}  // namespace
}  // namespace tokenbatch::cli
