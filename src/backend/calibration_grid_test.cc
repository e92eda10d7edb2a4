// RunCalibrationGrid on the synthetic tiny model (scripts/gen_models.py).
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenbatch/backend/calibration.h"
#include "testing/build_paths.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

absl::StatusOr<std::unique_ptr<TorchEncoder>> Load(const std::string& name) {
  EncoderOptions options;
  options.model_path = tokenbatch::testing::ModelDir() + "/" + name + ".pt";
  options.num_threads = 1;
  options.vocab_size = 1000;
  EXPECT_TRUE(std::filesystem::exists(options.model_path))
      << options.model_path << "; run /usr/bin/python3 scripts/gen_models.py --out "
      << "build/cache/models from the repository root";
  return TorchEncoder::Load(options);
}

TEST(RunCalibrationGridTest, MeasuresEveryPlannedShapeInOrder) {
  absl::StatusOr<std::unique_ptr<TorchEncoder>> encoder = Load("tiny");
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  GridOptions options;
  options.batch_sizes = {1, 64};
  options.seq_lens = {8, 128};
  options.warmup = 0;
  options.repeats = 1;
  std::vector<size_t> seen;
  absl::StatusOr<std::vector<GridPoint>> points = RunCalibrationGrid(
      **encoder, options, [&](size_t done, size_t total, const GridPoint&) {
        EXPECT_EQ(total, 4u);
        seen.push_back(done);
      });
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_EQ(seen, (std::vector<size_t>{1, 2, 3, 4}));
  ASSERT_EQ(points->size(), 4u);
  const std::vector<std::pair<int64_t, int64_t>> order = {{1, 8}, {1, 128}, {64, 8}, {64, 128}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*points)[i].batch_size, order[i].first);
    EXPECT_EQ((*points)[i].seq_len, order[i].second);
    EXPECT_GT((*points)[i].latency_us, 0.0);
  }
  // [64, 128] holds fp32 attention scores [64, 4 heads, 128, 128] = 16 MiB, and the
  // softmax output beside them; the measured peak must see at least one of them.
  EXPECT_GE((*points)[3].peak_bytes, int64_t{16} << 20);
  EXPECT_GT((*points)[3].peak_bytes, (*points)[0].peak_bytes);
}

TEST(RunCalibrationGridTest, OutOfMemoryKeepsItsKindAndNamesTheShape) {
  absl::StatusOr<std::unique_ptr<TorchEncoder>> encoder = Load("tiny_oom");  // fails for B >= 4
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  GridOptions options;
  options.batch_sizes = {1, 4};
  options.seq_lens = {8};
  options.warmup = 0;
  options.repeats = 1;
  absl::StatusOr<std::vector<GridPoint>> points = RunCalibrationGrid(**encoder, options, {});
  EXPECT_EQ(GetErrorKind(points.status()), ErrorKind::kOutOfMemory) << points.status();
  EXPECT_EQ(std::string(points.status().message()).rfind("shape [4, 8]: ", 0), 0u)
      << points.status();
}

TEST(RunCalibrationGridTest, RefusesBadOptions) {
  absl::StatusOr<std::unique_ptr<TorchEncoder>> encoder = Load("tiny");
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  GridOptions options;
  options.repeats = 0;
  EXPECT_EQ(GetErrorKind(RunCalibrationGrid(**encoder, options, {}).status()),
            ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace tokenbatch::backend
