"""The soak's client: every request it sends and what it recorded about each.

`Client` holds the run's state (request records, violations, bursts, resource
samples, scrapes) and sends the three kinds of request: a plain one on a pooled
keep-alive connection, a deliberate disconnect (after the whole request or in
the middle of the body) and a burst on fresh connections; plus GET /metrics.
Each reply is judged on arrival: echoed X-Request-Id, a JSON body, a valid
200 body, a 429 with Retry-After.
"""

from __future__ import annotations

import asyncio
import collections
import json
import random

from bench.harness import prometheus
from bench.soak.soak_http import Conn, NoResponse, Pool, Response, build_request, now
from bench.soak.soak_requests import Payloads, Req, check_embeddings
from bench.soak.soak_server import proc_stats


class Client:
    def __init__(self, args, host: str, port: int, pid: int):
        self.args = args
        self.host = host
        self.port = port
        self.hostport = f"{host}:{port}"
        self.pid = pid
        self.rng = random.Random(args.seed)
        self.payloads = Payloads(args, self.rng)
        self.open_conns = 0
        self.pool = Pool(self, args.idle_close_s)
        self.reqs: list[Req] = []
        self.tasks: set[asyncio.Task] = set()
        self.violations: list[dict] = []
        self.meta_replies: collections.Counter = collections.Counter()  # (route, status) of scrapes and probes
        self.meta_errors: list[str] = []
        self.bursts: list[list[float]] = []  # [start, end]
        self.samples: list[dict] = []
        self.scrapes: list[dict] = []
        self.seq = 0
        self.max_lag = 0.0
        self.skipped_lag_s = 0.0  # schedule time the generator skipped after falling behind
        self.t0 = 0.0
        self.t_kill: float | None = None

    # ---- plumbing
    def violation(self, kind: str, rid: str, detail: str):
        self.violations.append({"kind": kind, "rid": rid, "detail": detail, "t": round(now() - self.t0, 3)})

    async def connect(self) -> Conn:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(lambda: Conn(self), self.host, self.port)
        return proto

    def next_rid(self, cls: str) -> str:
        self.seq += 1
        return f"sk{self.seq:07d}-{cls}"

    def spawn(self, coro):
        t = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)
        return t

    # ---- checking one reply
    def judge_reply(self, req: Req, resp: Response):
        req.status = resp.status
        req.outcome = "reply"
        echoed = resp.header("x-request-id")
        if echoed != req.rid:
            self.violation("mismatch", req.rid, f"reply carries x-request-id {echoed!r}")
            req.detail = f"x-request-id {echoed!r}"
        try:
            payload = json.loads(resp.body)
        except ValueError as e:
            req.detail = f"body is not JSON: {e}"
            return
        if resp.status == 200:
            err = check_embeddings(req, payload, self.args.noop_hidden)
            if err:
                req.detail = err
            return
        if isinstance(payload, dict):
            e = payload.get("error")
            req.message = e.get("message", "") if isinstance(e, dict) else str(e)
        if resp.status == 429:
            req.kind429 = "concurrency" if "max_concurrent_requests" in req.message else "queue"
            if resp.header("retry-after") is None:
                req.detail = "429 without Retry-After"

    # ---- request kinds
    async def plain(self, cls: str, phase: str, conn: Conn | None = None):
        route, body, extra, n = self.payloads.make(cls)
        req = Req(self.next_rid(cls), cls, route, n, phase)
        self.reqs.append(req)
        data = build_request("POST", route, self.hostport, req.rid, json.dumps(body).encode(), extra)
        req.t_send = now()
        try:
            if conn is None:
                conn = await self.pool.get()
        except ConnectionRefusedError as e:
            req.outcome, req.detail, req.t_done = "refused", repr(e), now()
            return
        except OSError as e:
            req.outcome, req.detail, req.t_done = "connect_error", repr(e), now()
            return
        fut, whole = conn.send(data, req.rid)
        req.t_written, req.written_whole = now(), whole
        try:
            resp = await asyncio.wait_for(fut, self.args.request_timeout_s)
        except NoResponse as e:
            req.outcome, req.received, req.detail, req.t_done = e.kind, e.received, e.detail, now()
            conn.close()
            return
        except asyncio.TimeoutError:
            req.outcome, req.t_done = "timeout", now()
            conn.reusable = False
            conn.close()
            return
        req.t_done = now()
        self.judge_reply(req, resp)
        self.pool.put(conn)

    async def disconnect(self, cls: str, phase: str):
        route, body, extra, n = self.payloads.make(cls)
        req = Req(self.next_rid(cls), cls, route, n, phase)
        self.reqs.append(req)
        raw = json.dumps(body).encode()
        req.t_send = now()
        try:
            conn = await self.connect()
        except OSError as e:
            req.outcome, req.detail, req.t_done = "connect_error", repr(e), now()
            return
        conn.abandoned = True
        if cls == "disconnect_after_send":
            conn.transport.write(build_request("POST", route, self.hostport, req.rid, raw, extra))
            # Close at once half the time, else after a few milliseconds.
            if self.rng.random() < 0.5:
                await asyncio.sleep(self.rng.uniform(0.0005, 0.008))
        else:
            whole = build_request("POST", route, self.hostport, req.rid, raw, extra)
            cut = len(whole) - len(raw) + max(1, len(raw) // 2)
            conn.transport.write(whole[:cut])
            await asyncio.sleep(self.rng.uniform(0.0, 0.005))
        req.t_written = now()
        req.received = conn.received
        conn.close()
        req.outcome, req.t_done = "disconnected", now()

    async def burst(self):
        a = self.args
        size = a.burst_size
        rec = [now(), now()]
        self.bursts.append(rec)
        conns = await asyncio.gather(*[self.connect() for _ in range(size)], return_exceptions=True)
        reqs = []
        for c in conns:
            route, body, extra, n = self.payloads.make("burst")
            req = Req(self.next_rid("burst"), "burst", route, n, "load")
            self.reqs.append(req)
            req.t_send = now()
            if isinstance(c, BaseException):
                req.outcome, req.detail, req.t_done = "connect_error", repr(c), now()
                continue
            reqs.append((req, c, build_request("POST", route, self.hostport, req.rid, json.dumps(body).encode())))
        futs = []
        for req, c, data in reqs:
            fut, whole = c.send(data, req.rid)
            req.t_written, req.written_whole = now(), whole
            futs.append(fut)

        async def one(req, c, fut):
            try:
                resp = await asyncio.wait_for(fut, a.request_timeout_s)
            except NoResponse as e:
                req.outcome, req.received, req.detail, req.t_done = e.kind, e.received, e.detail, now()
                return
            except asyncio.TimeoutError:
                req.outcome, req.t_done = "timeout", now()
                return
            finally:
                c.close()
            req.t_done = now()
            self.judge_reply(req, resp)

        await asyncio.gather(*[one(r, c, f) for (r, c, _), f in zip(reqs, futs)])
        # The burst's hold on the global limits lasts until the server has
        # worked off what queued during it, not until its last reply: its
        # window ends at the first scrape that finds the queue empty and fewer
        # requests in flight than the concurrency limit.
        settle_until = now() + a.burst_settle_max_s
        while now() < settle_until:
            scraped = await self.scrape("burst_settle")
            if scraped is not None:
                m = scraped["metrics"]
                if (prometheus.value(m, "tokenbatch_queue_size") == 0
                        and prometheus.value(m, "tokenbatch_http_in_flight") < a.max_concurrent_requests):
                    break
            await asyncio.sleep(0.05)
        rec[1] = now()

    async def get(self, path: str, conn: Conn | None = None, timeout: float = 10.0) -> Response | None:
        """GET on `conn` (kept) or a fresh connection (closed after); None if it failed."""
        own = conn is None
        try:
            if own:
                conn = await self.connect()
            rid = self.next_rid("meta")
            fut, _ = conn.send(build_request("GET", path, self.hostport, rid), rid)
            resp = await asyncio.wait_for(fut, timeout)
        except (OSError, NoResponse, asyncio.TimeoutError) as e:
            self.meta_errors.append(f"GET {path}: {e!r}")
            if conn is not None:
                conn.close()
            return None
        if own:
            conn.close()
        self.meta_replies[(path, resp.status)] += 1
        if resp.header("x-request-id") != rid:
            self.violation("mismatch", rid, f"reply carries x-request-id {resp.header('x-request-id')!r}")
        return resp

    async def scrape(self, label: str, conn: Conn | None = None) -> dict | None:
        t = now()
        resp = await self.get("/metrics", conn)
        if resp is None or resp.status != 200:
            return None
        m = prometheus.parse(resp.body.decode())
        rec = {"label": label, "t": round(t - self.t0, 3), "metrics": m}
        if self.scrapes:
            prev = self.scrapes[-1]["metrics"]
            for key, v in prev.items():
                name = key[0]
                if (name.endswith("_total") or name.endswith("_count") or name.endswith("_bucket")) and m.get(key, 0) < v:
                    self.violation("metrics", "", f"counter {name}{dict(key[1])} went down: {v} -> {m.get(key, 0)}")
        self.scrapes.append(rec)
        return rec


    def sample(self) -> dict | None:
        """Records (and returns) the server's RSS, fds and threads, and the fds net of this
        client's connections; None if the server is gone."""
        stats = proc_stats(self.pid)
        if stats is None:
            return None
        rec = {
            "t": round(now() - self.t0, 3),
            **stats,
            "client_conns": self.open_conns,
            "excess_fds": stats["fds"] - self.open_conns,
        }
        self.samples.append(rec)
        return rec
