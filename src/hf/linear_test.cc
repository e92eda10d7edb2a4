// Linear's int8 mode: the input range it observes, and the outlier input
// features it keeps in float32 (linear.h), against at::linear in float32.
#include "hf/linear.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace tokenbatch::hf {
namespace {

constexpr int64_t kIn = 64, kOut = 48, kRows = 40, kOutlier = 11;

// Activations of unit scale, but for one feature a hundred times wider: the
// shape of a transformer's outlier feature.
at::Tensor Activations(int64_t seed) {
  at::manual_seed(seed);
  at::Tensor x = at::randn({kRows, kIn});
  x.select(1, kOutlier).mul_(100.0);
  return x;
}

Linear Layer(at::Tensor* weight, at::Tensor* bias) {
  at::manual_seed(7);
  *weight = at::randn({kOut, kIn}) * 0.1;
  *bias = at::randn({kOut});
  return Linear(*weight, *bias);
}

// `layer` after a call on Activations(1) while observing: its calibration.
void Calibrate(Linear& layer) {
  layer.ObserveInputRange(true);
  (void)layer(Activations(1));
  layer.ObserveInputRange(false);
}

double RelativeError(const at::Tensor& got, const at::Tensor& want) {
  return (got - want).norm().item<double>() / want.norm().item<double>();
}

class LinearInt8Test : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(UseInt8Engine().ok()); }
};

TEST_F(LinearInt8Test, ObservingLeavesTheFloatOutputExact) {
  at::Tensor w, b;
  Linear layer = Layer(&w, &b);
  const at::Tensor x = Activations(1);
  layer.ObserveInputRange(true);
  const at::Tensor y = layer(x);
  layer.ObserveInputRange(false);
  EXPECT_TRUE(at::equal(y, at::linear(x, w, b)));
}

TEST_F(LinearInt8Test, KeepingTheOutlierFeatureInFloatRestoresTheOtherFeatures) {
  at::Tensor w, b;
  Linear plain = Layer(&w, &b);
  ASSERT_TRUE(plain.QuantizeInt8(1).ok());  // nothing observed: no feature kept in float32
  Linear split = Layer(&w, &b);
  Calibrate(split);
  ASSERT_TRUE(split.QuantizeInt8(1).ok());
  ASSERT_TRUE(plain.quantized() && split.quantized());

  // Held-out activations. The outlier feature's own share of the output is
  // exact in both; the others lose their resolution only in `plain`.
  const at::Tensor x = Activations(2);
  const at::Tensor want = at::linear(x, w, b);
  const at::Tensor others = x.index_fill(1, at::tensor({kOutlier}), 0.0);
  const at::Tensor others_want = at::linear(others, w, at::Tensor());
  const double plain_error = RelativeError(plain(x) - (want - others_want), others_want);
  const double split_error = RelativeError(split(x) - (want - others_want), others_want);
  std::printf("relative error of the other features: %.5f plain, %.5f split\n", plain_error, split_error);
  EXPECT_LT(split_error, 0.04);  // 8-bit activations (7-bit with reduce_range) on unit-scale values
  EXPECT_GT(plain_error, 5 * split_error);
}

TEST_F(LinearInt8Test, TheSplitTakesAnyLeadingShapeAndStrides) {
  at::Tensor w, b;
  Linear layer = Layer(&w, &b);
  Calibrate(layer);
  ASSERT_TRUE(layer.QuantizeInt8(4).ok());
  // As in a forward: the activations are inference tensors, changed in place.
  c10::InferenceMode guard;
  const at::Tensor x = Activations(3);
  const at::Tensor before = x.clone();
  const at::Tensor flat = layer(x);
  // [2, 20, in], and the same values through a transposed (non-contiguous) view.
  const at::Tensor batched = layer(x.view({2, kRows / 2, kIn}));
  const at::Tensor strided = layer(x.t().contiguous().t());
  EXPECT_TRUE(at::equal(x, before));  // the kept features, zeroed during each call, are back
  ASSERT_EQ(batched.sizes(), (at::IntArrayRef{2, kRows / 2, kOut}));
  EXPECT_TRUE(at::allclose(batched.view({kRows, kOut}), flat, 1e-5, 1e-4));
  EXPECT_TRUE(at::allclose(strided, flat, 1e-5, 1e-4));
  EXPECT_LT(RelativeError(flat, at::linear(x, w, b)), 0.02);
}

TEST_F(LinearInt8Test, WeightsThatAreNotFloat32AreRefused) {
  Linear layer(at::randn({kOut, kIn}).to(at::kBFloat16), at::Tensor());
  const absl::Status s = layer.QuantizeInt8(4);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("float32 weights on the CPU"), std::string::npos);
}

}  // namespace
}  // namespace tokenbatch::hf
