// The Python exceptions of tokenbatch's typed errors (core/errors.h), and how
// a request's result reaches its future.
//
// The exception classes are defined in Python (tokenbatch/errors.py, so that
// they subclass the built-in exceptions users already catch: TimeoutError,
// MemoryError, ValueError) and handed to the extension once at import
// (RegisterErrorTypes). Everything here needs the GIL.
#pragma once

#include <nanobind/nanobind.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "python/py_item.h"

namespace tokenbatch::python {

namespace nb = nanobind;

// `types` maps ErrorKindName ("queue_full", "oversize", "deadline_exceeded",
// "shutting_down", "out_of_memory", "backend", "invalid_argument",
// "cancelled", "unclassified") to an exception class taking one message
// argument. Errors: TypeError for a kind it does not know.
void RegisterErrorTypes(nb::dict types);

// A new exception instance for `status` (its kind's registered class, else
// RuntimeError), with the status's message.
[[nodiscard]] nb::object StatusToException(const absl::Status& status);

// Raises `status` as its Python exception (throws nb::python_error).
[[noreturn]] void RaiseStatus(const absl::Status& status);
// Raises the exception instance `exception` (throws nb::python_error).
[[noreturn]] void RaiseException(nb::handle exception);

// Resolves `future` (an asyncio.Future or a concurrent.futures.Future) with
// `result` unless it is done already (cancelled by its caller): the value, or
// the exception the worker gave, or the typed error's exception. A future
// cancelled concurrently (InvalidStateError) is left as it is.
void ResolveFuture(nb::handle future, absl::StatusOr<Outcome>&& result);

}  // namespace tokenbatch::python
