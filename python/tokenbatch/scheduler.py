"""Scheduler: token-budget batching of your own worker, on tokenbatch's C++ runtime.

The design note's ``TokenBudgetBatchScheduler(gpu_worker_func, ...)`` with its
flaws fixed: the budget is measured the way the model pays it (``padded`` =
B × Lmax by default, ``sum``, or calibrated bytes), lengths are packed together,
an input over the limit is rejected, truncated or split, a failing batch is
bisected so only the failing input fails, an out-of-memory batch is split and
the budget lowered, a cancelled request is removed without shifting anyone
else's result, and every submit is resolved exactly once, on close too.

Threads: the C++ runtime forms batches on its own worker thread(s). A plain
worker function runs there, holding the GIL only during the call; a coroutine
worker is awaited on the event loop the scheduler was started on. Results
cross back to each submitting loop through one eventfd per loop (one wake-up
per batch) and are set on that loop's thread only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import os
import time
import weakref
from typing import Any, AsyncIterator, Callable, Iterable, Sequence

from . import _core
from .errors import ShuttingDown
from .merge import MERGES
from ._runner import Runner, default_out_of_memory, live_schedulers
from .stats import Stats

_Item = "str | Sequence[int]"


class Scheduler:
    """Batches submitted texts (or token-id lists) by token budget for ``worker``.

    worker: ``f(batch: tokenbatch.Batch) -> Sequence`` or ``async def f(batch)``,
        returning one result per input, in order; any result may be an exception
        instance, which that input's submit then raises. An exception raised by
        the worker fails only the input that fails alone (the batch is bisected).
    max_batch_tokens: the budget per batch, in the cost model's unit (tokens,
        padded tokens B × Lmax, or bytes). Default 4096, or the calibration's.
    max_batch_size: most inputs per batch.
    max_wait: seconds the oldest queued input may wait for company (0.004).
    cost_model: ``"padded"`` (B × Lmax, what a padded model pays), ``"sum"``
        (Σ tokens, for padding-free models), or the path of a ``tokenbatch
        calibrate`` file (peak memory in bytes).
    tokenizer: a ``tokenbatch.Tokenizer`` (exact counts; ``Batch.input_ids``
        available), a callable ``text -> int`` that counts, or None for the
        seed's ``len(text)`` (characters).
    oversize: ``"reject"`` (OversizeError at submit), ``"truncate"`` (keep the
        first max_input_tokens) or ``"split"`` (windows of max_input_tokens
        overlapping by split_overlap_tokens, merged by ``merge``).
    max_input_tokens: the longest input taken whole; 0 = the longest that fits
        the budget alone.
    merge: for ``"split"``: ``"mean"`` (token-weighted mean of array results),
        ``"list"`` (the windows' results), or ``f(parts, windows)``.
    packing: ``"length_aware"`` (similar lengths together), ``"fifo"`` or ``"bucketed"``.
    batch_window: ``"adaptive"`` (wait only while waiting pays, learned from the
        worker's batch times and when answered callers submit again, at most
        max_wait, for those returns after their answer) or ``"fixed"`` (always
        max_wait).
    max_queue_size, max_queued_tokens: queue limits (inputs, tokens); beyond
        them submit raises Overloaded with retry_after. 0 = unlimited.
    out_of_memory: exception classes that mean out of memory (default
        MemoryError, and torch's OutOfMemoryError when torch is imported).
    num_workers: batches run at once (worker threads; one per model replica).
    pad_token_id: the id padding Batch.input_ids.

    Raises ValueError for an invalid option, naming it.
    Thread-safety: submit_future / submit_sync may be called from any thread;
    the async methods from any event loop (several loops may share a scheduler).
    """

    def __init__(
        self,
        worker: Callable[..., Any],
        *,
        max_batch_tokens: int | None = None,
        max_batch_size: int = 64,
        max_wait: float = 0.004,
        cost_model: str | os.PathLike[str] = "padded",
        tokenizer: "_core.Tokenizer | Callable[[str], int] | None" = None,
        oversize: str = "reject",
        max_input_tokens: int = 0,
        split_overlap_tokens: int = 32,
        merge: str | Callable[[list, list], Any] = "mean",
        packing: str = "length_aware",
        batch_window: str = "adaptive",
        max_queue_size: int = 65536,
        max_queued_tokens: int = 0,
        out_of_memory: Iterable[type[BaseException]] | None = None,
        num_workers: int = 1,
        pad_token_id: int = 0,
    ) -> None:
        if not callable(worker):
            raise TypeError(f"worker must be callable, not {type(worker).__name__}")
        self._worker = worker
        self._is_coroutine = inspect.iscoroutinefunction(worker) or inspect.iscoroutinefunction(
            getattr(worker, "__call__", None)
        )
        c0 = c1 = c2 = 0.0
        model = os.fspath(cost_model)
        if model not in ("sum", "padded"):
            calibration = _core._read_calibration(model)
            c0, c1, c2 = calibration["c0"], calibration["c1"], calibration["c2"]
            if max_batch_tokens is None:
                max_batch_tokens = calibration["recommended_max_batch_tokens"]
                if max_batch_tokens is None:
                    raise ValueError(f"{model} recommends no budget: give max_batch_tokens (bytes)")
            model = "memory"
        if isinstance(merge, str):
            if merge not in MERGES:
                raise ValueError(f"merge must be one of {sorted(MERGES)} or a callable, not {merge!r}")
            merge = MERGES[merge]
        counter = None
        if tokenizer is not None and not isinstance(tokenizer, _core.Tokenizer):
            if not callable(tokenizer):
                raise TypeError("tokenizer must be a tokenbatch.Tokenizer, a callable that counts, or None")
            counter, tokenizer = tokenizer, None
        self._options = dict(
            tokenizer=tokenizer,
            counter=counter,
            merge=merge if oversize == "split" else None,
            out_of_memory=tuple(out_of_memory) if out_of_memory is not None else default_out_of_memory(),
            pad_token_id=pad_token_id,
            cost_model=model,
            c0=c0,
            c1=c1,
            c2=c2,
            max_batch_tokens=4096 if max_batch_tokens is None else max_batch_tokens,
            max_batch_size=max_batch_size,
            max_wait_s=float(max_wait),
            packing=packing,
            batch_window=batch_window,
            oversize=oversize,
            max_input_tokens=max_input_tokens,
            split_overlap_tokens=split_overlap_tokens,
            max_queue_size=max_queue_size,
            max_queued_tokens=max_queued_tokens,
            num_workers=num_workers,
        )
        self._core: _core._Scheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # a coroutine worker's loop
        # One channel per loop that submits; weak, so a closed loop is not kept.
        self._channels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._last_loop: asyncio.AbstractEventLoop | None = None
        self._last_channel: _core._CompletionChannel | None = None
        self._closed = False

    # Lifecycle -------------------------------------------------------------

    def start(self) -> "Scheduler":
        """Starts the runtime's threads. A coroutine worker needs a running
        loop (call from a coroutine, or use ``async with``). Idempotent before
        close; raises ShuttingDown after it."""
        if self._closed:
            raise ShuttingDown("this Scheduler is closed; create a new one")
        if self._core is not None:
            return self
        if self._is_coroutine:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError(
                    "a coroutine worker runs on an event loop: start the Scheduler inside one (async with)"
                ) from None
        # The runner holds the worker and its loop, not this object: the C++
        # scheduler it is handed to must not keep the Scheduler alive.
        self._core = _core._Scheduler(runner=Runner(self._worker, self._is_coroutine, self._loop), **self._options)
        live_schedulers.add(self)
        return self

    async def close(self, *, cancel_queued: bool = False) -> None:
        """Stops accepting, then runs what is queued (or, with cancel_queued,
        fails it with ShuttingDown) and waits for the batches in flight, without
        blocking the loop. Idempotent."""
        self._closed = True
        if self._core is not None:
            await asyncio.to_thread(self._core.shutdown, "cancel" if cancel_queued else "drain")

    def close_sync(self, *, cancel_queued: bool = False) -> None:
        """close() for plain threads: blocks until the queue is done."""
        self._closed = True
        if self._core is None:
            return
        if self._is_coroutine and self._loop is not None and self._loop.is_running():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is self._loop:
                raise RuntimeError("close_sync would block the loop its coroutine worker needs: await close()")
        self._core.shutdown("cancel" if cancel_queued else "drain")

    async def __aenter__(self) -> "Scheduler":
        return self.start()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        # Interrupted (Ctrl-C, task cancellation): fail the queue quickly rather
        # than run it; otherwise every queued request still gets its result.
        interrupted = exc_type is not None and issubclass(exc_type, (asyncio.CancelledError, KeyboardInterrupt))
        await self.close(cancel_queued=interrupted)

    def __enter__(self) -> "Scheduler":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close_sync(cancel_queued=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))

    # Submitting ---------------------------------------------------------------

    async def submit(
        self, item: _Item, *, priority: int = 0, deadline: float | None = None, timeout: float | None = None
    ) -> Any:
        """Queues one text (or token-id sequence) and returns the worker's result.

        priority: higher levels are served first (0 = default).
        deadline: a time.monotonic() value; timeout: seconds from now. An input
        not computed by then raises DeadlineExceeded (a TimeoutError).
        Raises at once, queueing nothing: TypeError (neither text nor ids),
        InvalidInput, OversizeError, Overloaded (retry_after), ShuttingDown.
        Cancelling the awaiting task removes the input if it is still queued.
        """
        # The hot path, kept to a few calls: the loop's channel is cached.
        loop = asyncio.get_running_loop()
        channel = self._last_channel if loop is self._last_loop else self._channel(loop)
        future = loop.create_future()
        if timeout is None and self._core is not None:
            request = self._core.submit(item, future, channel, priority, deadline)
        else:
            request = self._submit(item, future, channel, priority, deadline, timeout)
        try:
            return await future
        except asyncio.CancelledError:
            self._core.cancel(request)
            raise

    async def submit_many(
        self,
        items: Iterable[_Item],
        *,
        priority: int = 0,
        deadline: float | None = None,
        timeout: float | None = None,
        return_exceptions: bool = False,
    ) -> list[Any]:
        """Submits every item at once and returns their results in order.

        With return_exceptions, a failed item's exception takes its place in
        the list (also one refused at submit); otherwise the first failure is
        raised and the items still pending are cancelled.
        """
        futures, requests = self._submit_all(items, priority, deadline, timeout, return_exceptions)
        try:
            return list(await asyncio.gather(*futures, return_exceptions=return_exceptions))
        except BaseException:
            self._cancel_pending(futures, requests)
            raise

    async def as_completed(
        self,
        items: Iterable[_Item],
        *,
        priority: int = 0,
        deadline: float | None = None,
        timeout: float | None = None,
        return_exceptions: bool = False,
    ) -> AsyncIterator[tuple[int, Any]]:
        """Submits every item and yields ``(index, result)`` as each completes.

        With return_exceptions a failure is yielded as its exception; otherwise
        it is raised. Leaving the loop early cancels the items still pending.
        """
        futures, requests = self._submit_all(items, priority, deadline, timeout, return_exceptions)
        done: asyncio.Queue[int] = asyncio.Queue()
        for index, future in enumerate(futures):
            future.add_done_callback(lambda _, i=index: done.put_nowait(i))
        try:
            for _ in range(len(futures)):
                index = await done.get()
                future = futures[index]
                error = None if future.cancelled() else future.exception()
                if error is not None and not return_exceptions:
                    raise error
                yield index, (error if error is not None else future.result())
        finally:
            self._cancel_pending(futures, requests)

    def submit_future(
        self, item: _Item, *, priority: int = 0, deadline: float | None = None, timeout: float | None = None
    ) -> concurrent.futures.Future:
        """submit for plain threads: a concurrent.futures.Future of the result,
        resolved on the runtime's thread. Cancelling it removes a queued input.
        Raises at once as submit does."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        request = self._submit(item, future, None, priority, deadline, timeout)
        future.add_done_callback(lambda f: f.cancelled() and self._core.cancel(request))
        return future

    def submit_sync(
        self, item: _Item, *, priority: int = 0, deadline: float | None = None, timeout: float | None = None
    ) -> Any:
        """submit for plain threads: blocks (without the GIL) until the result."""
        return self.submit_future(item, priority=priority, deadline=deadline, timeout=timeout).result()

    def stats(self) -> Stats:
        """A snapshot of the runtime's metrics (see Stats). Never blocks on the worker."""
        if self._core is None:
            raise RuntimeError("the Scheduler is not started")
        return Stats.from_metrics(self._core.stats())

    # Internals ---------------------------------------------------------------

    def _started(self) -> "_core._Scheduler":
        if self._core is None:
            if self._closed:
                raise ShuttingDown("this Scheduler is closed")
            raise RuntimeError("the Scheduler is not started: use `async with scheduler:` or start()")
        return self._core

    def _submit(self, item, future, channel, priority, deadline, timeout) -> int:
        if timeout is not None:
            until = time.monotonic() + timeout
            deadline = until if deadline is None else min(deadline, until)
        return self._started().submit(item, future, channel, priority, deadline)

    def _submit_all(self, items, priority, deadline, timeout, keep_errors):
        loop = asyncio.get_running_loop()
        channel = self._channel(loop)
        futures: list[asyncio.Future] = []
        requests: list[int | None] = []
        try:
            for item in items:
                future = loop.create_future()
                try:
                    requests.append(self._submit(item, future, channel, priority, deadline, timeout))
                except Exception as e:
                    if not keep_errors:
                        raise
                    future.set_exception(e)
                    requests.append(None)
                futures.append(future)
        except BaseException:
            self._cancel_pending(futures, requests)
            raise
        return futures, requests

    def _cancel_pending(self, futures, requests) -> None:
        for future, request in zip(futures, requests):
            if not future.done():
                future.cancel()
                if request is not None:
                    self._core.cancel(request)

    def _channel(self, loop: asyncio.AbstractEventLoop) -> "_core._CompletionChannel":
        channel = self._channels.get(loop)
        if channel is None:
            channel = _core._CompletionChannel.create()
            self._started().keep_alive(channel)
            loop.add_reader(channel.fileno(), channel.drain)
            self._channels[loop] = channel
        self._last_loop, self._last_channel = loop, channel
        return channel
