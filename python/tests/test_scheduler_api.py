"""The Scheduler's calls: coroutine workers, submit_many, as_completed,
threads, uvloop, several loops, priorities, oversize policies, Batch arrays,
stats, and Ctrl-C."""

import asyncio
import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import uvloop

import tokenbatch


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


async def async_echo(batch):
    await asyncio.sleep(0)
    return [t[::-1] for t in batch]


def test_a_coroutine_worker_is_awaited_on_the_loop():
    async def main():
        async with tokenbatch.Scheduler(async_echo) as s:
            return await asyncio.gather(*(s.submit(f"ab{i}") for i in range(50)))

    assert run(main()) == [f"ab{i}"[::-1] for i in range(50)]


def test_a_batch_wakes_its_loop_once():
    # Batches close only when full (a fixed window far longer than the test, and
    # inputs of one length), so the 640 requests make exactly ten batches however
    # slowly they are submitted.
    async def main():
        async with tokenbatch.Scheduler(lambda b: list(b), max_batch_size=64, max_wait=30,
                                        batch_window="fixed") as s:
            await asyncio.gather(*(s.submit(f"t{i:03d}") for i in range(640)))
            return s.stats().batches, s._channels[asyncio.get_running_loop()].wakeups

    batches, wakeups = run(main())
    # An eventfd write per batch, and another only when the loop drains while a
    # batch is still being resolved: far fewer than one per request.
    assert batches == 10 and 1 <= wakeups <= 2 * batches


def test_submit_many_and_as_completed():
    def worker(batch):
        return [ValueError(t) if t == "bad" else t * 2 for t in batch]

    async def main():
        async with tokenbatch.Scheduler(worker) as s:
            many = await s.submit_many(["a", "bad", "c"], return_exceptions=True)
            with pytest.raises(ValueError, match="bad"):
                await s.submit_many(["a", "bad"])
            seen = {}
            async for index, result in s.as_completed(["x", "y", "bad"], return_exceptions=True):
                seen[index] = result
            return many, seen

    many, seen = run(main())
    assert many[0] == "aa" and many[2] == "cc" and isinstance(many[1], ValueError)
    assert seen[0] == "xx" and seen[1] == "yy" and isinstance(seen[2], ValueError)


def test_plain_threads_use_submit_sync_and_futures():
    with tokenbatch.Scheduler(lambda b: [len(t) for t in b]) as s:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda i: s.submit_sync("w" * (1 + i % 9)), range(200)))
        future = s.submit_future("abc")
        assert future.result(10) == 3
    assert results == [1 + i % 9 for i in range(200)]


