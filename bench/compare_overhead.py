#!/usr/bin/env python3
"""Runtime overhead per request: tokenbatch's Batcher vs the seed's Python scheduler.

Runs, on the same machine in one invocation:
  1. build/bench/runtime_overhead_bench (Google Benchmark): submit -> resolved
     future with a no-op backend, 1 and 2 producer threads, 20,000 requests an
     iteration;
  2. the seed's own TokenBudgetBatchScheduler (extracted from the design note)
     with a no-op async gpu_worker on the same mix (half 20-token, half 400-token
     requests; the seed estimates tokens as len(text), so texts of those lengths),
     budget 4096, 64 per batch, 4 ms window: submit all, await all.
Prints a markdown table with µs per request and the ratio.
Usage: python3 bench/compare_overhead.py [--build build] [--requests 20000] [--repeats 5]
"""
import argparse
import asyncio
import json
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from seed_scheduler import extract_seed_scheduler  # noqa: E402


async def seed_run(scheduler_cls, requests):
    async def gpu_worker(texts):
        return [0] * len(texts)

    # max_items_limit / window / budget are the seed's defaults: 64, 4 ms, 4096.
    scheduler = scheduler_cls(gpu_worker, max_token_budget_per_batch=4096, max_items_limit=64, max_wait_ms=4.0)
    import builtins
    quiet_print = builtins.print
    builtins.print = lambda *a, **k: None  # the seed prints a banner on start
    try:
        await scheduler.start()
    finally:
        builtins.print = quiet_print
    texts = ["x" * (20 if i % 2 else 400) for i in range(requests)]
    start = time.perf_counter()
    await asyncio.gather(*(scheduler.submit(t) for t in texts))
    elapsed = time.perf_counter() - start
    scheduler._is_running = False
    scheduler._loop_task.cancel()
    return elapsed / requests * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    binary = pathlib.Path(args.build) / "bench" / "runtime_overhead_bench"
    out = subprocess.run([str(binary), "--benchmark_format=json", f"--benchmark_repetitions={args.repeats}",
                          "--benchmark_report_aggregates_only=true"],
                         check=True, capture_output=True, text=True).stdout
    ours = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            ours[b["run_name"]] = 1e6 / b["items_per_second"]

    scheduler_cls = extract_seed_scheduler()
    seed_us = sorted(asyncio.run(seed_run(scheduler_cls, args.requests)) for _ in range(args.repeats))
    seed_median = seed_us[len(seed_us) // 2]

    print(f"| run | µs per request (median of {args.repeats}) | seed Python / this |")
    print("|---|---|---|")
    print(f"| seed Python TokenBudgetBatchScheduler, 1 producer (asyncio), await each future | {seed_median:.3f} | 1.0 |")
    for name, us in ours.items():
        print(f"| tokenbatch {name.replace('/real_time', '')} | {us:.3f} | {seed_median / us:.1f}x |")


if __name__ == "__main__":
    main()
