// Whether this CPU runs HfEncoder's low-precision modes (--dtype bfloat16,
// --quantize int8) within their quality bounds: every text's embedding within
// cosine 0.999 (bfloat16) or 0.99 (int8) of float32's (issue #41; the bounds
// are checked by src/hf/low_precision_test.cc and reported in docs/benchmarks.md,
// "Low precision on the CPU").
//
// Both modes need instructions that not every x86-64 CPU has:
//   * bfloat16 needs AVX-512 BF16. Without it libtorch's CPU matrix products in
//     bfloat16 take a fallback that is slower than float32 and rounds beyond the
//     bound.
//   * int8 needs AVX-512 VNNI. Without it the quantized engine multiplies u8 by
//     s8 with vpmaddubsw, whose 16-bit pair sums saturate (oneDNN's
//     documentation, "Nuances of int8 computations"), and the embeddings fall
//     below the bound.
// docs/benchmarks.md ("Low precision on the CPU") has both measured on a CPU
// without them.
// A CPU without them gets a clear error at load instead of a silently worse
// or slower model. CPUs with AVX-VNNI but no AVX-512 are refused too: the
// bound was not measured there.
#pragma once

#include "absl/status/status.h"

namespace tokenbatch::hf {

// What the CPU offers the low-precision modes.
struct CpuLowPrecisionSupport {
  bool avx512_bf16 = false;   // bfloat16 matrix products (VDPBF16PS)
  bool avx512_vnni = false;   // int8 dot products into int32 (VPDPBUSD)
};

// The CPU this process runs on (CPUID through the compiler's
// __builtin_cpu_supports). Thread-safe; does not block.
[[nodiscard]] CpuLowPrecisionSupport DetectCpuLowPrecision();

// OK when `cpu` runs every mode asked for (`bfloat16`: --dtype bfloat16 on the
// CPU; `int8`: --quantize int8). Errors: InvalidArgumentError naming the mode,
// the missing instruction set and the alternative (float32). Pure.
[[nodiscard]] absl::Status CheckCpuLowPrecision(bool bfloat16, bool int8, const CpuLowPrecisionSupport& cpu);

}  // namespace tokenbatch::hf
