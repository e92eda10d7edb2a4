"""The Scheduler's guarantees (issue 34, item 4), each against a worker that
provokes it: bisection, OOM splitting, cancellation, back-pressure, deadlines,
broken workers, exactly-once resolution on close, bad input."""

import asyncio
import threading
import time

import pytest

import tokenbatch


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def echo(batch):
    return [f"r:{t}" for t in batch]


def test_results_come_back_to_their_own_submit_in_order():
    async def main():
        async with tokenbatch.Scheduler(echo, max_batch_size=7) as s:
            texts = [f"t{i}" * (1 + i % 5) for i in range(200)]
            return texts, await asyncio.gather(*(s.submit(t) for t in texts))

    texts, results = run(main())
    assert results == [f"r:{t}" for t in texts]


def test_a_batch_never_costs_more_than_the_budget():
    seen = []

    def worker(batch):
        seen.append((len(batch), batch.max_tokens, batch.cost))
        return list(batch)

    async def main():
        async with tokenbatch.Scheduler(worker, max_batch_tokens=100, cost_model="padded", max_wait=0.01) as s:
            await asyncio.gather(*(s.submit("x" * n) for n in [5, 90, 7, 50, 3, 40, 20, 99, 1] * 10))

    run(main())
    assert seen and all(cost == b * lmax <= 100 for b, lmax, cost in seen)


def test_a_poison_input_fails_alone():
    calls = []

    def worker(batch):
        calls.append(len(batch))
        if any(t == "poison" for t in batch):
            raise ValueError("cannot embed poison")
        return [t.upper() for t in batch]

    texts = ["aaaaaa", "bbbbbb", "poison", "cccccc", "dddddd", "eeeeee", "ffffff", "gggggg"]

    # One batch of all eight: it closes when full, and the window is far longer
    # than submitting them can take.
    async def main():
        async with tokenbatch.Scheduler(worker, max_batch_size=len(texts), max_wait=30, packing="fifo",
                                        batch_window="fixed") as s:
            return await asyncio.gather(*(s.submit(t) for t in texts), return_exceptions=True)

    results = run(main())
    assert results[:2] == ["AAAAAA", "BBBBBB"] and results[3:] == [t.upper() for t in texts[3:]]
    assert isinstance(results[2], ValueError) and str(results[2]) == "cannot embed poison"
    # One batch of eight, bisected: 8 -> 4 + 4 -> (2 + 2) -> (1 + 1).
    assert calls[0] == 8 and calls.count(1) == 2 and len(calls) == 7


def test_out_of_memory_splits_the_batch_and_lowers_the_budget():
    limit = 300  # the worker "runs out of memory" above this many padded tokens

    class FakeOom(RuntimeError):
        pass

    def worker(batch):
        if batch.cost > limit:
            raise FakeOom(f"CUDA out of memory ({batch.cost})")
        return [len(t) for t in batch]

    async def main():
        async with tokenbatch.Scheduler(worker, max_batch_tokens=1000, out_of_memory=[FakeOom], max_wait=0.05) as s:
            results = await asyncio.gather(*(s.submit("y" * 50) for _ in range(20)))
            return results, s.stats()

    results, stats = run(main())
    assert results == [50] * 20
    assert stats.oom_events >= 1 and stats.effective_budget < 1000


def test_cancelling_the_first_of_n_shifts_no_result():
    started = threading.Event()
    release = threading.Event()
    computed = []

    def worker(batch):
        started.set()
        release.wait(10)
        computed.extend(batch)
        return [f"r:{t}" for t in batch]

    async def main():
        async with tokenbatch.Scheduler(worker, max_batch_size=1, max_wait=0) as s:
            blocker = asyncio.ensure_future(s.submit("blocker"))
            assert await asyncio.to_thread(started.wait, 30), "the first batch never reached the worker"
            tasks = [asyncio.ensure_future(s.submit(f"q{i}")) for i in range(10)]
            await asyncio.sleep(0.01)
            tasks[0].cancel()  # queued behind the blocker: removed, never computed
            await asyncio.sleep(0)  # the cancellation reaches submit, which cancels the request
            release.set()
            results = await asyncio.gather(*tasks[1:])
            assert tasks[0].cancelled()
            return await blocker, results, s.stats()

    blocked, results, stats = run(main())
    assert blocked == "r:blocker"
    assert results == [f"r:q{i}" for i in range(1, 10)]
    assert stats.failures.get("cancelled") == 1 and stats.requests_succeeded == 10
    assert "q0" not in computed


