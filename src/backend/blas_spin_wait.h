// How long OpenBLAS's idle threads busy-wait before they sleep.
//
// Debian's libtorch runs its matrix products in the system OpenBLAS (the
// pthread build, libopenblas0-pthread), whose worker threads spin after each
// product for THREAD_TIMEOUT: 2^28 CPU cycles by default, a tenth of a second
// or more. An idle or lightly loaded server then burns a core after every
// forward for nothing, and under load (one forward per core,
// docs/benchmarks.md "Load-adaptive intra-op parallelism") a pool thread still
// spinning after a wide forward can take a core from a narrow one
// (docs/benchmarks.md "Spin-waiting thread pools" measures both). 2^20 cycles
// keeps the pool awake between the products of one forward and lets it sleep
// soon after the forward ends.
//
// OpenBLAS reads the timeout only from the environment
// (OPENBLAS_THREAD_TIMEOUT, an exponent: 2^n cycles, clamped to 4..30; see
// OpenBLAS's USAGE.md and driver/others/blas_server.c) when its thread pool
// starts, so ShortenBlasSpinWait sets the variable and restarts the pool
// (openblas_runtime.h).
//
// No libtorch and no OpenBLAS headers: the functions are looked up at run time
// (dlsym), so a libtorch on another BLAS (the PyPI wheel's MKL) is left alone.
#pragma once

namespace tokenbatch::backend {

// The exponent ShortenBlasSpinWait sets: idle OpenBLAS threads spin for 2^20
// CPU cycles before they sleep.
inline constexpr int kBlasThreadTimeoutExponent = 20;

// What ShortenBlasSpinWait did, for callers and tests that want to know.
enum class BlasSpinWait {
  kShortened,   // OPENBLAS_THREAD_TIMEOUT set to kBlasThreadTimeoutExponent and read by OpenBLAS (the pool
                // restarted by ShortenBlasSpinWait; after SetShortBlasSpinWait, at its next start)
  kAlreadySet,  // OPENBLAS_THREAD_TIMEOUT was in the environment (the user's, or an earlier call's): kept
  kNoOpenBlas,  // the process has no OpenBLAS thread pool to configure
};

// Shortens OpenBLAS's spin-wait unless OPENBLAS_THREAD_TIMEOUT is already set:
// SetShortBlasSpinWait, then RestartBlasThreadPool when it set the variable.
// Call it once, early, while the process has a single thread: it changes the
// environment (setenv is not safe against concurrent getenv) and restarts
// OpenBLAS's threads, so no BLAS call may be running. Blocks while OpenBLAS
// joins its threads and starts new ones. Never fails: without OpenBLAS it does
// nothing.
BlasSpinWait ShortenBlasSpinWait();

// ShortenBlasSpinWait's first half: sets OPENBLAS_THREAD_TIMEOUT (unless already
// set) and has OpenBLAS read it, which applies from the thread pool's next
// start. For a caller that restarts the pool anyway (the command line's main(),
// where UseBestBlasCore may switch OpenBLAS's kernels), so that the pool
// restarts once. Same calling rules as ShortenBlasSpinWait; does not block.
BlasSpinWait SetShortBlasSpinWait();

// Stops OpenBLAS's thread pool and starts it again (so that it takes a new
// OPENBLAS_THREAD_TIMEOUT). Returns false, doing nothing, without an OpenBLAS
// thread pool. Same calling rules as ShortenBlasSpinWait; blocks likewise.
bool RestartBlasThreadPool();

}  // namespace tokenbatch::backend
