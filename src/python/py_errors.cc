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

void ResolveFuture(nb::handle future, absl::StatusOr<Outcome>&& result) {
  if (nb::cast<bool>(future.attr("done")())) return;
  try {
    if (!result.ok()) {
      future.attr("set_exception")(StatusToException(result.status()));
    } else if (result->raised) {
      future.attr("set_exception")(nb::handle(result->value->get()));
    } else {
      future.attr("set_result")(nb::handle(result->value->get()));
    }
  } catch (nb::python_error& e) {
    // A concurrent.futures.Future cancelled by another thread since done()
    // (InvalidStateError): its caller gave the result up. Anything else is a bug
    // to report, never to raise into the loop's reader.
    if (!nb::cast<bool>(future.attr("done")())) e.discard_as_unraisable("tokenbatch: resolving a future");
  }
}

}  // namespace tokenbatch::python
