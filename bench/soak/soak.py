#!/usr/bin/env python3
"""Soak test with fault injection for `tokenbatch serve --backend noop` (issue #22).

What it does
------------
Starts `tokenbatch serve --backend noop` on a free loopback port (--port 0; the
port is read from the server's log) with a fault-injecting no-op backend
(`--noop-fail-on-id`, `--noop-oom-above-tokens`, `--noop-delay-us`) and tight
limits, then drives an open-loop (Poisson arrivals) mixed load of
POST /v1/embeddings (OpenAI shape) and POST /embed (TEI shape) over HTTP/1.1
keep-alive connections, with texts of mixed length and token-id inputs. Every
request is tagged on the client with its class and the statuses it may get:

  class                   what it sends                                    allowed
  text_openai/text_tei    1-4 texts (short, medium, long, some non-ASCII)  200
  ids_openai/ids_tei      1-4 token-id arrays                              200
  large                   4-8 id arrays of 150-450 ids: batches go over    200
                          the OOM threshold; the server bisects them
  poison                  ids holding the fail id (alone or beside clean   500 (batch-mates: 200)
                          inputs)
  oom_lone                one input above the OOM threshold: it runs out   500 (OutOfMemory of a
                          of memory even alone                             lone input -> 500)
  deadline                X-Request-Timeout-Ms below the backend's delay   504
  disconnect_after_send   whole request, then the socket is closed before  no reply; /metrics
                          the reply                                        counts 499 (cancelled)
                                                                           or 200 (done first)
  disconnect_mid_body     headers and half the body, then closed           nothing counted
  burst                   every --burst-interval-s, a burst well over      200 or 429
                          --max-concurrent-requests/--max-queue-size, on
                          fresh connections
A request of any class may also get 429 when its lifetime overlaps a burst
(the limits are global: that 429 is the burst's doing, counted "collateral");
a burst's window runs from its first request until the server, after the last
burst reply, reports an empty queue (at most --burst-settle-max-s later).

At the end of the load phase the client waits until everything has settled
(the server's in-flight gauge is back to 1, its queue empty) and compares its
own counts with /metrics: tokenbatch_http_requests_total{route,code} exactly
(disconnected requests are attributed from the server's debug log, which logs
every reply with the X-Request-Id the client sent; a log-free bound check runs
as well), tokenbatch_http_inputs_total, the request-duration histogram counts,
the engine's input accounting (submitted = resolved), the injected failures'
outcomes (backend, out_of_memory), the in-flight and queue gauges. Then it
restarts the load, queues some large work, sends one SIGTERM (drain mode) while
load runs, scrapes /metrics once more during the drain on an open connection,
keeps sending for a moment, and checks that every request written before the
signal was answered (its status, or 503), that later ones were answered or
refused without a byte, that every request the server logged was delivered,
and that the server exited 0. Responses are framed strictly (one
Content-Length, no bytes beyond it, no bytes on an idle connection, the echoed
X-Request-Id), and 200 bodies are checked (one embedding per input, of the
configured width). The server's RSS, open fds and threads are sampled every
--sample-s, and a few times at rest once the load phase has settled: the least
at rest must be within 5 % of the median of the first span after the warm-up
(samples during bursts left out; fds compared net of the client's open
connections).
Latency percentiles of successful requests are printed per --window-s window.

Exit status: 0 when every check passed, 1 when one failed (each failed check is
named on stderr), 2 for a setup error (binary missing, server did not start).

How to run
----------
From the repository root (it is a module of the `bench` package):

    python3 -m bench.soak.soak --binary build/src/cli/tokenbatch \\
        --duration-s 1800 --window-s 300 --json soak.json          # the full soak
    bash bench/soak/ci_soak.sh build/src/cli/tokenbatch           # the 2-minute CI version

Python 3.11+, standard library only. Keep the load modest on small machines
(the defaults suit a 2-core machine that also runs this client).

Layout
------
This file holds the command line and the start of the server; the rest lives
beside it, each module importing only those listed before it:
soak_requests.py (the request classes and their payloads), soak_http.py (the
raw HTTP/1.1 client with strict framing), soak_server.py (the server's command
line, log and /proc counters), soak_client.py (sending and judging requests),
soak_checklist.py (the named checks), soak_metrics.py (the comparison of
/metrics with the client's counts), soak_checks.py (the final checks),
soak_load.py (the open-loop generator and the other background loops),
soak_report.py (the tables, the JSON summary, the exit code) and
soak_phases.py (load, settle, SIGTERM). Starting and killing the server,
parsing /metrics and percentiles come from bench/harness.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile

from bench.harness import processes
from bench.soak.soak_phases import run
from bench.soak.soak_report import report
from bench.soak.soak_server import server_command, server_help, wait_listening


def parse_args(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    default_binary = os.path.normpath(os.path.join(here, "..", "..", "build", "src", "cli", "tokenbatch"))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=default_binary, help="tokenbatch binary (default: %(default)s)")
    p.add_argument("--duration-s", type=float, default=1800, help="load phase length (default 1800)")
    p.add_argument("--rate", type=float, default=30, help="Poisson arrivals per second (default 30)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--window-s", type=float, default=300, help="latency report window (default 300)")
    p.add_argument("--warmup-s", type=float, default=None,
                   help="resource warm-up (default: 20 %% of the duration, at least 20 s, at most 300 s)")
    p.add_argument("--json", help="write a JSON summary here")
    p.add_argument("--burst-interval-s", type=float, default=30)
    p.add_argument("--burst-first-s", type=float, default=10)
    p.add_argument("--burst-size", type=int, default=0, help="requests per burst (default 2.5 x max concurrent)")
    p.add_argument("--burst-inputs", type=int, default=16, help="inputs per burst request")
    p.add_argument("--burst-settle-max-s", type=float, default=10,
                   help="a burst's window lasts until the server's queue is empty, at most this long after it")
    p.add_argument("--sample-s", type=float, default=2, help="RSS/fd sampling period")
    p.add_argument("--scrape-s", type=float, default=30, help="periodic /metrics scrape period")
    p.add_argument("--request-timeout-s", type=float, default=60)
    p.add_argument("--idle-close-s", type=float, default=4, help="client closes keep-alive connections idle this long")
    p.add_argument("--drain-load-s", type=float, default=2.0, help="load before the SIGTERM in the shutdown phase")
    p.add_argument("--post-sigterm-s", type=float, default=1.5, help="load kept up after the SIGTERM")
    p.add_argument("--shutdown-rate", type=float, default=0, help="arrivals per second in the shutdown phase (default --rate)")
    p.add_argument("--drain-large", type=int, default=12, help="large requests queued just before the SIGTERM")
    p.add_argument("--exit-timeout-s", type=float, default=30)
    # server configuration
    p.add_argument("--noop-hidden", type=int, default=64)
    p.add_argument("--noop-delay-us", type=int, default=2000)
    p.add_argument("--fail-id", type=int, default=2_000_000_000, help="--noop-fail-on-id (-1: no poison class)")
    p.add_argument("--oom-above-tokens", type=int, default=768, help="--noop-oom-above-tokens (0: no OOM injection)")
    p.add_argument("--deadline-ms", type=int, default=1, help="X-Request-Timeout-Ms of the deadline class")
    p.add_argument("--max-batch-tokens", type=int, default=2048)
    p.add_argument("--max-input-tokens", type=int, default=1024)
    p.add_argument("--max-queue-size", type=int, default=512)
    p.add_argument("--max-queue-tokens", type=int, default=65536)
    p.add_argument("--max-concurrent-requests", type=int, default=96)
    p.add_argument("--read-timeout-ms", type=int, default=30000)
    p.add_argument("--server-arg", action="append", default=[], help="extra server arguments (repeatable)")
    p.add_argument("--allow-missing-faults", action="store_true",
                   help="run without the poison/OOM classes when the binary lacks their flags")
    p.add_argument("--keep-log", action="store_true", help="keep the server log even when the soak passes")
    a = p.parse_args(argv)
    if a.burst_size <= 0:
        a.burst_size = int(2.5 * a.max_concurrent_requests)
    if a.deadline_ms * 1000 >= a.noop_delay_us:
        p.error("--deadline-ms must be below --noop-delay-us (then an expired deadline is certain: 504)")
    if a.oom_above_tokens > 0 and a.oom_above_tokens + 16 > a.max_input_tokens:
        p.error("--max-input-tokens must exceed --oom-above-tokens + 16 (the oom_lone class needs room)")
    if a.oom_above_tokens > 0 and a.oom_above_tokens < 500:
        p.error("--oom-above-tokens must be >= 500: normal inputs (up to ~450 tokens) must fit alone")
    if a.idle_close_s * 1000 >= a.read_timeout_ms / 2:
        p.error("--idle-close-s must be well under --read-timeout-ms")
    if a.window_s <= 0 or a.duration_s < 3 * a.sample_s:
        p.error("bad --window-s or --duration-s")
    return a


def main(argv=None) -> int:
    args = parse_args(argv)
    if not os.access(args.binary, os.X_OK):
        print(f"soak: {args.binary} is not an executable", file=sys.stderr)
        return 2
    help_text = server_help(args.binary)
    for flag, attr, off in (("--noop-fail-on-id", "fail_id", -1), ("--noop-oom-above-tokens", "oom_above_tokens", 0)):
        if getattr(args, attr) != off and flag not in help_text:
            if not args.allow_missing_faults:
                print(f"soak: {args.binary} has no {flag}; rebuild it, or pass --allow-missing-faults", file=sys.stderr)
                return 2
            print(f"soak: WARNING: {flag} missing: that fault class is skipped", file=sys.stderr)
            setattr(args, attr, off)
    workdir = tempfile.mkdtemp(prefix="tokenbatch-soak-")
    log_path = os.path.join(workdir, "server.log")
    cmd = server_command(args)
    print("soak: " + " ".join(cmd), flush=True)
    proc = processes.spawn(cmd, log_path)
    try:
        listening = wait_listening(proc, log_path)
        if listening is None:
            print(f"soak: the server did not start (exit {proc.poll()}); log:\n"
                  f"{processes.read_log(log_path)[-3000:]}", file=sys.stderr)
            return 2
        host, port = listening
        res = asyncio.run(run(args, proc, host, port, log_path))
        rc = report(args, res, cmd, log_path)
        if rc == 0 and not args.keep_log:
            os.unlink(log_path)
            os.rmdir(workdir)
        return rc
    finally:
        processes.kill(proc, timeout_s=None)


if __name__ == "__main__":
    sys.exit(main())
