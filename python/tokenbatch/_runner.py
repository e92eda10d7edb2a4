"""What the runtime's worker thread calls for each batch (Runner), the default
out-of-memory exceptions, and the schedulers closed at interpreter exit."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import sys
import weakref
from typing import Any

from . import _core


def default_out_of_memory() -> tuple[type[BaseException], ...]:
    """MemoryError, and torch's OutOfMemoryError (torch.OutOfMemoryError,
    torch.cuda.OutOfMemoryError) when torch is imported already."""
    types: list[type[BaseException]] = [MemoryError]
    torch = sys.modules.get("torch")
    if torch is not None:
        for name in ("OutOfMemoryError",):
            for owner in (torch, getattr(torch, "cuda", None)):
                t = getattr(owner, name, None)
                if isinstance(t, type) and issubclass(t, BaseException) and t not in types:
                    types.append(t)
    return tuple(types)


# Started schedulers, closed at interpreter exit (cancelling their queues) so
# that no runtime thread is still calling Python while the interpreter
# finalises.
live_schedulers: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for scheduler in list(live_schedulers):
        scheduler._closed = True
        if scheduler._core is not None:
            scheduler._core.shutdown("cancel")


class Runner:
    """Calls the worker for the runtime's worker thread, with the GIL, once per batch."""

    __slots__ = ("worker", "is_coroutine", "loop")

    def __init__(self, worker, is_coroutine: bool, loop: asyncio.AbstractEventLoop | None) -> None:
        self.worker, self.is_coroutine, self.loop = worker, is_coroutine, loop

    def __call__(self, batch: _core.Batch) -> Any:
        if not self.is_coroutine:
            return self.worker(batch)
        # Awaited on the scheduler's loop; this thread waits without the GIL
        # (Future.result), checking that the loop still runs.
        future = asyncio.run_coroutine_threadsafe(self.worker(batch), self.loop)
        while True:
            try:
                return future.result(timeout=0.25)
            except concurrent.futures.TimeoutError:
                if future.done():
                    raise  # the worker's own TimeoutError
                if self.loop.is_closed() or not self.loop.is_running():
                    future.cancel()
                    raise RuntimeError("the event loop running the coroutine worker has stopped") from None
