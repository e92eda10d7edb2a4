#include "tokenbatch/hf/cpu_low_precision.h"

#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {

CpuLowPrecisionSupport DetectCpuLowPrecision() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // also right when called before main, from a static initialiser
  return {.avx512_bf16 = __builtin_cpu_supports("avx512bf16") != 0,
          .avx512_vnni = __builtin_cpu_supports("avx512vnni") != 0};
#else
  return {};
#endif
}

absl::Status CheckCpuLowPrecision(bool bfloat16, bool int8, const CpuLowPrecisionSupport& cpu) {
  if (bfloat16 && !cpu.avx512_bf16) {
    return InvalidArgumentError(
        "dtype bfloat16 on the CPU needs AVX-512 BF16, which this CPU lacks: without it libtorch computes "
        "bfloat16 slower than float32 and beyond the quality bound (cosine 0.999 to float32); use --dtype "
        "float32 here");
  }
  if (int8 && !cpu.avx512_vnni) {
    return InvalidArgumentError(
        "int8 quantization needs AVX-512 VNNI, which this CPU lacks: without it the int8 products saturate "
        "and the embeddings miss the quality bound (cosine 0.99 to float32); use float32 (--quantize none) "
        "here");
  }
  return absl::OkStatus();
}

}  // namespace tokenbatch::hf
