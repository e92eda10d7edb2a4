// The attention kernels (transformer.h): the choice, the private operators'
// schemas (attention_schemas.h) against the headers and the libtorch loaded,
// and the fused paths against the eager one on the CPU, in both layouts, with
// causal masks and grouped-query heads. The CUDA kernels are checked by
// scripts/gpu/gpu_check.sh, in the GPU bundle, on a GPU (docs/gpu.md).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "hf/attention_schemas.h"
#include "hf/transformer.h"

namespace tokenbatch::hf {
namespace {

std::string RegisteredSchema(const char* name) {
  const auto op = c10::Dispatcher::singleton().findSchema({name, ""});
  if (!op) return "(not registered)";
  std::ostringstream out;
  out << op->schema();
  return out.str();
}

TEST(AttentionKernelTest, PrivateOperatorSchemasAreTheGoldenOnes) {
  if (!SdpaCompiled()) {
    // libtorch 1.x: no fused kernels at all, and none is chosen.
    EXPECT_FALSE(VarlenAttentionCompiled());
    return;
  }
  EXPECT_TRUE(VarlenAttentionCompiled())
      << "this libtorch's headers declare _flash_attention_forward or _efficient_attention_forward with another "
         "schema than src/hf/attention_schemas.h: the varlen kernels were compiled out; update the calls in "
         "fused_attention.cc and the golden schemas together";
  // The library loaded at run time registers the schemas the headers declared.
  EXPECT_EQ(RegisteredSchema("aten::_flash_attention_forward"), "aten::" + std::string(kFlashAttentionForwardSchema));
  EXPECT_EQ(RegisteredSchema("aten::_efficient_attention_forward"),
            "aten::" + std::string(kEfficientAttentionForwardSchema));
}

TEST(AttentionKernelTest, ChoosesByDeviceLayoutDtypeAndHeadSize) {
  const at::Device cpu(at::kCPU), cuda(at::kCUDA, 0);
  auto choose = [](AttentionImplementation r, Execution e, const at::Device& d, at::ScalarType t, int64_t head_dim) {
    absl::StatusOr<AttentionKernel> k = ChooseAttentionKernel(r, e, d, t, head_dim);
    return k.ok() ? std::string(AttentionKernelName(*k)) : "error: " + std::string(k.status().message());
  };
  const auto A = AttentionImplementation::kAuto;
  const auto packed = Execution::kPacked, padded = Execution::kPadded;
  EXPECT_EQ(choose(AttentionImplementation::kEager, packed, cuda, at::kBFloat16, 64), "eager");
  if (!SdpaCompiled()) {
    EXPECT_EQ(choose(A, packed, cpu, at::kFloat, 64), "eager");
    EXPECT_EQ(choose(A, packed, cuda, at::kBFloat16, 64), "eager");
    EXPECT_NE(choose(AttentionImplementation::kSdpa, padded, cpu, at::kFloat, 64).find("needs libtorch >= 2"),
              std::string::npos);
    return;
  }
  EXPECT_EQ(choose(A, packed, cpu, at::kFloat, 64), "sdpa");
  EXPECT_EQ(choose(A, padded, cpu, at::kBFloat16, 64), "sdpa");
  EXPECT_EQ(choose(A, padded, cuda, at::kBFloat16, 64), "sdpa");
  EXPECT_EQ(choose(AttentionImplementation::kSdpa, packed, cuda, at::kBFloat16, 64), "sdpa");
  const std::string varlen16 = VarlenAttentionCompiled() ? "flash_varlen" : "sdpa";
  const std::string varlen32 = VarlenAttentionCompiled() ? "efficient_varlen" : "sdpa";
  EXPECT_EQ(choose(A, packed, cuda, at::kBFloat16, 128), varlen16);
  EXPECT_EQ(choose(A, packed, cuda, at::kHalf, 32), varlen16);
  EXPECT_EQ(choose(A, packed, cuda, at::kFloat, 64), varlen32);
  // Outside the kernels' head sizes.
  EXPECT_EQ(choose(A, packed, cuda, at::kBFloat16, 12), "sdpa");
  EXPECT_EQ(choose(A, packed, cuda, at::kBFloat16, 512), "sdpa");
}

// A batch of requests of `lengths` in both layouts, with q [.., heads, d] and
// k, v [.., kv_heads, d] drawn once and laid out identically.
struct Case {
  TokenBatch packed, padded;
  at::Tensor q, k, v;           // packed [T, ., d]
  at::Tensor q_pad, k_pad, v_pad;  // padded [B, Lmax, ., d], zeros where padded
};

Case MakeCase(const std::vector<int64_t>& lengths, int64_t heads, int64_t kv_heads, int64_t d, at::ScalarType dtype) {
  Case c;
  c.packed.offsets.push_back(0);
  for (int64_t n : lengths) {
    c.packed.offsets.push_back(c.packed.offsets.back() + n);
    c.packed.max_length = std::max(c.packed.max_length, n);
  }
  c.padded.packed = false;
  c.padded.offsets = c.packed.offsets;
  c.padded.max_length = c.packed.max_length;
  const int64_t t = c.packed.offsets.back(), b = static_cast<int64_t>(lengths.size()), l = c.packed.max_length;
  at::manual_seed(7);
  const auto f = at::TensorOptions().dtype(at::kFloat);
  c.q = at::randn({t, heads, d}, f).to(dtype);
  c.k = at::randn({t, kv_heads, d}, f).to(dtype);
  c.v = at::randn({t, kv_heads, d}, f).to(dtype);
  c.q_pad = at::zeros({b, l, heads, d}, f).to(dtype);
  c.k_pad = at::zeros({b, l, kv_heads, d}, f).to(dtype);
  c.v_pad = at::zeros({b, l, kv_heads, d}, f).to(dtype);
  c.padded.key_mask = at::zeros({b, l}, at::TensorOptions().dtype(at::kBool));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t begin = c.packed.offsets[i], n = lengths[i];
    c.q_pad[i].narrow(0, 0, n).copy_(c.q.narrow(0, begin, n));
    c.k_pad[i].narrow(0, 0, n).copy_(c.k.narrow(0, begin, n));
    c.v_pad[i].narrow(0, 0, n).copy_(c.v.narrow(0, begin, n));
    c.padded.key_mask[i].narrow(0, 0, n).fill_(true);
  }
  return c;
}

// The padded result's real rows, packed: [T, heads * d].
at::Tensor RealRows(const at::Tensor& padded, const TokenBatch& batch) {
  std::vector<at::Tensor> rows;
  for (int64_t i = 0; i < batch.batch_size(); ++i) {
    rows.push_back(padded[i].narrow(0, 0, batch.offsets[i + 1] - batch.offsets[i]));
  }
  return at::cat(rows, 0);
}

double MaxDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

class FusedAgreesWithEager : public ::testing::TestWithParam<std::tuple<bool, int64_t, at::ScalarType>> {};

TEST_P(FusedAgreesWithEager, InBothLayouts) {
  c10::InferenceMode guard;
  const auto [causal, kv_heads, dtype] = GetParam();
  // Lengths around the CPU flash kernel's blocks, and a request of one token.
  Case c = MakeCase({1, 7, 64, 130, 300}, /*heads=*/4, kv_heads, /*d=*/32, dtype);
  if (!SdpaCompiled()) {  // libtorch 1.x: the fused kernels refuse, by name
    TokenBatch batch = c.packed;
    batch.attention = AttentionKernel::kSdpa;
    EXPECT_THROW((void)Attention(batch, c.q, c.k, c.v, causal), std::logic_error);
    return;
  }
  // Float32 kernels differ in summation order only; bfloat16 rounds each product.
  const double bound = dtype == at::kFloat ? 2e-5 : 3e-2;
  auto run = [&](TokenBatch batch, AttentionKernel kernel, bool padded) {
    batch.attention = kernel;
    return padded ? RealRows(Attention(batch, c.q_pad, c.k_pad, c.v_pad, causal), batch)
                  : Attention(batch, c.q, c.k, c.v, causal);
  };
  const at::Tensor eager_packed = run(c.packed, AttentionKernel::kEager, false);
  const at::Tensor eager_padded = run(c.padded, AttentionKernel::kEager, true);
  const at::Tensor sdpa_packed = run(c.packed, AttentionKernel::kSdpa, false);
  const at::Tensor sdpa_padded = run(c.padded, AttentionKernel::kSdpa, true);
  ASSERT_EQ(sdpa_packed.sizes(), eager_packed.sizes());
  ASSERT_EQ(sdpa_padded.sizes(), eager_packed.sizes());
  EXPECT_LE(MaxDiff(eager_packed, eager_padded), bound);
  EXPECT_LE(MaxDiff(sdpa_packed, eager_packed), bound);
  EXPECT_LE(MaxDiff(sdpa_padded, eager_packed), bound);
  EXPECT_FALSE(sdpa_padded.isnan().any().item<bool>());
  // A causal first token sees only itself: its output is its own value row.
  if (causal) {
    const at::Tensor first = c.v[0].repeat_interleave(4 / kv_heads, 0).reshape({-1});
    EXPECT_LE(MaxDiff(sdpa_packed[0], first), bound);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, FusedAgreesWithEager,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(int64_t{4}, int64_t{2}),
                                            ::testing::Values(at::kFloat, at::kBFloat16)));
}  // namespace
}  // namespace tokenbatch::hf
