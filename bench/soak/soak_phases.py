"""The soak's timeline: the load phase, the settle, and the shutdown phase.

Load: the open-loop generator, bursts, sampling, scraping and progress for
--duration-s, then every client request is awaited. Settle: /metrics is polled
until the server's in-flight gauge is back to 1 and its queue empty, then the
final scrape (the one compared with the client's counts), a snapshot of the
server's log and a few resource samples of the server at rest. Shutdown: load
again, large requests queued just before one SIGTERM, a scrape during the drain
on a connection opened beforehand, load kept up for a moment after the signal,
and the server's exit awaited.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import subprocess

from bench.harness import processes, prometheus
from bench.soak.soak_client import Client
from bench.soak.soak_http import now
from bench.soak.soak_load import burster, generator, progress, sampler, scraper
from bench.soak.soak_requests import CLASS_WEIGHTS, SHUTDOWN_CLASSES
from bench.soak.soak_server import log_replies


async def run(args, proc: subprocess.Popen, host: str, port: int, log_path: str) -> dict:
    client = Client(args, host, port, proc.pid)
    client.t0 = now()
    weights = dict(CLASS_WEIGHTS)
    if args.fail_id < 0:
        weights["poison"] = 0
    if args.oom_above_tokens <= 0:
        weights["oom_lone"] = 0
    weights = {k: v for k, v in weights.items() if v > 0}

    # Before load.
    rec = await client.scrape("before")
    if rec is None:
        raise RuntimeError("the first /metrics scrape failed")
    client.sample()

    # Load phase.
    D = args.duration_s
    client.t0 = now()
    end = client.t0 + D
    print(f"soak: load phase {D:g} s at {args.rate:g} req/s (Poisson), bursts of {args.burst_size} every "
          f"{args.burst_interval_s:g} s, windows of {args.window_s:g} s", flush=True)
    bg = [
        asyncio.create_task(sampler(client, end)),
        asyncio.create_task(scraper(client, end)),
        asyncio.create_task(progress(client, end)),
    ]
    gen = asyncio.create_task(generator(client, args.rate, client.t0, end, weights, "load"))
    bursts = asyncio.create_task(burster(client, end - args.burst_interval_s / 2 if D > args.burst_interval_s else end - 5))
    await gen
    await bursts
    if client.tasks:
        await asyncio.wait(list(client.tasks), timeout=args.request_timeout_s + 10)
    for t in bg:
        t.cancel()
    await asyncio.gather(*bg, return_exceptions=True)
    client.sample()
    unsettled = len(client.tasks)

    # Settle: wait for the server to count every reply (disconnected requests too).
    settle_deadline = now() + 20
    settled = False
    while now() < settle_deadline:
        rec = await client.scrape("settle")
        if rec is not None:
            m = rec["metrics"]
            if (prometheus.value(m, "tokenbatch_http_in_flight") == 1
                    and prometheus.value(m, "tokenbatch_queue_size") == 0):
                settled = True
                break
        await asyncio.sleep(0.2)
    await asyncio.sleep(0.3)
    meta_before = collections.Counter(client.meta_replies)
    final = await client.scrape("final_load")
    if final is not None:
        final["meta_before"] = meta_before
    log_at_final = log_replies(processes.read_log(log_path))
    # The server at rest, for the resource checks: nothing in flight, nothing
    # queued, so what it holds now it keeps.
    rest_samples = []
    for _ in range(5):
        await asyncio.sleep(0.2)
        rec = client.sample()
        if rec is not None:
            rest_samples.append(rec)
    print(f"soak: load phase over: {sum(r.phase == 'load' for r in client.reqs)} requests; "
          f"settled={settled}; now the shutdown phase", flush=True)

    # Shutdown phase: load again, queued work, one SIGTERM while it runs.
    t_start = now()
    t_kill = t_start + args.drain_load_s
    t_stop = t_kill + args.post_sigterm_s
    shutdown_weights = {c: weights[c] for c in SHUTDOWN_CLASSES if c in weights}
    metrics_conn = None
    try:
        metrics_conn = await client.connect()
    except OSError as e:
        client.meta_errors.append(f"drain metrics connection: {e!r}")
    gen = asyncio.create_task(
        generator(client, args.shutdown_rate or args.rate, t_start, t_stop, shutdown_weights, "shutdown"))
    await asyncio.sleep(max(0.0, t_kill - 0.3 - now()))
    if metrics_conn:
        await client.scrape("pre_sigterm", metrics_conn)
    # Work for the drain: large requests written just before the signal, on
    # connections opened (and accepted) beforehand.
    drain_conns = []
    for _ in range(args.drain_large):
        try:
            drain_conns.append(await client.connect())
        except OSError as e:
            client.meta_errors.append(f"drain connection: {e!r}")
    await asyncio.sleep(max(0.0, t_kill - 0.01 - now()))
    for c in drain_conns:
        client.spawn(client.plain("large", "shutdown", c))
    await asyncio.sleep(max(0.008, t_kill - now()))
    client.t_kill = now()
    os.kill(proc.pid, signal.SIGTERM)
    exit_at: list[float] = []

    async def watch_exit():
        while proc.poll() is None:
            await asyncio.sleep(0.005)
        exit_at.append(now())

    watcher = asyncio.create_task(watch_exit())
    print(f"soak: SIGTERM sent at {client.t_kill - client.t0:.1f} s", flush=True)
    await asyncio.sleep(0.02)
    drain = await client.scrape("drain", metrics_conn) if metrics_conn and not metrics_conn.closed else None
    await gen
    try:
        await asyncio.wait_for(watcher, args.exit_timeout_s)
    except asyncio.TimeoutError:
        pass
    rc = proc.poll()
    t_exit = exit_at[0] if exit_at else now()
    if rc is None:
        processes.kill(proc, timeout_s=None)
    # The server is gone: every connection ends, every pending request resolves.
    if client.tasks:
        await asyncio.wait(list(client.tasks), timeout=15)
    client.pool.close_all()
    if metrics_conn is not None:
        metrics_conn.close()
    await asyncio.sleep(0.05)
    return {
        "client": client, "final": final, "drain": drain, "settled": settled, "unsettled": unsettled,
        "rc": rc, "exit_s": t_exit - client.t_kill, "log_at_final": log_at_final, "rest_samples": rest_samples,
    }
