// The OpenBLAS functions tokenbatch calls to reconfigure OpenBLAS after it has
// loaded (its kernels, UseBestBlasCore; its idle threads' spin-wait,
// ShortenBlasSpinWait), looked up at run time (dlsym) so that no OpenBLAS
// header is needed and a libtorch on another BLAS (the PyPI wheel's MKL) finds
// none of them and is left alone.
//
// Only openblas_get_corename is in OpenBLAS's public header; the others are
// exported for its own initialisation and fork handling
// (driver/others/dynamic.c, memory.c, blas_server.c), hence the types written
// out here. A serial build has no thread pool (no shutdown or start); a build
// for one CPU has no run-time core selection (no quit or init).
#pragma once

#include <dlfcn.h>

namespace tokenbatch::backend {

struct OpenBlasRuntime {
  char* (*corename)() = nullptr;  // openblas_get_corename: the kernels ("core") in use
  void (*read_env)() = nullptr;   // openblas_read_env: reads the OPENBLAS_* variables again
  void (*quit)() = nullptr;       // gotoblas_dynamic_quit: drops the chosen core
  void (*init)() = nullptr;       // gotoblas_dynamic_init: chooses one (OPENBLAS_CORETYPE first)
  int (*shutdown)() = nullptr;    // blas_thread_shutdown_: joins the thread pool
  int (*start)() = nullptr;       // blas_thread_init: starts it, with the thread timeout last read

  // The functions this process has, looked up at the first call and kept: an
  // OpenBLAS loaded later (dlopen) is not seen. Thread-safe.
  static const OpenBlasRuntime& Get() {
    static const OpenBlasRuntime found{
        .corename = reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_corename")),
        .read_env = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "openblas_read_env")),
        .quit = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit")),
        .init = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init")),
        .shutdown = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_")),
        .start = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "blas_thread_init"))};
    return found;
  }
  bool has_core_selection() const { return corename != nullptr && quit != nullptr && init != nullptr; }
  bool has_thread_pool() const { return shutdown != nullptr && start != nullptr; }

  // Stops the thread pool (where the build has one), calls `while_stopped`, and
  // starts the pool again, so that a new core or thread timeout applies to every
  // pool thread. The stop is the one OpenBLAS's own fork handler runs. No BLAS
  // call may be running; blocks while the pool's threads are joined and started.
  template <typename F>
  void RestartThreadPool(F&& while_stopped) const {
    if (has_thread_pool()) shutdown();
    while_stopped();
    if (has_thread_pool()) start();
  }
};

}  // namespace tokenbatch::backend
