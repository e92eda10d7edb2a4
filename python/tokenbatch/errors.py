"""The exceptions tokenbatch raises: one class per cause (the C++ ErrorKind).

Each also subclasses the built-in exception Python code already catches for
that cause, so ``except TimeoutError`` sees a missed deadline and ``except
MemoryError`` an out-of-memory failure.
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every tokenbatch error."""


class Overloaded(Error):
    """The queue is full (max_queue_size requests or max_queued_tokens tokens).

    ``retry_after`` is the estimated number of seconds until there is room:
    the queued batches times the measured mean batch time (1.0 before the
    first batch), for an HTTP ``Retry-After`` header or a client's back-off.
    """

    retry_after: float = 1.0


class OversizeError(Error, ValueError):
    """An input longer than max_input_tokens (or costing more than the budget)
    under ``oversize="reject"``; the message names its tokens and the limit."""


class DeadlineExceeded(Error, TimeoutError):
    """The request's deadline passed before its result was computed."""


class ShuttingDown(Error, RuntimeError):
    """Submitted after close, or failed by a close that cancels the queue."""


class Cancelled(Error):
    """Cancelled by tokenbatch on the caller's behalf (a submit's own task
    being cancelled raises asyncio.CancelledError instead)."""


class OutOfMemoryError(Error, MemoryError):
    """The worker ran out of memory on this input alone, after the batch was
    split (the budget is lowered for later batches)."""


class WorkerError(Error, RuntimeError):
    """The worker broke its contract (for example, returned another number of
    results than the batch has inputs), or failed in a way that has no Python
    exception of its own."""


class InvalidInput(Error, ValueError):
    """A malformed input or option: invalid UTF-8, no tokens, an id outside the
    vocabulary."""


# ErrorKindName (core/errors.h) -> class; handed to the extension at import.
BY_KIND = {
    "queue_full": Overloaded,
    "oversize": OversizeError,
    "deadline_exceeded": DeadlineExceeded,
    "cancelled": Cancelled,
    "shutting_down": ShuttingDown,
    "out_of_memory": OutOfMemoryError,
    "backend": WorkerError,
    "invalid_argument": InvalidInput,
    "unclassified": WorkerError,
}
