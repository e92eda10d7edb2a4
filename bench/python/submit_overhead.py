"""Benchmark (a): the cost per request of `await submit` with a worker that does
nothing, at 1k, 10k and 100k concurrent submits, for tokenbatch.Scheduler, the
design note's scheduler, `batched` and Ray Serve's @serve.batch.

Each round submits N texts at once (asyncio.gather) and waits for all results;
the figure is the round's wall time / N (µs per request), the median of
--repeats rounds, each peer in the same process one after another. Two rows
without a batcher frame them: `asyncio floor`, the same gather of N
coroutines each awaiting a future of the running loop, all resolved by one
callback once all are created (what any asyncio batcher pays per request before batching
anything), and
`tokenbatch submit_many`, one call for all N (no task per request). The
overhead of a batcher is its figure minus the floor; the table gives it and
each peer's overhead as a multiple of tokenbatch's. The cyclic garbage
collector is paused during each timed part (paused_gc). Same limits for all: batches of
at most 64, a 4 ms window, the seed's 4096 budget (len() for the seed,
characters for tokenbatch's default counting too), and no queue limit.

    build/bench-venv/bin/python -m bench.python.submit_overhead [--sizes 1000 10000 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import statistics
import time

import tokenbatch
from bench.python import peers


@contextlib.contextmanager
def paused_gc():
    """The cyclic collector off for the timed part (for every row): its passes
    over the N pending tasks would otherwise land in whichever row happens to
    cross its thresholds, and swamp the differences measured."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def noop(texts):
    return list(texts)


async def floor_us(n: int) -> float:
    loop = asyncio.get_running_loop()

    pending: list[tuple[asyncio.Future, str]] = []

    def resolve_all():
        for future, text in pending:
            future.set_result(text)

    async def one(text):
        future = asyncio.get_running_loop().create_future()
        pending.append((future, text))
        if len(pending) == n:
            loop.call_soon(resolve_all)
        return await future

    texts = [f"text number {i}" for i in range(n)]
    with paused_gc():
        start = time.perf_counter()
        results = await asyncio.gather(*(one(t) for t in texts))
        elapsed = time.perf_counter() - start
    assert results == texts
    return elapsed / n * 1e6


async def submit_many_us(n: int) -> float:
    scheduler = tokenbatch.Scheduler(lambda batch: list(batch.texts), max_batch_size=64, max_wait=0.004,
                                     max_batch_tokens=4096, max_queue_size=0).start()
    texts = [f"text number {i}" for i in range(n)]
    with paused_gc():
        start = time.perf_counter()
        results = await scheduler.submit_many(texts)
        elapsed = time.perf_counter() - start
    await scheduler.close()
    assert results == texts
    return elapsed / n * 1e6


async def round_us(name: str, n: int) -> float:
    # No queue limit: the largest round queues more than tokenbatch's default 65,536.
    submit, close = await peers.make(name, noop, max_batch_size=64, max_wait_ms=4.0, max_batch_tokens=4096,
                                     tokenbatch_options={"max_queue_size": 0})
    texts = [f"text number {i}" for i in range(n)]
    with paused_gc():
        start = time.perf_counter()
        results = await asyncio.gather(*(submit(t) for t in texts))
        elapsed = time.perf_counter() - start
    await close()
    assert results == texts, f"{name} returned other results"
    return elapsed / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peers", nargs="+", default=list(peers.NAMES), choices=peers.NAMES)
    args = parser.parse_args()
    table: dict[tuple[str, int], float] = {}
    rows = ["asyncio floor", *args.peers, "tokenbatch submit_many"]
    for n in args.sizes:
        for name in rows:
            if name == "asyncio floor":
                measure = lambda: asyncio.run(floor_us(n))  # noqa: E731
            elif name == "tokenbatch submit_many":
                measure = lambda: asyncio.run(submit_many_us(n))  # noqa: E731
            else:
                measure = lambda: asyncio.run(round_us(name, n))  # noqa: E731
            table[name, n] = statistics.median(measure() for _ in range(args.repeats))
            print(f"{name:>22} N={n:>6}: {table[name, n]:8.2f} µs/request", flush=True)
    print("\n| | " + " | ".join(f"N = {n:,}: µs/request, overhead above the floor (× tokenbatch's)"
                              for n in args.sizes) + " |")
    print("|---|" + "---|" * len(args.sizes))
    for name in rows:
        cells = []
        for n in args.sizes:
            overhead = table[name, n] - table["asyncio floor", n]
            ours = max(table["tokenbatch", n] - table["asyncio floor", n], 0.01)
            ratio = "" if name == "asyncio floor" else f" ({overhead / ours:.1f}×)"
            cells.append(f"{table[name, n]:.2f}, {overhead:+.2f}{ratio}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
