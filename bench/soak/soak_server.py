"""The server under test: its command line, start-up, log and process counters.

Builds the `tokenbatch serve --backend noop` command from the soak's options,
reads the bound port from the server's log (bench.harness.processes starts it
with its output there), parses the debug log's reply lines (one per reply,
with the client's request id), and reads the process's RSS, open fds and
threads from /proc.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess

from bench.harness import processes

LISTEN_RE = re.compile(r"listening on http://([0-9.]+):(\d+)")
REPLY_LOG_RE = re.compile(r"request_id=(\S+) method=(\S+) route=(\S+) status=(\d+)")


def server_help(binary: str) -> str:
    try:
        return subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SystemExit(f"soak: cannot run {binary} serve --help: {e}")


def server_command(args) -> list[str]:
    cmd = [
        args.binary, "serve", "--backend", "noop", "--host", "127.0.0.1", "--port", "0",
        "--noop-hidden", str(args.noop_hidden), "--noop-delay-us", str(args.noop_delay_us),
        "--cost-model", "sum", "--max-batch-tokens", str(args.max_batch_tokens),
        "--max-input-tokens", str(args.max_input_tokens),
        "--max-queue-size", str(args.max_queue_size), "--max-queue-tokens", str(args.max_queue_tokens),
        "--max-concurrent-requests", str(args.max_concurrent_requests),
        "--shutdown", "drain", "--read-timeout-ms", str(args.read_timeout_ms), "--log-level", "debug",
    ]
    if args.fail_id >= 0:
        cmd += ["--noop-fail-on-id", str(args.fail_id)]
    if args.oom_above_tokens > 0:
        cmd += ["--noop-oom-above-tokens", str(args.oom_above_tokens)]
    for extra in args.server_arg:
        cmd += extra.split()
    return cmd


def log_replies(text: str) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = collections.defaultdict(list)
    for m in REPLY_LOG_RE.finditer(text):
        out[m.group(1)].append((m.group(3), int(m.group(4))))
    return out


def wait_listening(proc: subprocess.Popen, log_path: str, timeout_s: float = 60) -> tuple[str, int] | None:
    """(host, port) once the log says the server listens; None if it exits or times out first."""
    m = processes.wait_for_log(proc, log_path, LISTEN_RE, timeout_s)
    return (m.group(1), int(m.group(2))) if m else None


def proc_stats(pid: int) -> dict | None:
    """RSS (KiB), open fds, sockets among them and threads of `pid`; None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
        fds = os.listdir(f"/proc/{pid}/fd")
    except (OSError, AttributeError):
        return None
    sockets = 0
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                sockets += 1
        except OSError:
            pass
    return {"rss_kb": rss, "fds": len(fds), "sockets": sockets, "threads": threads}
