#!/usr/bin/env python3
"""Low-overhead HTTP/1.1 keep-alive load client for embedding servers.

Replays the `text` fields of a workload JSON Lines file (as written by
`tokenbatch simulate --save-workload FILE.jsonl`: id, text, tokens, class,
arrival_us) against an embeddings route, POSTing {"input": text, "model": NAME}.
Raw asyncio streams (and uvloop when importable) with pre-encoded requests keep
the client's own CPU cost small, since it shares the machine with the server.

Modes:
  closed loop  --connections N, each connection sends its next request as soon as
               the previous reply arrives, for --duration S (counting the replies
               that complete inside the window, as wrk does) or --requests K;
  open loop    --rate R Poisson arrivals (seeded) for --duration S; each arrival
               takes an idle connection or opens one, up to --max-outstanding in
               flight, beyond which the arrival is dropped and counted (an open
               loop must not slow down when the server does). Latency runs from
               the scheduled arrival, so a late dispatcher is not hidden.
A --warmup S phase runs first with the same load and is not counted.

With --rerank-documents N each request is a rerank instead, in the Cohere/Jina
shape that tokenbatch's /v1/rerank and Infinity's /rerank take: {"model",
"query", "documents": N texts, "return_documents": false}, the query one of the
workload's short texts (at most 32 tokens) and the documents drawn from all of
its texts (seeded), so each request mixes lengths. Its `tokens` are the pairs'
(query + document, each) and it is counted as a "long" request.

Prints one JSON object: requests/s, tokens/s (sum of the workload's `tokens` of
the completed requests over the wall time; with --max-tokens also the sum of
min(tokens, cap), the work a truncating server really does), latency p50/p90/p99
per class and overall, errors, and, given --server-pid (repeatable; the
processes' descendants too, for servers that run workers in other processes),
the server's CPU seconds (utime+stime of all its threads from /proc) over the
measured window and CPU microseconds per token. Also the client's own CPU time.

Usage, from the repository root:
  build/peers-venv/bin/python -m bench.peers.load_client WORKLOAD.jsonl \\
      --url http://127.0.0.1:18700/v1/embeddings --model all-MiniLM-L6-v2 \\
      --connections 4 --warmup 2 --duration 10 [--server-pid PID ...]
  ... --rate 50 --duration 10 --max-outstanding 128
Its own ceiling: run bench/peers/trivial_server.py and point --url at it.
"""
import argparse
import asyncio
import json
import random
import resource
import sys
import time
import urllib.parse

from bench.harness.cpu import CLK_TCK, cpu_ticks, proc_tree
from bench.harness.stats import latency_summary


class Stats:
    """Latencies and counts of the measured phase only."""

    def __init__(self):
        self.lat = {"short": [], "long": []}
        self.tokens = 0
        self.tokens_capped = 0
        self.errors = {"status": 0, "parse": 0, "connection": 0}
        self.dropped = 0
        self.last_done = 0.0
        self.done_at = []  # perf_counter of every answered request