def test_uvloop_and_several_loops_share_one_scheduler():
    s = tokenbatch.Scheduler(lambda b: [t + "!" for t in b]).start()

    async def client(prefix):
        return await asyncio.gather(*(s.submit(f"{prefix}{i}") for i in range(100)))

    out = {}

    def in_thread(name, use_uvloop):
        runner = uvloop.run if use_uvloop else asyncio.run
        out[name] = runner(client(name))

    threads = [threading.Thread(target=in_thread, args=(f"L{k}", k % 2 == 0)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    s.close_sync()
    for k in range(4):
        assert out[f"L{k}"] == [f"L{k}{i}!" for i in range(100)]


def test_higher_priority_is_served_first():
    order = []
    release = threading.Event()
    started = threading.Event()

    def worker(batch):
        started.set()
        release.wait(10)
        order.extend(batch)
        return list(batch)

    async def queued(s, n):
        # Bounded, so that a scheduler that never queues fails instead of hanging.
        await asyncio.wait_for(_until(lambda: s.stats().queue_requests >= n), timeout=30)

    async def _until(condition):
        while not condition():
            await asyncio.sleep(0.001)

    async def main():
        async with tokenbatch.Scheduler(worker, max_batch_size=1, max_wait=0) as s:
            first = asyncio.ensure_future(s.submit("running"))
            assert await asyncio.to_thread(started.wait, 30), "the first batch never reached the worker"
            # The lows queue first, behind the running batch; the high comes last.
            low = [asyncio.ensure_future(s.submit(f"low{i}", priority=0)) for i in range(3)]
            await queued(s, 3)
            high = asyncio.ensure_future(s.submit("high", priority=5))
            await queued(s, 4)
            release.set()
            await asyncio.gather(first, high, *low)

    run(main())
    assert order[:2] == ["running", "high"]


def test_truncate_and_split_windows(bert_tokenizer_path):
    tok = tokenbatch.Tokenizer.from_file(bert_tokenizer_path)
    long_text = " ".join(f"word{i}" for i in range(300))
    full = tok.encode(long_text).ids
    seen = []

    def worker(batch):
        ids = batch.input_ids
        seen.append(ids.copy())
        return [np.array([float(n)]) for n in batch.token_counts]

    async def main():
        async with tokenbatch.Scheduler(worker, tokenizer=tok, oversize="truncate", max_input_tokens=64) as s:
            truncated = await s.submit(long_text)
        async with tokenbatch.Scheduler(worker, tokenizer=tok, oversize="split", max_input_tokens=64,
                                        split_overlap_tokens=8) as s:
            merged = await s.submit(long_text)
        return truncated, merged

    truncated, merged = run(main())
    assert truncated[0] == 64
    first = seen[0][0]
    assert list(first[:63]) == full[:63] and first[63] == full[-1]  # [CLS] ... [SEP] kept
    assert 1 < len(seen) and all(row[0] == full[0] and row[row != 0][-1] == full[-1] for b in seen[1:] for row in b)
    assert 0 < merged[0] <= 64


def test_batch_arrays_match_the_tokenizer(bert_tokenizer_path):
    tok = tokenbatch.Tokenizer.from_file(bert_tokenizer_path)
    texts = ["short", "a somewhat longer sentence here", "mid length text"]
    got = {}

    def worker(batch):
        got["ids"], got["mask"] = batch.input_ids, batch.attention_mask
        got["packed"], got["cu"] = batch.packed_input_ids, batch.cu_seqlens
        got["texts"] = list(batch.texts)
        return [None] * len(batch)

    async def main():
        async with tokenbatch.Scheduler(worker, tokenizer=tok, max_wait=0.05, packing="fifo") as s:
            await asyncio.gather(*(s.submit(t) for t in texts))

    run(main())
    order = [texts.index(t) for t in got["texts"]]
    encodings = [tok.encode(texts[i]).ids for i in order]
    lmax = max(map(len, encodings))
    assert got["ids"].shape == (3, lmax) and got["ids"].dtype == np.int64
    for row, mask, ids in zip(got["ids"], got["mask"], encodings):
        assert list(row[: len(ids)]) == ids and not row[len(ids):].any()
        assert mask.sum() == len(ids)
    assert list(got["packed"]) == [i for e in encodings for i in e]
    assert list(got["cu"]) == [0] + list(np.cumsum([len(e) for e in encodings]))


def test_batch_arrays_without_ids_raise_and_torch_shares_memory():
    torch = pytest.importorskip("torch") if False else __import__("torch")
    errors = []

    def worker(batch):
        try:
            batch.input_ids
        except ValueError as e:
            errors.append(str(e))
        return list(batch)

    def ids_worker(batch):
        t = torch.from_dlpack(batch.input_ids)
        return [int(x) for x in t.sum(dim=1)]

    async def main():
        async with tokenbatch.Scheduler(worker) as s:
            await s.submit("text")
        async with tokenbatch.Scheduler(ids_worker) as s:
            return await s.submit([1, 2, 3])

    assert run(main()) == 6
    assert errors and "needs token ids" in errors[0]


def test_stats_report_batches_and_padding():
    async def main():
        async with tokenbatch.Scheduler(echo_len, max_wait=0.01) as s:
            await asyncio.gather(*(s.submit("q" * n) for n in range(1, 101)))
            return s.stats()

    stats = run(main())
    assert stats.requests_submitted == 100 and stats.requests_succeeded == 100
    assert stats.batches >= 2 and 0 < stats.padding_efficiency <= 1
    assert stats.mean_batch_size * stats.batches == pytest.approx(100)


def echo_len(batch):
    return [len(t) for t in batch]


# The child restores Python's own SIGINT handler: a test run in the background
# (nohup, `cmd &`) starts with SIGINT ignored, and children inherit that.
CTRL_C_CHILD = """
import asyncio, signal, threading, tokenbatch, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
gate = threading.Event()
def worker(batch):
    gate.wait(0.5)
    return list(batch)
async def main():
    async with tokenbatch.Scheduler(worker, max_batch_size=1, max_wait=0) as s:
        print("ready", flush=True)
        await asyncio.gather(*(s.submit(f"t{i}") for i in range(1000)))
try:
    asyncio.run(main())
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_during_await_leaves_nothing_hanging():
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0 and "interrupted" in out


def test_a_calibration_file_is_checked_before_it_sizes_batches(repo, tmp_path):
    # The committed calibration misses its own large shapes, so serve refuses it,
    # and so does the Scheduler, naming the file and the failed check.
    path = repo / "testdata/calibration/minilm_cpu_2_30.json"
    with pytest.raises(ValueError, match="minilm_cpu_2_30.json is refused: the memory fit misses"):
        tokenbatch.Scheduler(echo_len, cost_model=path)
    with pytest.raises(ValueError, match="cannot be read"):
        tokenbatch.Scheduler(echo_len, cost_model=tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a calibration file"):
        tokenbatch.Scheduler(echo_len, cost_model=tmp_path / "bad.json")
