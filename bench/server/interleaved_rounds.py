#!/usr/bin/env python3
"""Servers compared in interleaved rounds, with a confidence interval on each
ratio: the batching window (adaptive against fixed), or any named variants.

A single run of each server, one after the other (batch_window_bench.sh), lets a
machine whose speed drifts by more than the difference asked for (issue #41's
goal: adaptive >= 0.97x the best fixed window) put either server ahead. Here
all servers of a group run at once, idle but for the one under load, and each
(group, connections) cell is measured in rounds: every round runs wrk against
each server in turn, the order rotated from round to round so that each server
takes each place equally often. A drift then moves every server alike, and the
rounds give an interval.

Window mode (--backends): per backend, the default adaptive window and the
fixed window at --max-wait-ms 0 and 4. Per cell it prints each window's mean
requests/s, the ratio of adaptive's mean to the best fixed window's (best = the
higher mean) and a bootstrap percentile interval of that ratio, the rounds
resampled as a whole (the best fixed window chosen again in each resample).
`--control` adds a second `fixed0` server, identical to the first: its ratio to
fixed0 is what the bench reports for two servers that cannot differ, i.e. its
own resolution.

Compare mode (--compare NAME=FLAGS ...): one server per variant (FLAGS are
`tokenbatch serve`'s, the backend included; leading VAR=value words go to the
server's environment, and TOKENBATCH_BINARY=path runs another build); each
variant's mean requests/s, p50 and server CPU time per request (user plus
system, all threads, from /proc over the measured window) against the first
variant's, with the same intervals; then each variant's spread of CPU per
request over the rounds and how it correlates with the first variant's rounds,
with its own previous round, and with its batch size and forward time per input
in the same window (from /metrics): run two identical variants to see whether
that spread is the machine's, a server's state or its batching.

Stdlib and bench/harness only. Needs wrk and bench/server/embeddings.lua
(one short text per request). Examples:

  python3 bench/server/interleaved_rounds.py --build build --backends minilm \
      --connections 1 8 32 128 --rounds 8 --duration 3 --control --out build/window-rounds.jsonl
  python3 bench/server/interleaved_rounds.py --connections 1 --rounds 8 --duration 5 \
      --compare "fixed=--model-id build/cache/models/all-MiniLM-L6-v2 --intra-op fixed" \
                "adaptive=--model-id build/cache/models/all-MiniLM-L6-v2 --intra-op adaptive"
  python3 bench/server/interleaved_rounds.py --summarize build/window-rounds.jsonl
"""
import argparse
import itertools
import json
import os
import random
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

# The shared bench helpers, when run as a script from anywhere.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from bench.harness import prometheus  # noqa: E402
from bench.harness.cpu import CLK_TCK, cpu_ticks  # noqa: E402

BACKEND_FLAGS = {
    "noop": ["--backend", "noop"],
    "gpu2ms": ["--backend", "noop", "--noop-delay-us", "2000"],
    "minilm": ["--model-id", "{model_dir}", "--threads", "1"],
}
WINDOW_FLAGS = {
    "adaptive": [],
    "fixed0": ["--batch-window", "fixed", "--max-wait-ms", "0"],
    "fixed4": ["--batch-window", "fixed", "--max-wait-ms", "4"],
    "fixed0-again": ["--batch-window", "fixed", "--max-wait-ms", "0"],
}
FIXED = ("fixed0", "fixed4")
GOAL = 0.97
ENV_WORD = re.compile(r"^[A-Z_][A-Z0-9_]*=")
LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "embeddings.lua")


def check_port_free(port):
    with socket.socket() as probe:
        # As the server binds: a closed connection's TIME_WAIT does not count, a listener does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as e:
            raise RuntimeError(f"port {port} is in use ({e}): another server would answer for ours") from e


def check_running(name, proc):
    if proc.poll() is not None:
        raise RuntimeError(f"server {name} exited with status {proc.returncode} (its own output above says why)")


