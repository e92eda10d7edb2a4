// Shared by the libtorch translation units (torch_encoder.cc, src/hf): running
// a piece of libtorch code with every exception turned into a typed status, and
// bounding the BLAS thread pool. Includes c10 headers, so only torch code sees it.
#pragma once

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "backend/classify.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {

// Runs `body` and turns any exception into a status: an allocation failure into
// OutOfMemoryError, anything else into BackendError (ClassifyFailure), each
// prefixed with `context`.
template <typename F>
absl::Status Guard(std::string_view context, F&& body) {
  try {
    body();
    return absl::OkStatus();
  } catch (const c10::OutOfMemoryError& e) {
    return ClassifyFailure(context, e.what_without_backtrace(), true);
  } catch (const std::bad_alloc& e) {
    return ClassifyFailure(context, e.what(), true);
  } catch (const c10::Error& e) {
    return ClassifyFailure(context, e.what_without_backtrace(), false);
  } catch (const std::exception& e) {
    return ClassifyFailure(context, e.what(), false);
  } catch (...) {
    return BackendError(std::string(context) + ": unknown exception");
  }
}

// Runs `body` on a thread of its own and returns its result (or rethrows its
// exception), blocking until that thread has ended.
//
// For loading a model. libgomp, libtorch's OpenMP, gives each thread that starts
// a parallel region a team of helper threads that lives as long as that thread;
// once the process holds more of them than there are cores, it shortens every
// helper's spin between parallel regions to a few iterations (libgomp's
// "throttled" spin count), so each parallel region of every later forward wakes
// its helpers from a futex. A load runs parallel regions (weight conversions, the
// probe forward); run on a thread that ends, its team ends with it, and the
// threads that run forwards keep their teams within the cores.
//
// `body` sees none of the calling thread's thread-local state (libtorch's grad
// and inference modes, its current CUDA device): a load sets what it needs.
// Where no thread can be started, `body` runs on the calling thread instead.
template <typename F>
auto RunOnOwnThread(F&& body) -> decltype(body()) {
  using Result = decltype(body());
  static_assert(!std::is_void_v<Result> && !std::is_reference_v<Result>, "body returns a value");
  std::optional<Result> result;
  std::exception_ptr error;
  std::thread thread;
  try {
    thread = std::thread([&] {
      try {
        result.emplace(body());
      } catch (...) {
        error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    return body();
  }
  thread.join();
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

// Debian's libtorch runs its matrix products in the system BLAS (OpenBLAS with
// libopenblas0-pthread), whose thread pool is separate from torch's intra-op pool
// and sized to all cores; set it too, so a thread count bounds a forward's threads.
// Looked up at run time because another BLAS may be installed instead.
inline void SetBlasThreads(int n) {
  using SetThreads = void (*)(int);
  static const auto set_threads = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set_threads != nullptr) set_threads(n);
}

// Whether OpenBLAS, with a thread pool of its own (its pthread build, Debian's
// libopenblas0-pthread), is in the process: Debian's libtorch runs its matrix
// products there; the PyPI wheel's MKL runs inside libtorch's OpenMP threads.
// OpenBLAS's openblas_get_parallel() is 1 for its pthread build (0 sequential,
// 2 OpenMP: that build's threads are libgomp's own).
inline bool HasOpenBlasThreadPool() {
  static const bool has = [] {
    using GetParallel = int (*)();
    const auto get_parallel = reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
    return get_parallel != nullptr && get_parallel() == 1;
  }();
  return has;
}

// libtorch's own operators' threads (OpenMP, at::set_num_threads) in a forward
// of `threads` CPU threads: 1 beside an OpenBLAS thread pool, else `threads`.
//
// libgomp does not count OpenBLAS's threads. While the process holds no more
// OpenMP threads than cores, libgomp's helpers spin-wait long between parallel
// regions (GOMP_SPINCOUNT), and a helper spinning there holds the core that
// OpenBLAS's thread needs for the forward's next product. With the operators on
// one thread there is no helper, and OpenBLAS runs the products on all
// `threads`. The trade: the operators outside the products (layer norms,
// softmax, activations) run on one core.
inline int OperatorThreads(int threads) { return HasOpenBlasThreadPool() ? 1 : threads; }

// Applies a forward's `threads` CPU threads on the calling thread: libtorch's
// operators (OperatorThreads, per calling thread) and OpenBLAS's pool
// (process-wide). threads >= 1.
inline void ApplyForwardThreads(int threads) {
  const int operator_threads = OperatorThreads(threads);
  if (at::get_num_threads() != operator_threads) at::set_num_threads(operator_threads);
  SetBlasThreads(threads);
}

}  // namespace tokenbatch::backend
