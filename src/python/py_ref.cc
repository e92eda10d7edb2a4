#include "python/py_ref.h"

#include <atomic>
#include <mutex>
#include <vector>

namespace tokenbatch::python {
namespace {

// References dropped by threads without the GIL. The mutex is a leaf: nothing
// else is locked, and the GIL is never waited for, while it is held.
struct DeferredReferences {
  std::mutex mutex;
  std::vector<PyObject*> objects;
  std::atomic<bool> any{false};
};

DeferredReferences& Deferred() {
  // Never destroyed: threads of the runtime may still defer during exit.
  static auto* deferred = new DeferredReferences;
  return *deferred;
}

}  // namespace

void PyRef::Reset() {
  PyObject* object = std::exchange(object_, nullptr);
  if (object == nullptr || !Py_IsInitialized() || _Py_IsFinalizing()) return;
  if (PyGILState_Check()) {
    Py_DECREF(object);
    return;
  }
  DeferredReferences& deferred = Deferred();
  std::lock_guard lock(deferred.mutex);
  deferred.objects.push_back(object);
  deferred.any.store(true, std::memory_order_release);
}

void ReleaseDeferredReferences() {
  DeferredReferences& deferred = Deferred();
  if (!deferred.any.load(std::memory_order_acquire)) return;
  std::vector<PyObject*> objects;
  {
    std::lock_guard lock(deferred.mutex);
    objects.swap(deferred.objects);
    deferred.any.store(false, std::memory_order_relaxed);
  }
  // Outside the lock: a destructor may run Python code that drops more.
  for (PyObject* object : objects) Py_DECREF(object);
}

}  // namespace tokenbatch::python