def wait_healthy(name, proc, port, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        # Before asking: another process on the port would answer for it.
        check_running(name, proc)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not answer /health in {seconds:.0f} s")


def wrk(port, connections, seconds):
    """One wrk run; returns embeddings.lua's RESULT fields as numbers."""
    done = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", LUA,
                           f"http://127.0.0.1:{port}"], capture_output=True, text=True)
    match = re.search(r"^RESULT (.*)$", done.stdout, re.M)
    if done.returncode != 0 or not match:
        raise RuntimeError(f"wrk failed (status {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return {k: float(v) for k, v in (kv.split("=") for kv in match.group(1).split())}


def cpu_seconds(proc):
    """CPU time (user + system, every thread) the process has used so far."""
    return cpu_ticks([proc.pid]).get(proc.pid, 0) / CLK_TCK


BATCH_METRICS = ("tokenbatch_batch_size_sum", "tokenbatch_batch_size_count", "tokenbatch_inference_seconds_sum")


def batch_counters(port):
    """The server's batch counters from /metrics, summed over every model's
    series: inputs batched, batches, seconds in forwards."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        scrape = prometheus.parse(reply.read().decode())
    return {name: prometheus.value(scrape, name) for name in BATCH_METRICS}


def measured(proc, port, connections, seconds):
    """wrk's fields plus, over the same window, the server's CPU time per request
    (ms), its mean batch size (inputs) and its forward time per batched input
    (ms): a change in CPU per request with the same batches and slower forwards
    is the CPU's speed, with smaller batches it is the batching."""
    counters_before = batch_counters(port)
    before = cpu_seconds(proc)  # after the scrape, so that its CPU is not counted
    result = wrk(port, connections, seconds)
    used = cpu_seconds(proc) - before
    delta = {k: v - counters_before[k] for k, v in batch_counters(port).items()}
    inputs, batches = delta["tokenbatch_batch_size_sum"], delta["tokenbatch_batch_size_count"]
    nan = float("nan")
    result["cpu_ms_per_request"] = 1000 * used / result["requests"] if result.get("requests") else nan
    result["batch_size_mean"] = inputs / batches if batches else nan
    result["forward_ms_per_input"] = 1000 * delta["tokenbatch_inference_seconds_sum"] / inputs if inputs else nan
    return result


def groups(args):
    """[(group name, reference server or None, {server name: serve flags})]."""
    if args.compare:
        variants = [v.split("=", 1) for v in args.compare]
        names = [name for name, _ in variants]
        if len(set(names)) != len(names):
            raise SystemExit(f"--compare: variant names must differ, got {names}")
        return [("compare", names[0], {name: shlex.split(flags) for name, flags in variants})]
    windows = ["adaptive", *FIXED] + (["fixed0-again"] if args.control else [])
    return [(backend, None,
             {w: [f.format(model_dir=args.model_dir) for f in BACKEND_FLAGS[backend]] + WINDOW_FLAGS[w]
              for w in windows})
            for backend in args.backends]


def measure(args, out):
    run = time.strftime("%Y-%m-%dT%H:%M:%S")
    for group, reference, variants in groups(args):
        names = list(variants)
        servers, described = {}, {}
        try:
            for i, name in enumerate(names):
                port = args.port + i
                check_port_free(port)
                words = variants[name]
                env_words = list(itertools.takewhile(lambda w: ENV_WORD.match(w), words))
                env = dict(w.split("=", 1) for w in env_words)
                flags = words[len(env_words):]
                binary = env.pop("TOKENBATCH_BINARY", f"{args.build}/src/cli/tokenbatch")
                described[name] = " ".join(words)
                servers[name] = (port, subprocess.Popen(
                    [binary, "serve", *flags, "--port", str(port), "--io-threads", "1",
                     "--tokenization-workers", "1", "--log-level", "warn"], env={**os.environ, **env}))
            for name, (port, proc) in servers.items():
                wait_healthy(name, proc, port)
                wrk(port, 4, 1)  # the latency fit learns before any window counts
            for c in args.connections:
                for r in range(args.rounds):
                    shift = r % len(names)
                    for name in names[shift:] + names[:shift]:
                        port, proc = servers[name]
                        check_running(name, proc)
                        if args.warmup > 0:
                            wrk(port, c, args.warmup)
                        row = {"run": run, "backend": group, "connections": c, "round": r, "window": name,
                               "serve": described[name],
                               **({"reference": reference} if reference else {}),
                               **measured(proc, port, c, args.duration)}
                        print(json.dumps(row), file=out, flush=True)
                        print(f"{group} c={c} round={r} {name} "
                              f"requests_per_s={row['requests_per_s']:.1f} p50_ms={row['p50_ms']:.3f} "
                              f"cpu_ms_per_request={row['cpu_ms_per_request']:.3f}",
                              file=sys.stderr, flush=True)
        finally:
            for _, proc in servers.values():
                proc.terminate()
            for _, proc in servers.values():
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def ratio(rounds, numerator, candidates):
    """mean(numerator) / the highest mean among candidates, over the given round rows."""
    def mean(window):
        return sum(r[window] for r in rounds) / len(rounds)
    return mean(numerator) / max(mean(w) for w in candidates)


def interval(rounds, numerator, candidates, resamples, seed=1):
    rng = random.Random(seed)
    values = sorted(ratio([rng.choice(rounds) for _ in rounds], numerator, candidates)
                    for _ in range(resamples))
    return values[int(0.05 * resamples)], values[int(0.95 * resamples) - 1]


def verdict(low, high):
    if low >= GOAL:
        return f"met: the 90 % interval is above {GOAL}"
    if high < GOAL:
        return f"missed: the 90 % interval is below {GOAL}"
    return f"undecided: the 90 % interval spans {GOAL}"


def cells_of(rows):
    """{(group, connections, servers): (reference or None, [one {server: row} per round])}.

    A round is one run's round; rounds of several runs with the same servers
    form one cell, and a round that lacks a server (a run cut short) is left out.
    """
    rounds = {}
    for row in rows:
        key = (row["backend"], int(row["connections"]), row["run"], int(row["round"]))
        if row["window"] in rounds.setdefault(key, {}):
            raise SystemExit(f"{row['run']}: two rows for {row['window']} in round {row['round']}: "
                             "rows of separate runs need a run id")
        rounds[key][row["window"]] = row
    expected = {}
    for (group, c, run, _), by_server in rounds.items():
        expected.setdefault((group, c, run), set()).update(by_server)
    cells = {}
    for (group, c, run, _), by_server in sorted(rounds.items()):
        if set(by_server) != expected[(group, c, run)]:
            continue
        reference = next(iter(by_server.values())).get("reference")
        # Runs merge only when every server had the same name and serve words.
        servers = tuple(sorted((name, row.get("serve", "")) for name, row in by_server.items()))
        cells.setdefault((group, c, servers), (reference, []))[1].append(by_server)
    return cells


def summarize_windows(cells, resamples):
    print("| backend | connections | rounds | adaptive · fixed 0 ms · fixed 4 ms req/s (mean) "
          "| adaptive / best fixed | 90 % interval | p50 ratio | control (fixed0 again / fixed0) | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (backend, c, _), (_, full) in cells.items():
        if not full or not all(k in full[0] for k in ("adaptive", *FIXED)):
            continue
        rps = [{k: v["requests_per_s"] for k, v in w.items()} for w in full]
        means = [sum(r[w] for r in rps) / len(rps) for w in ("adaptive", *FIXED)]
        point = ratio(rps, "adaptive", FIXED)
        low, high = interval(rps, "adaptive", FIXED, resamples)
        # p50: lower is better, so against the fixed window with the lowest mean p50.
        p50_means = {k: sum(w[k]["p50_ms"] for w in full) / len(full) for k in ("adaptive", *FIXED)}
        best_p50 = min(p50_means[k] for k in FIXED)
        p50 = p50_means["adaptive"] / best_p50 if best_p50 > 0 else float("nan")
        control = "-"
        if "fixed0-again" in rps[0]:
            c_low, c_high = interval(rps, "fixed0-again", ("fixed0",), resamples)
            control = f"{ratio(rps, 'fixed0-again', ('fixed0',)):.3f} [{c_low:.3f}, {c_high:.3f}]"
        print(f"| {backend} | {c} | {len(full)} | {' · '.join(f'{m:.1f}' for m in means)} | {point:.3f} "
              f"| [{low:.3f}, {high:.3f}] | {p50:.3f} | {control} | {verdict(low, high)} |")


def summarize_variants(cells, resamples):
    """Per variant: mean requests/s, p50 and server CPU per request, each as a
    ratio to the reference variant with its interval. Rows from before the CPU
    was recorded show it as "-"."""
    print("| connections | rounds | variant | req/s (mean) | p50 ms (mean) | CPU ms/request (mean) "
          "| req/s ratio [90 % interval] | p50 ratio [90 % interval] | CPU/request ratio [90 % interval] |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (_, c, _), (reference, full) in cells.items():
        if not reference or not full:
            continue
        metrics = [[{k: v.get(field, float("nan")) for k, v in w.items()} for w in full]
                   for field in ("requests_per_s", "p50_ms", "cpu_ms_per_request")]
        has_cpu = all(all(x == x for x in w.values()) for w in metrics[2])  # no NaN: recorded in every round
        for name in sorted(full[0], key=lambda n: n != reference):
            means = [sum(r[name] for r in m) / len(m) for m in metrics]
            cols = ["reference"] * 3
            if name != reference:
                cols = [f"{ratio(x, name, (reference,)):.3f} [{lo:.3f}, {hi:.3f}]"
                        for x in metrics for lo, hi in [interval(x, name, (reference,), resamples)]]
            if not has_cpu:
                cols[2] = "-"
            cpu = f"{means[2]:.3f}" if has_cpu else "-"
            print(f"| {c} | {len(full)} | {name} | {means[0]:.1f} | {means[1]:.3f} | {cpu} | {cols[0]} | {cols[1]} "
                  f"| {cols[2]} |")


def correlation(xs, ys):
    """Pearson's correlation of two equally long lists (nan when either is constant)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")


def summarize_cpu_spread(cells):
    """How much each variant's CPU per request moves between rounds, and whether
    the variants move together: the servers of one round run back to back, so a
    change in the machine that lasts longer than a round moves them alike and
    correlates their rounds, while a state one server process gets into (and
    stays in) correlates that server's consecutive rounds instead. Two
    identical variants (an A/A run) tell these apart."""
    lines = []
    for (_, c, _), (reference, full) in cells.items():
        if not reference or not full or any("cpu_ms_per_request" not in row for w in full for row in w.values()):
            continue
        per_variant = {name: [w[name]["cpu_ms_per_request"] for w in full] for name in full[0]}
        runs = [next(iter(w.values()))["run"] for w in full]
        for name in sorted(per_variant, key=lambda n: n != reference):
            values = per_variant[name]
            corr = "reference" if name == reference else f"{correlation(per_variant[reference], values):.2f}"
            # Consecutive rounds of one run only: each run started its own server processes.
            pairs = [(a, b) for a, b, ra, rb in zip(values, values[1:], runs, runs[1:]) if ra == rb]
            own = correlation(*zip(*pairs)) if len(pairs) > 1 else float("nan")
            with_batch = [correlation(values, [w[name].get(k, float("nan")) for w in full])
                          for k in ("batch_size_mean", "forward_ms_per_input")]
            spread = f"{max(values) / min(values):.3f}" if min(values) > 0 else "-"
            lines.append(f"| {c} | {name} | {min(values):.3f} · {max(values):.3f} ({spread}) | {corr} "
                         f"| {own:.2f} | {with_batch[0]:.2f} | {with_batch[1]:.2f} |")
    if not lines:
        return
    print()
    print("| connections | variant | CPU ms/request min · max (max / min) | correlation of its rounds with the reference's "
          "| correlation with its own previous round | ... with its batch size | ... with its forward ms per input |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(lines))


def summarize(rows, resamples):
    cells = cells_of(rows)
    if any(v[0] is None for v in cells.values()):
        summarize_windows({k: v for k, v in cells.items() if v[0] is None}, resamples)
    if any(v[0] for v in cells.values()):
        summarize_variants({k: v for k, v in cells.items() if v[0]}, resamples)
        summarize_cpu_spread({k: v for k, v in cells.items() if v[0]})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--backends", nargs="+", default=["noop", "gpu2ms", "minilm"], choices=BACKEND_FLAGS)
    parser.add_argument("--connections", nargs="+", type=int, default=[1, 8, 32, 128])
    parser.add_argument("--rounds", type=int, default=8, help="rounds per cell (a multiple of the servers)")
    parser.add_argument("--duration", type=int, default=4, help="seconds measured per server and round")
    parser.add_argument("--warmup", type=int, default=1, help="seconds of load before each measured window")
    parser.add_argument("--control", action="store_true", help="add a second fixed0 server (A/A control)")
    parser.add_argument("--model-dir", default="build/cache/models/all-MiniLM-L6-v2")
    parser.add_argument("--port", type=int, default=18650)
    parser.add_argument("--out", help="append each measurement to this JSONL file")
    parser.add_argument("--compare", nargs="+", metavar="NAME=FLAGS",
                        help="compare these serve variants instead (the first is the reference)")
    parser.add_argument("--summarize", nargs="+", metavar="JSONL", help="only summarize earlier runs")
    parser.add_argument("--resamples", type=int, default=4000)
    args = parser.parse_args()
    if not args.summarize:
        servers = len(args.compare) if args.compare else len(FIXED) + 1 + args.control
        if args.rounds % servers:
            parser.error(f"--rounds {args.rounds}: a multiple of the {servers} servers, so that each takes "
                         "each place in the order equally often")
        args.out = args.out or tempfile.mkstemp(prefix="window-rounds-", suffix=".jsonl")[1]
        with open(args.out, "a") as out:
            measure(args, out)
    rows = []
    for path in args.summarize or [args.out]:
        with open(path) as f:
            rows += [{"run": path, **json.loads(line)} for line in f if line.strip()]
    summarize(rows, args.resamples)


if __name__ == "__main__":
    main()
