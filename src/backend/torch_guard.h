// Shared by the libtorch translation units (torch_encoder.cc, src/hf): running
// a piece of libtorch code with every exception turned into a typed status, and
// bounding the BLAS thread pool. Includes c10 headers, so only torch code sees it.
#pragma once

#include <c10/util/Exception.h>
#include <dlfcn.h>

#include <new>
#include <string>
#include <string_view>

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

// Debian's libtorch runs its matrix products in the system BLAS (OpenBLAS with
// libopenblas0-pthread), whose thread pool is separate from torch's intra-op pool
// and sized to all cores; set it too, so a thread count bounds a forward's threads.
// Looked up at run time because another BLAS may be installed instead.
inline void SetBlasThreads(int n) {
  using SetThreads = void (*)(int);
  static const auto set_threads = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set_threads != nullptr) set_threads(n);
}

}  // namespace tokenbatch::backend
