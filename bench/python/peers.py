"""The Python batching libraries the package's benchmarks compare, behind one
shape: make(worker, ...) returns (submit, close), where `submit(text)` is a
coroutine resolving to the worker's result for that text and `close()` a
coroutine that stops the batcher.

Each peer is configured its own documented way for the same limits:
  tokenbatch  tokenbatch.Scheduler (this package); a plain worker runs on its thread
  seed        the design note's TokenBudgetBatchScheduler (bench/seed_scheduler.py)
  batched     `batched` 0.1.5, @batched.aio.dynamically
  ray         Ray Serve 2.60's @serve.batch in this process: its batching layer alone,
              without a deployment's actors, handle RPC or HTTP (which only add to its
              cost); the one check that needs a deployment (a warning comparing
              max_batch_size with the replica's max_ongoing_requests) is switched off
Workers: `sync_worker(texts) -> list` for tokenbatch, wrapped into a coroutine for
the others (which await their batch function on the event loop).
"""

from __future__ import annotations

import contextlib
import io
from typing import Any, Awaitable, Callable

import tokenbatch
from bench.seed_scheduler import extract_seed_scheduler

Submit = Callable[[str], Awaitable[Any]]
Close = Callable[[], Awaitable[None]]
NAMES = ("tokenbatch", "seed", "batched", "ray")


async def make(name: str, sync_worker: Callable[[list], list], *, max_batch_size: int, max_wait_ms: float,
               max_batch_tokens: int, tokenbatch_options: dict | None = None,
               raw_batch: bool = False) -> tuple[Submit, Close]:
    """raw_batch: tokenbatch's worker gets the tokenbatch.Batch itself (its ids),
    not the list of texts."""
    if name == "tokenbatch":
        scheduler = tokenbatch.Scheduler(
            sync_worker if raw_batch else (lambda batch: sync_worker(batch.texts)),
            max_batch_tokens=max_batch_tokens, max_batch_size=max_batch_size, max_wait=max_wait_ms / 1e3,
            **(tokenbatch_options or {}),
        ).start()
        return scheduler.submit, scheduler.close

    async def worker(texts):
        return sync_worker(list(texts))

    if name == "seed":
        scheduler = extract_seed_scheduler()(worker, max_batch_tokens, max_batch_size, max_wait_ms)
        with contextlib.redirect_stdout(io.StringIO()):  # its start-up banner
            await scheduler.start()

        async def close():
            scheduler._is_running = False
            scheduler._loop_task.cancel()

        return scheduler.submit, close
    if name == "batched":
        import batched

        batched_worker = batched.aio.dynamically(worker, batch_size=max_batch_size, timeout_ms=max_wait_ms)

        async def close():
            return None

        return (lambda text: batched_worker(text)), close
    if name == "ray":
        from ray import serve
        from ray.serve import batching

        batching._BatchQueue._warn_if_max_batch_size_exceeds_max_ongoing_requests = lambda self: None

        @serve.batch(max_batch_size=max_batch_size, batch_wait_timeout_s=max_wait_ms / 1e3)
        async def ray_worker(texts):
            return sync_worker(list(texts))

        async def close():
            return None

        return ray_worker, close
    raise ValueError(f"unknown peer {name!r}; one of {NAMES}")
