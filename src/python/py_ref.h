// PyRef: an owned reference to a Python object that the C++ runtime may move,
// keep and destroy on any thread, with or without the GIL.
//
// The Batcher moves its inputs and results between the submitting thread, the
// worker threads and the deadline thread, none of which holds the GIL while
// it schedules. nanobind's nb::object must be destroyed with the GIL held, so
// the runtime carries PyRef instead: moving it never touches the reference
// count, and its destructor never waits for the GIL: a thread that holds the
// GIL drops the reference at once, any other hands it to a list that the next
// thread holding the GIL empties (ReleaseDeferredReferences). Waiting for the
// GIL there could deadlock: the runtime destroys inputs under its engine lock
// (a cancelled or expired request), while a Python thread holding the GIL may
// be waiting for that lock in Submit.
// After the interpreter has begun finalising, references are leaked rather
// than released: the objects are freed with the interpreter.
#pragma once

#include <Python.h>

#include <utility>

namespace tokenbatch::python {

class PyRef {
 public:
  PyRef() = default;
  // Takes a new reference to `object` (the caller holds the GIL).
  static PyRef Borrow(PyObject* object) {
    Py_XINCREF(object);
    return PyRef(object);
  }
  // Takes over a reference the caller owns (the caller holds the GIL or owns it alone).
  static PyRef Steal(PyObject* object) { return PyRef(object); }

  PyRef(PyRef&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  PyRef& operator=(PyRef&& other) noexcept {
    if (this != &other) {
      Reset();
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() { Reset(); }

  // The object, still owned here (nullptr when empty). Use with the GIL held.
  [[nodiscard]] PyObject* get() const { return object_; }
  // Gives the reference to the caller, who then owns it.
  [[nodiscard]] PyObject* release() { return std::exchange(object_, nullptr); }
  explicit operator bool() const { return object_ != nullptr; }

  // Drops the reference now if this thread holds the GIL, else defers it.
  // Never blocks. Thread-safe.
  void Reset();

 private:
  explicit PyRef(PyObject* object) : object_(object) {}
  PyObject* object_ = nullptr;
};

// Drops the references deferred by threads without the GIL. Call with the GIL
// held; cheap when there are none (one relaxed atomic load).
void ReleaseDeferredReferences();

}  // namespace tokenbatch::python
