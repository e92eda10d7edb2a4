#include "tokenbatch/sim/gpu_model.h"

#include <cstdio>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

namespace tokenbatch::sim {
namespace {

// A toy shape small enough to compute by hand (see each test's arithmetic).
ModelShape Toy() {
  return {.name = "toy", .layers = 1, .hidden = 4, .heads = 2, .kv_heads = 2, .head_dim = 2, .intermediate = 8,
          .vocab = 10, .mlp_matrices = 2, .dtype_bytes = 2};
}
// 1e6 FLOP/s, 1e6 bytes/s, 10,000 bytes.
DeviceSpec ToyDevice(std::int64_t memory = 10000) { return {"toy", 1e-6, 1e-3, memory}; }
GpuModelOptions ToyOptions(Attention attention) {
  return {.attention = attention, .compute_efficiency = 1, .bandwidth_efficiency = 1,
          .launch_overhead_us_per_layer = 10, .reserved_bytes = 0};
}

TEST(ModelShape, Qwen3ParameterCountMatchesPublishedSize) {
  const ModelShape m = ModelShape::Qwen3Embedding0_6B();
  // Q 1024×2048 + K, V 1024×1024 each + O 2048×1024 + SwiGLU 3×1024×3072.
  EXPECT_EQ(m.ParamsPerLayer(), 2097152 + 2 * 1048576 + 2097152 + 9437184);
  EXPECT_EQ(m.Params(), 28 * 15728640 + 151669 * 1024);  // 0.596 B
}

TEST(GpuModel, EagerBatchByHand) {
  auto gpu = GpuModel::Create(Toy(), ToyDevice(), ToyOptions(Attention::kEager));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  // P = 4·4 + 2·4·4 + 4·4 + 2·4·8 = 128; params = 128 + 10·4 = 168; weights 336 B.
  EXPECT_EQ(gpu->weight_bytes(), 336);
  const std::vector<std::int64_t> lengths = {2, 4};  // B = 2, Lmax = 4: T = 8, B·L² = 32
  const BatchEstimate e = gpu->Estimate(lengths);
  EXPECT_EQ(e.computed_tokens, 8);
  EXPECT_DOUBLE_EQ(e.flops, 2.0 * 128 * 8 + 4.0 * 4 * 32);  // 2560
  // a = 2·(2·4 + 4 + 2·4 + 4 + 2·8) = 80 B/token; scores (2·8 + 2)·32 = 576 B.
  const double activations = 80.0 * 8 + 576;  // 1216
  EXPECT_DOUBLE_EQ(e.bytes_moved, 256 + 2 * activations);  // 2688
  EXPECT_DOUBLE_EQ(e.latency_us, 10 + 2688);  // memory-bound: 2688 B at 1 B/µs
  EXPECT_EQ(e.peak_bytes, 336 + 1216);
  EXPECT_FALSE(e.oom);
}

TEST(GpuModel, FlashSkipsPaddingAndScores) {
  auto gpu = GpuModel::Create(Toy(), ToyDevice(), ToyOptions(Attention::kFlash));
  ASSERT_TRUE(gpu.ok());
  const std::vector<std::int64_t> lengths = {2, 4};  // T = Σ = 6, Σ L² = 20
  const BatchEstimate e = gpu->Estimate(lengths);
  EXPECT_EQ(e.computed_tokens, 6);
  EXPECT_DOUBLE_EQ(e.flops, 2.0 * 128 * 6 + 4.0 * 4 * 20);  // 1856
  EXPECT_DOUBLE_EQ(e.bytes_moved, 256 + 2 * 480.0);         // 1216
  EXPECT_DOUBLE_EQ(e.latency_us, 10 + 1856);                // compute-bound
  EXPECT_EQ(e.peak_bytes, 336 + 480);
  EXPECT_EQ(gpu->MatchingTokenCostModel().kind(), CostModelKind::kSum);
}

TEST(GpuModel, BatchAboveCapacityIsOom) {
  auto gpu = GpuModel::Create(Toy(), ToyDevice(1500), ToyOptions(Attention::kEager));
  ASSERT_TRUE(gpu.ok());
  const std::vector<std::int64_t> big = {2, 4};  // peak 1552 > 1500
  EXPECT_TRUE(gpu->Estimate(big).oom);
  const std::vector<std::int64_t> small = {4};   // 336 + 80·4 + 18·16 = 944
  EXPECT_EQ(gpu->Estimate(small).peak_bytes, 944);
  EXPECT_FALSE(gpu->Estimate(small).oom);
}

TEST(GpuModel, MemoryCostModelMatchesActivationEstimate) {
  auto gpu = GpuModel::Create(ModelShape::Qwen3Embedding0_6B(), *DevicePreset("a10g"), {});
  ASSERT_TRUE(gpu.ok());
  auto cost = gpu->MatchingMemoryCostModel();
  ASSERT_TRUE(cost.ok()) << cost.status();
  const std::vector<std::int64_t> lengths = {300, 17, 512, 40};
  BatchShape shape;
  for (auto l : lengths) shape = shape.With(l);
  EXPECT_NEAR(static_cast<double>(cost->Cost(shape)),
              static_cast<double>(gpu->Estimate(lengths).peak_bytes - gpu->weight_bytes()), 2.0);
  EXPECT_EQ(gpu->MatchingTokenCostModel().kind(), CostModelKind::kPadded);
}

TEST(GpuModel, Qwen3OnA10GOutOfMemoryThreshold) {
  auto gpu = GpuModel::Create(ModelShape::Qwen3Embedding0_6B(), *DevicePreset("a10g"), {});
  ASSERT_TRUE(gpu.ok());
  // 32 × 3,000 tokens: the scores alone are 32·16·3000²·8 B = 36.9 GB > 24 GB.
  const std::vector<std::int64_t> long_batch(32, 3000);
  EXPECT_TRUE(gpu->Estimate(long_batch).oom);
  // One 3,000-token request: 1.2 GB weights + 1.2 GB scores + activations.
  const std::vector<std::int64_t> one = {3000};
  EXPECT_FALSE(gpu->Estimate(one).oom);
}

TEST(GpuModel, CalibrationReplacesFormulas) {
  Calibration c{.mem_c0 = 100, .mem_c1 = 10, .mem_c2 = 1, .lat_a = 5, .lat_b = 2, .lat_c = 0.5,
                .model_load_bytes = 1000};
  auto gpu = GpuModel::Create(Toy(), ToyDevice(), ToyOptions(Attention::kFlash), c);
  ASSERT_TRUE(gpu.ok());
  const std::vector<std::int64_t> lengths = {2, 4};  // padded: B·L = 8, B·L² = 32
  const BatchEstimate e = gpu->Estimate(lengths);
  EXPECT_EQ(e.peak_bytes, 1000 + 100 + 80 + 32);
  EXPECT_DOUBLE_EQ(e.latency_us, 5 + 16 + 16);
  EXPECT_EQ(gpu->MatchingTokenCostModel().kind(), CostModelKind::kPadded);
}

// Writes a calibration file with the fit {c0 1, c1 2, c2 3} and {a 4, b 5, c 6}
// plus `fields` (a JSON object's members, or "") and loads it.
absl::StatusOr<Calibration> LoadWith(const std::string& fields) {
  const std::string path = ::testing::TempDir() + "/calibration.json";
  {
    std::ofstream out(path);
    out << R"({"memory_model": {"c0": 1, "c1": 2, "c2": 3}, "latency_model_us": {"a": 4, "b": 5, "c": 6})"
        << (fields.empty() ? "" : ", ") << fields << "}";
  }
  absl::StatusOr<Calibration> c = LoadCalibration(path);
  std::remove(path.c_str());
  return c;
}

TEST(GpuModel, LoadCalibrationReadsCalibrateJson) {
  auto c = LoadWith(R"("model_load_bytes": 77, "device": "cpu", "threads": 2, "memory_limit_bytes": 6000,
                       "max_input_tokens": 256, "model": {"name": "minilm", "path": "m.pt", "layers": 6,
                       "max_positions": 512})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mem_c2, 3);
  EXPECT_EQ(c->lat_b, 5);
  EXPECT_EQ(c->model_load_bytes, 77);
  EXPECT_TRUE(c->on_cpu());
  EXPECT_FALSE(c->packed());
  EXPECT_EQ(c->threads, 2);
  EXPECT_EQ(c->max_input_tokens, 256);
  EXPECT_EQ(c->max_positions, 512);
  EXPECT_EQ(c->model_name, "minilm");
  EXPECT_EQ(c->model_path, "m.pt");
  EXPECT_EQ(c->layers, 6);
  const DeviceSpec cpu = CalibratedDevice(*c, ToyDevice());
  EXPECT_EQ(cpu.name, "cpu as calibrated in " + ::testing::TempDir() + "/calibration.json");
  EXPECT_EQ(cpu.memory_bytes, 6000);
  auto gpu = GpuModel::Create(Toy(), cpu, {.reserved_bytes = 0}, *c);
  ASSERT_TRUE(gpu.ok()) << gpu.status();  // no datasheet needed
  EXPECT_EQ(gpu->usable_bytes(), 6000);
  EXPECT_DOUBLE_EQ(gpu->failed_forward_fraction(), 1.0 / 6);
}

TEST(GpuModel, PackedCalibrationCostsRealTokens) {
  auto packed = LoadWith(R"("model": {"execution": "packed"})");
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_TRUE(packed->packed());
  auto gpu = GpuModel::Create(Toy(), ToyDevice(), {}, *packed);
  ASSERT_TRUE(gpu.ok());
  // T = 10 + 30 = 40 real tokens, A = 10² + 30² = 1,000 (padded: 60 and 1,800).
  const std::vector<std::int64_t> lengths{10, 30};
  const BatchEstimate e = gpu->Estimate(lengths);
  EXPECT_EQ(e.computed_tokens, 40);
  EXPECT_DOUBLE_EQ(e.latency_us, 4 + 5 * 40 + 6 * 1000);
  EXPECT_EQ(e.peak_bytes, 1 + 2 * 40 + 3 * 1000);
  EXPECT_EQ(gpu->MatchingTokenCostModel().name(), "sum");
  // Without layers a failed call costs the whole forward.
  EXPECT_DOUBLE_EQ(gpu->failed_forward_fraction(), 1.0);
}

TEST(GpuModel, LoadCalibrationNamesWhatIsWrong) {
  for (const auto& [fields, expected] :
       std::vector<std::pair<std::string, std::string>>{{R"("threads": "two")", "threads"},
                                                        {R"("model": "minilm")", "model must be an object"},
                                                        {R"("model": {"layers": -1})", "layers"}}) {
    auto c = LoadWith(fields);
    ASSERT_FALSE(c.ok()) << fields;
    EXPECT_NE(c.status().message().find(expected), std::string::npos) << c.status();
  }
  const std::string path = ::testing::TempDir() + "/calibration_partial.json";
  {
    std::ofstream out(path);
    out << R"({"memory_model": {"c0": 1, "c1": 2}})";
  }
  auto bad = LoadCalibration(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("memory_model.c2"), std::string::npos);
  EXPECT_EQ(LoadCalibration(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(GpuModel, RejectsBadInputs) {
  EXPECT_FALSE(DevicePreset("v100").ok());
  EXPECT_FALSE(ParseAttention("sdpa").ok());
  ModelShape m = Toy();
  m.layers = 0;
  EXPECT_FALSE(GpuModel::Create(m, ToyDevice(), {}).ok());
  GpuModelOptions o;
  o.compute_efficiency = 1.5;
  EXPECT_FALSE(GpuModel::Create(Toy(), ToyDevice(), o).ok());
  EXPECT_EQ(DevicePreset("h200")->memory_bytes, 141'000'000'000);
}

}  // namespace
}  // namespace tokenbatch::sim
