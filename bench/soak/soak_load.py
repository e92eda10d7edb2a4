"""The soak's background loops, run while load runs.

The open-loop generator (Poisson arrivals at a fixed rate, each a request of a
class drawn from the weighted mix, spawned without waiting for earlier ones;
arrivals missed while the client itself was held up are skipped, not sent at
once),
the burster (a burst every --burst-interval-s), the resource sampler (which
also closes idle keep-alive connections), the periodic /metrics scraper and the
per-window progress line.
"""

from __future__ import annotations

import asyncio

from bench.harness.stats import percentile
from bench.soak.soak_client import Client
from bench.soak.soak_http import now
from bench.soak.soak_requests import DISCONNECT_CLASSES


# The most the generator may fall behind its schedule before it skips ahead:
# sending every missed arrival at once would be a burst of the client's making
# (over the server's limits after a long stall), which the checks would blame
# on the server.
MAX_LAG_S = 0.25


async def generator(client: Client, rate: float, start: float, until: float, classes: dict[str, float], phase: str):
    names = list(classes)
    weights = [classes[c] for c in names]
    t = start
    while True:
        t += client.rng.expovariate(rate)
        if t >= until:
            return
        delay = t - now()
        if delay > 0:
            await asyncio.sleep(delay)
        lag = now() - t
        client.max_lag = max(client.max_lag, lag)
        if lag > MAX_LAG_S:
            # Resume the schedule from now; the arrivals in between are not sent.
            client.skipped_lag_s += lag
            t = now()
        cls = client.rng.choices(names, weights)[0]
        if cls in DISCONNECT_CLASSES:
            client.spawn(client.disconnect(cls, phase))
        else:
            client.spawn(client.plain(cls, phase))


async def burster(client: Client, until: float):
    a = client.args
    t = client.t0 + a.burst_first_s
    while t < until:
        await asyncio.sleep(max(0.0, t - now()))
        client.spawn(client.burst())
        t += a.burst_interval_s


async def sampler(client: Client, until: float):
    while now() < until:
        client.sample()
        client.pool.reap()
        await asyncio.sleep(client.args.sample_s)


async def scraper(client: Client, until: float):
    while True:
        await asyncio.sleep(client.args.scrape_s)
        if now() >= until - 1:
            return
        rec = await client.scrape("periodic")
        if rec is None:
            client.violation("metrics", "", "a periodic /metrics scrape failed")


async def progress(client: Client, until: float):
    w = client.args.window_s
    k = 1
    while client.t0 + k * w <= until + 0.5:
        await asyncio.sleep(max(0.0, client.t0 + k * w - now()))
        lo, hi = (k - 1) * w, k * w
        rows = [r for r in client.reqs if r.phase == "load" and lo <= r.t_send - client.t0 < hi]
        lat = sorted(r.t_done - r.t_send for r in rows if r.status == 200 and r.cls != "burst" and r.t_done)
        s = [x for x in client.samples if lo <= x["t"] < hi]
        p = lambda q: f"{1000 * percentile(lat, q):.1f}" if lat else "-"  # noqa: E731
        print(
            f"[{hi:6.0f}s] sent {len(rows):6d}  ok {sum(r.status == 200 for r in rows):6d}  "
            f"p50 {p(0.5)} ms  p99 {p(0.99)} ms  "
            f"rss {s[-1]['rss_kb'] / 1024 if s else 0:.1f} MiB  fds {s[-1]['fds'] if s else '-'}  "
            f"conns {client.open_conns}  in flight {len(client.tasks)}",
            flush=True,
        )
        k += 1