def load_rerank_workload(path, model, host_header, route, max_tokens, documents, seed, count=400):
    """Pre-encodes `count` rerank requests of `documents` documents each (see the module doc)."""
    with open(path, encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    queries = [r for r in recs if int(r["tokens"]) <= 32]
    if not queries or len(recs) < documents:
        sys.exit(f"load_client: {path} has too few texts for {documents}-document reranks")
    rng = random.Random(seed)
    items = []
    for k in range(count):
        query = queries[k % len(queries)]
        docs = rng.sample(recs, documents)
        body = json.dumps({"model": model, "query": query["text"], "documents": [d["text"] for d in docs],
                           "return_documents": False}, ensure_ascii=False).encode("utf-8")
        head = (f"POST {route} HTTP/1.1\r\nHost: {host_header}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        pair_tokens = [int(query["tokens"]) + int(d["tokens"]) for d in docs]
        capped = sum(min(t, max_tokens) if max_tokens else t for t in pair_tokens)
        items.append((head.encode("ascii") + body, "long", sum(pair_tokens), capped))
    return items


def load_workload(path, model, host_header, route, max_tokens):
    """Pre-encodes every request once, so the hot loop only writes bytes."""
    items = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            body = json.dumps({"input": rec["text"], "model": model},
                              ensure_ascii=False).encode("utf-8")
            head = (f"POST {route} HTTP/1.1\r\nHost: {host_header}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
            tokens = int(rec["tokens"])
            capped = min(tokens, max_tokens) if max_tokens else tokens
            items.append((head.encode("ascii") + body, rec.get("class", "short"), tokens, capped))
    if not items:
        sys.exit(f"load_client: {path} holds no requests")
    return items


async def read_response(reader):
    """Returns (status, body bytes); handles Content-Length and chunked replies."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    i = lower.find(b"\r\ncontent-length:")
    if i >= 0:
        j = lower.find(b"\r\n", i + 2)
        body = await reader.readexactly(int(lower[i + 17:j]))
    elif b"\r\ntransfer-encoding: chunked" in lower:
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # end of (empty) trailers
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(parts)
    else:
        body = b""
    close = b"\r\nconnection: close" in lower
    return status, body, close


class Conn:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self):
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def request(self, data, parse):
        """One request; returns None on success or the error kind."""
        try:
            if self.writer is None:
                await self.open()
            self.writer.write(data)
            status, body, close = await read_response(self.reader)
            if close:
                self.close()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            self.close()
            return "connection"
        if status != 200:
            return "status"
        if parse:
            try:
                json.loads(body)
            except ValueError:
                return "parse"
        return None


def record(stats, item, t_start, err):
    now = time.perf_counter()
    if err is None:
        stats.lat[item[1]].append(now - t_start)
        stats.tokens += item[2]
        stats.tokens_capped += item[3]
        stats.done_at.append(now)
    else:
        stats.errors[err] += 1
    stats.last_done = max(stats.last_done, now)


async def closed_loop(args, items, host, port, phase):
    """N connections in lock step with the server; phase[...] switches warm-up to measured.

    With --duration, what counts is every reply that completes inside the window
    (as wrk counts), whenever it was sent: the requests still in flight when the
    window opens occupy the server during it, and counting by send time would
    leave their service out and the drain after the window in, which under many
    connections and long latencies understates throughput. With --requests, the
    first K requests sent in the window are counted, each to its completion."""
    next_index = [0]
    measured = [0]

    async def worker():
        conn = Conn(host, port)
        while True:
            now = time.perf_counter()
            if phase["measuring"]:
                if args.requests and measured[0] >= args.requests:
                    break
                if not args.requests and now >= phase["end"]:
                    break
                measured[0] += 1
            item = items[next_index[0] % len(items)]
            next_index[0] += 1
            sent_measuring = phase["measuring"]
            err = await conn.request(item[0], args.parse)
            if args.requests:
                counted = sent_measuring
            else:
                counted = phase["measuring"] and time.perf_counter() <= phase["end"]
            if counted:
                record(phase["stats"], item, now, err)
            if err == "connection":
                await asyncio.sleep(0.01)  # a refused connect returns at once: do not spin on a dead server
        conn.close()

    await asyncio.gather(*(worker() for _ in range(args.connections)))


async def open_loop(args, items, host, port, phase):
    """Poisson arrivals; each arrival borrows an idle connection or opens a new one."""
    rng = random.Random(args.seed)
    idle = [Conn(host, port) for _ in range(min(args.connections, args.max_outstanding))]
    for c in idle:
        await c.open()
    outstanding = [0]
    tasks = set()

    async def one(item, t_sched, counted):
        conn = idle.pop() if idle else Conn(host, port)
        err = await conn.request(item[0], args.parse)
        idle.append(conn)
        outstanding[0] -= 1
        if counted:
            record(phase["stats"], item, t_sched, err)

    t_next = time.perf_counter()
    index = 0
    while True:
        t_next += rng.expovariate(args.rate)
        if phase["measuring"] and t_next >= phase["end"]:
            break
        delay = t_next - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if not phase["measuring"] and t_next >= phase["start"]:
            phase["begin"]()
        counted = phase["measuring"]
        if outstanding[0] >= args.max_outstanding:
            if counted:
                phase["stats"].dropped += 1
            continue
        outstanding[0] += 1
        item = items[index % len(items)]
        index += 1
        t = asyncio.ensure_future(one(item, t_next, counted))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    for c in idle:
        c.close()


async def run(args):
    url = urllib.parse.urlsplit(args.url)
    host, port = url.hostname, url.port or 80
    route = url.path or "/"
    if args.rerank_documents:
        items = load_rerank_workload(args.workload, args.model, f"{host}:{port}", route, args.max_tokens,
                                     args.rerank_documents, args.seed)
    else:
        items = load_workload(args.workload, args.model, f"{host}:{port}", route, args.max_tokens)
    if args.shuffle:
        random.Random(args.seed).shuffle(items)

    phase = {"measuring": False, "stats": Stats(), "start": 0.0, "end": float("inf")}
    snap = {}

    def begin():
        # The measured window opens here: CPU snapshots are taken at the same instant.
        pids = proc_tree(args.server_pid) if args.include_children else set(args.server_pid)
        snap["cpu0"] = cpu_ticks(pids)
        snap["self0"] = resource.getrusage(resource.RUSAGE_SELF)
        phase["t0"] = time.perf_counter()
        phase["end"] = phase["t0"] + (args.duration if args.duration else float("inf"))
        phase["measuring"] = True

    phase["begin"] = begin
    t_launch = time.perf_counter()
    phase["start"] = t_launch + args.warmup

    async def switch_after_warmup():
        await asyncio.sleep(args.warmup)
        if not phase["measuring"]:
            begin()
        if not args.rate and not args.requests and args.duration:
            # Closed loop by duration: the window closes at its end (see closed_loop).
            await asyncio.sleep(max(0.0, phase["end"] - time.perf_counter()))
            end_pids = proc_tree(args.server_pid) if args.include_children else set(args.server_pid)
            snap["cpu1"] = cpu_ticks(end_pids | set(snap["cpu0"]))
            snap["self1"] = resource.getrusage(resource.RUSAGE_SELF)
            snap["t1"] = time.perf_counter()

    switcher = asyncio.ensure_future(switch_after_warmup())
    if args.rate:
        await open_loop(args, items, host, port, phase)
    else:
        await closed_loop(args, items, host, port, phase)
    switcher.cancel()
    if not phase["measuring"]:
        sys.exit("load_client: the run ended before the warm-up did")

    stats = phase["stats"]
    if "t1" in snap:
        t_end, cpu1, self1 = snap["t1"], snap["cpu1"], snap["self1"]
    else:
        t_end = max(stats.last_done, phase["t0"])
        pids = proc_tree(args.server_pid) if args.include_children else set(args.server_pid)
        cpu1 = cpu_ticks(pids | set(snap["cpu0"]))
        self1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = t_end - phase["t0"]
    done = len(stats.lat["short"]) + len(stats.lat["long"])
    report = {
        "url": args.url,
        "mode": "open" if args.rate else "closed",
        "connections": args.connections,
        "rate": args.rate,
        "warmup_s": args.warmup,
        "wall_s": round(wall, 3),
        "completed": done,
        "errors": stats.errors,
        "error_count": sum(stats.errors.values()),
        "dropped": stats.dropped,
        "requests_per_s": round(done / wall, 2) if wall > 0 else None,
        "tokens": stats.tokens,
        "tokens_per_s": round(stats.tokens / wall, 1) if wall > 0 else None,
        "latency": {"overall": latency_summary(stats.lat["short"] + stats.lat["long"]),
                    "short": latency_summary(stats.lat["short"]),
                    "long": latency_summary(stats.lat["long"])},
        "event_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
        "client_cpu_s": round(self1.ru_utime + self1.ru_stime
                              - snap["self0"].ru_utime - snap["self0"].ru_stime, 3),
    }
    # Answers per whole second of the window; a second with none while requests
    # were outstanding is a stall (the window's last, partial second is left out).
    seconds = int(wall)
    per_second = [0] * seconds
    for t in stats.done_at:
        k = int(t - phase["t0"])
        if 0 <= k < seconds:
            per_second[k] += 1
    report["completions_per_second"] = per_second
    report["stalled_seconds"] = sum(1 for n in per_second if n == 0)
    if args.max_tokens:
        report["max_tokens"] = args.max_tokens
        report["tokens_capped"] = stats.tokens_capped
        report["tokens_capped_per_s"] = round(stats.tokens_capped / wall, 1) if wall > 0 else None
    if args.server_pid:
        c0 = snap["cpu0"]
        ticks = sum(v - c0.get(pid, 0) for pid, v in cpu1.items())
        cpu_s = ticks / CLK_TCK
        report["server_pids"] = sorted(cpu1)
        report["server_cpu_s"] = round(cpu_s, 3)
        report["server_cpu_us_per_token"] = round(cpu_s * 1e6 / stats.tokens, 3) if stats.tokens else None
        if args.max_tokens and stats.tokens_capped:
            report["server_cpu_us_per_capped_token"] = round(cpu_s * 1e6 / stats.tokens_capped, 3)
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", help="JSON Lines with text, class and tokens fields")
    ap.add_argument("--url", required=True,
                    help="e.g. http://127.0.0.1:18700/v1/embeddings (tokenbatch) or "
                         "http://127.0.0.1:7997/embeddings (Infinity)")
    ap.add_argument("--model", default="all-MiniLM-L6-v2", help="the request's model field")
    ap.add_argument("--connections", type=int, default=4,
                    help="closed loop: concurrent connections; open loop: connections opened up front")
    ap.add_argument("--rate", type=float, default=0.0, help="open loop: Poisson arrivals per second")
    ap.add_argument("--max-outstanding", type=int, default=256, help="open loop: cap on requests in flight")
    ap.add_argument("--duration", type=float, default=0.0, help="measured seconds")
    ap.add_argument("--requests", type=int, default=0, help="closed loop: measured requests (instead of --duration)")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds of uncounted load first")
    ap.add_argument("--seed", type=int, default=1, help="seed of the arrivals (and of --shuffle)")
    ap.add_argument("--shuffle", action="store_true", help="shuffle the workload order (seeded)")
    ap.add_argument("--max-tokens", type=int, default=0,
                    help="also report tokens capped at this length (the server's truncation)")
    ap.add_argument("--server-pid", type=int, action="append", default=[],
                    help="server process to charge CPU to (repeatable)")
    ap.add_argument("--no-children", dest="include_children", action="store_false",
                    help="do not add the server pids' descendant processes")
    ap.add_argument("--no-parse", dest="parse", action="store_false",
                    help="check the status only, not that the body is JSON")
    ap.add_argument("--no-uvloop", dest="uvloop", action="store_false")
    ap.add_argument("--rerank-documents", type=int, default=0,
                    help="send rerank requests of this many documents each (see the module doc)")
    args = ap.parse_args()
    if not args.duration and not args.requests:
        ap.error("give --duration or --requests")
    if args.rate and not args.duration:
        ap.error("the open loop needs --duration")
    if args.uvloop:
        try:
            import uvloop
            uvloop.install()
        except ImportError:
            pass
    report = asyncio.run(run(args))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
