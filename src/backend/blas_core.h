// Which of OpenBLAS's CPU kernels a process runs its matrix products on.
//
// Debian's libtorch runs its float32 matrix products in the system OpenBLAS
// (libopenblas0-pthread), a DYNAMIC_ARCH build that picks its kernels ("core")
// once, when it loads, from the CPU's family and model numbers
// (driver/others/dynamic.c, get_coretype). Some CPUs newer than the release
// (Debian 12 ships 0.3.21; an Emerald Rapids Xeon, Intel family 6 model 0xCF,
// is one) send it to its Prescott kernels (SSE3), though the CPU has AVX2 or
// AVX-512: every forward in float32 runs several times slower than
// the CPU allows (docs/benchmarks.md, "OpenBLAS on a CPU it does not know").
// Later OpenBLAS releases add such CPUs to the table one by one.
//
// The core can be forced with OPENBLAS_CORETYPE (OpenBLAS's USAGE.md), read
// when the core is chosen. UseBestBlasCore does what that variable does after
// the fact: where OpenBLAS fell back to Prescott on a CPU with wider vectors,
// it sets the variable to the widest core the CPU runs and has OpenBLAS choose
// again (gotoblas_dynamic_quit, then gotoblas_dynamic_init, which reads the
// variable), around a restart of its thread pool.
//
// No OpenBLAS headers: its functions are looked up at run time (dlsym), so a
// libtorch on another BLAS (the PyPI wheel's MKL) is left alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tokenbatch::backend {

// The vector instruction sets of a CPU that decide OpenBLAS's x86-64 cores,
// each true only where the operating system saves the registers too.
struct CpuVectorFeatures {
  bool avx = false;
  bool avx2_fma = false;  // AVX2 and FMA3 (and AVX): OpenBLAS's Haswell kernels
  bool avx512 = false;    // AVX-512 F, CD, BW, DQ and VL (and AVX2, FMA3): its SkylakeX kernels
};

// This CPU's features (the compiler's CPUID reading, which checks the OS's
// register saving); all false off x86. Thread-safe; never blocks.
CpuVectorFeatures DetectCpuVectorFeatures();

// The core OpenBLAS should have chosen, by OPENBLAS_CORETYPE's name, when it
// chose `chosen` on a CPU with `features`: "SkylakeX", "Haswell" or
// "Sandybridge" when `chosen` is "Prescott" (its fallback for a CPU it does not
// know; compared without case) and the CPU runs one of those; otherwise none
// (OpenBLAS knew the CPU, or Prescott's SSE3 is all it has). Pure.
std::optional<std::string> BetterBlasCore(std::string_view chosen, const CpuVectorFeatures& features);

// What UseBestBlasCore did, for callers and tests that want to know.
enum class BlasCoreChoice {
  kSwitched,     // OpenBLAS had fallen back to Prescott; it now runs BetterBlasCore's core
                 // (or the nearest its build has)
  kKept,         // OpenBLAS's own choice stands: it knew the CPU, or nothing wider runs on it
  kAlreadySet,   // OPENBLAS_CORETYPE was in the environment (the user's, or an earlier call's): kept
  kNoOpenBlas,   // the process has no OpenBLAS with run-time core selection (DYNAMIC_ARCH)
};

// The outcome of UseBestBlasCore: the choice and OpenBLAS's core names before
// and after (both empty without OpenBLAS).
struct BlasCore {
  BlasCoreChoice choice = BlasCoreChoice::kNoOpenBlas;
  std::string before;
  std::string after;
  // OpenBLAS chose its core again (RerunBlasCoreSelection), restarting its
  // thread pool: true on a switch, and where OpenBLAS refused the better core.
  bool reselected = false;
};

// Has OpenBLAS choose its core again, as at load time: by OPENBLAS_CORETYPE
// when that is set, else by its own table. Its thread pool (where the build has
// one) is stopped meanwhile, so no pool thread runs a kernel while the core
// changes under it. Returns false, doing nothing, without an OpenBLAS that
// selects its core at run time (DYNAMIC_ARCH). Same calling rules as
// UseBestBlasCore: single-threaded, no BLAS call running; blocks while the pool
// restarts.
bool RerunBlasCoreSelection();

// Has OpenBLAS run on BetterBlasCore's core where it fell back to Prescott,
// unless OPENBLAS_CORETYPE is already set. Call it once, early, while the
// process has a single thread: it changes the environment (setenv is not safe
// against concurrent getenv) and restarts OpenBLAS's threads, so no BLAS call
// may be running. The command line's main() calls it before any command runs. Blocks
// while OpenBLAS joins its threads and starts new ones. Never fails: without
// OpenBLAS, or where OpenBLAS refuses the core, it leaves its choice as it was.
BlasCore UseBestBlasCore();

}  // namespace tokenbatch::backend
