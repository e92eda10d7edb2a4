#include "python/py_errors.h"

#include <nanobind/stl/string.h>

#include <array>
#include <string>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::python {
namespace {

constexpr std::array kKinds = {ErrorKind::kQueueFull,       ErrorKind::kOversize,    ErrorKind::kDeadlineExceeded,
                               ErrorKind::kCancelled,       ErrorKind::kShuttingDown, ErrorKind::kOutOfMemory,
                               ErrorKind::kBackend,         ErrorKind::kInvalidArgument,
                               ErrorKind::kUnclassified};

// The registered classes, by ErrorKind value. Strong references, kept for the
// life of the process (the module's own classes).
std::array<PyObject*, static_cast<std::size_t>(ErrorKind::kUnclassified) + 1> g_types{};

}  // namespace

void RegisterErrorTypes(nb::dict types) {
  for (auto [key, value] : types) {
    const std::string name = nb::cast<std::string>(key);
    bool known = false;
    for (ErrorKind kind : kKinds) {
      if (ErrorKindName(kind) == name) {
        PyObject*& slot = g_types[static_cast<std::size_t>(kind)];
        Py_XDECREF(slot);
        slot = nb::borrow(value).release().ptr();
        known = true;
      }
    }
    if (!known) throw nb::type_error(("no error kind is called '" + name + "'").c_str());
  }
}

nb::object StatusToException(const absl::Status& status) {
  PyObject* type = g_types[static_cast<std::size_t>(GetErrorKind(status))];
  nb::handle cls = type != nullptr ? nb::handle(type) : nb::handle(PyExc_RuntimeError);
  return cls(nb::str(status.message().data(), status.message().size()));
}

void RaiseStatus(const absl::Status& status) { RaiseException(StatusToException(status)); }

void RaiseException(nb::handle exception) {
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
  throw nb::python_error();
}

// Interned method names: a loop's reader resolves a whole batch's futures.
struct FutureMethods {
  PyObject* done = PyUnicode_InternFromString("done");
  PyObject* set_result = PyUnicode_InternFromString("set_result");
  PyObject* set_exception = PyUnicode_InternFromString("set_exception");
};

const FutureMethods& Methods() {
  static const FutureMethods* methods = new FutureMethods;  // created with the GIL; never freed
  return *methods;
}

bool IsDone(nb::handle future) {
  nb::object done = nb::steal(PyObject_CallMethodNoArgs(future.ptr(), Methods().done));
  if (!done.is_valid()) throw nb::python_error();
  return PyObject_IsTrue(done.ptr()) == 1;
}

void ResolveFuture(nb::handle future, absl::StatusOr<Outcome>&& result) {
  if (IsDone(future)) return;
  try {
    PyObject* method = Methods().set_result;
    nb::object value;
    if (!result.ok()) {
      method = Methods().set_exception;
      value = StatusToException(result.status());
    } else {
      if (result->raised) method = Methods().set_exception;
      value = nb::borrow(result->value->get());
    }
    nb::object set = nb::steal(PyObject_CallMethodOneArg(future.ptr(), method, value.ptr()));
    if (!set.is_valid()) throw nb::python_error();
  } catch (nb::python_error& e) {
    // A concurrent.futures.Future cancelled by another thread since done()
    // (InvalidStateError): its caller gave the result up. Anything else is a bug
    // to report, never to raise into the loop's reader.
    if (!IsDone(future)) e.discard_as_unraisable("tokenbatch: resolving a future");
  }
}

}  // namespace tokenbatch::python