def test_a_full_queue_raises_overloaded_with_retry_after():
    started = threading.Event()
    release = threading.Event()

    def worker(batch):
        started.set()
        release.wait(10)
        return list(batch)

    async def main():
        async with tokenbatch.Scheduler(worker, max_queue_size=3, max_batch_size=1, max_wait=0) as s:
            tasks = [asyncio.ensure_future(s.submit("t0"))]
            assert await asyncio.to_thread(started.wait, 30), "the first batch never reached the worker"
            tasks += [asyncio.ensure_future(s.submit(f"t{i}")) for i in range(1, 4)]
            await asyncio.sleep(0.05)
            with pytest.raises(tokenbatch.Overloaded) as raised:
                await s.submit("one too many")
            release.set()
            return raised.value, await asyncio.gather(*tasks)

    error, results = run(main())
    assert error.retry_after > 0 and "queue" in str(error)
    assert results == [f"t{i}" for i in range(4)]


def test_a_missed_deadline_raises_deadline_exceeded():
    release = threading.Event()

    def worker(batch):
        release.wait(10)
        return list(batch)

    async def main():
        async with tokenbatch.Scheduler(worker, max_batch_size=1, max_wait=0) as s:
            first = asyncio.ensure_future(s.submit("slow"))
            await asyncio.sleep(0.02)
            with pytest.raises(tokenbatch.DeadlineExceeded):
                await s.submit("late", timeout=0.05)
            release.set()
            return await first

    assert run(main()) == "slow"


@pytest.mark.parametrize("returned", [lambda b: list(b)[:-1], lambda b: None, lambda b: list(b) + ["extra"]])
def test_a_worker_returning_the_wrong_number_fails_every_input_clearly(returned):
    async def main():
        async with tokenbatch.Scheduler(returned, max_wait=0.02) as s:
            return await asyncio.gather(*(s.submit(f"t{i}") for i in range(5)), return_exceptions=True)

    results = run(main())
    assert len(results) == 5
    for r in results:
        assert isinstance(r, tokenbatch.WorkerError) and "the worker returned" in str(r)


def test_close_drains_every_queued_request():
    def worker(batch):
        time.sleep(0.002)
        return list(batch)

    async def main():
        s = tokenbatch.Scheduler(worker, max_batch_size=4).start()
        tasks = [asyncio.ensure_future(s.submit(f"t{i}")) for i in range(100)]
        await asyncio.sleep(0)
        await s.close()
        return await asyncio.gather(*tasks)

    assert run(main()) == [f"t{i}" for i in range(100)]


def test_close_with_cancel_queued_fails_the_queue_with_shutting_down():
    release = threading.Event()
    started = threading.Event()

    def worker(batch):
        started.set()
        release.wait(10)
        return list(batch)

    async def main():
        s = tokenbatch.Scheduler(worker, max_batch_size=1, max_wait=0).start()
        tasks = [asyncio.ensure_future(s.submit(f"t{i}")) for i in range(10)]
        assert await asyncio.to_thread(started.wait, 30), "the first batch never reached the worker"  # t0 in flight, t1..t9 queued
        closing = asyncio.ensure_future(s.close(cancel_queued=True))
        # t0 is released only once the queued ones have failed, so that none of
        # them could have been run after it instead.
        await asyncio.wait(tasks[1:], timeout=10)
        release.set()
        await closing
        return await asyncio.gather(*tasks, return_exceptions=True)

    results = run(main())
    assert results[0] == "t0"  # in flight: finishes
    assert all(isinstance(r, tokenbatch.ShuttingDown) for r in results[1:])


def test_submit_after_close_and_bad_input_raise_clear_errors():
    async def main():
        s = tokenbatch.Scheduler(echo).start()
        with pytest.raises(TypeError, match="str or a sequence of token ids, not dict"):
            await s.submit({"text": "x"})
        with pytest.raises(tokenbatch.InvalidInput, match="token"):
            await s.submit("")
        with pytest.raises(tokenbatch.OversizeError, match="4097"):
            await s.submit("z" * 4097)
        await s.close()
        with pytest.raises(tokenbatch.ShuttingDown):
            await s.submit("after close")

    run(main())
    with pytest.raises(ValueError, match="max_batch_tokens"):
        tokenbatch.Scheduler(echo, max_batch_tokens=0).start()
    with pytest.raises(ValueError, match="packing policy"):
        tokenbatch.Scheduler(echo, packing="random").start()
