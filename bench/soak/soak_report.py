"""The soak's report: per-window latency and resources, the requests by class and
outcome, the server's accounting, the checks, the JSON summary and the exit code.

`report` runs the final checks (soak_checks.py), prints the tables and returns
0 when every check passed, 1 when one failed (each named on stderr).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import statistics
import sys

from bench.harness.processes import read_log
from bench.harness.stats import percentile
from bench.soak.soak_checklist import Checks
from bench.soak.soak_checks import check_load_phase, check_requests, check_resources, check_shutdown, classify
from bench.soak.soak_client import Client
from bench.soak.soak_requests import Req
from bench.soak.soak_server import log_replies


def class_table(client: Client, log) -> tuple[dict[str, collections.Counter], collections.Counter]:
    """Requests per phase/class and outcome, and the verdicts' counts."""
    by_class: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in client.reqs:
        key = str(r.status) if r.outcome == "reply" else r.outcome
        if r.status == 429:
            key = f"429({r.kind429})"
        if r.cls == "disconnect_after_send" and r.rid in log:
            key = f"server:{log[r.rid][0][1]}"
        by_class[f"{r.phase}/{r.cls}"][key] += 1
    verdicts = collections.Counter(r.verdict for r in client.reqs)
    return by_class, verdicts


def latency_windows(args, client: Client, load: list[Req], samples: list[dict]) -> list[dict]:
    """Per --window-s window of the load phase: counts, latency percentiles and resource medians."""
    D = args.duration_s
    W = args.window_s
    windows = []
    k = 0
    while k * W < D - 1e-9:
        lo, hi = k * W, min(D, (k + 1) * W)
        rows = [r for r in load if lo <= r.t_send - client.t0 < hi]
        lat = sorted(1000 * (r.t_done - r.t_send) for r in rows if r.status == 200 and r.cls != "burst")
        blat = sorted(1000 * (r.t_done - r.t_send) for r in rows if r.status == 200 and r.cls == "burst")
        ss = [s for s in samples if lo <= s["t"] < hi]
        windows.append({
            "start_s": lo, "end_s": hi, "sent": len(rows),
            "ok": sum(r.status == 200 for r in rows),
            "statuses": dict(collections.Counter(str(r.status) if r.outcome == "reply" else r.outcome for r in rows)),
            "unexpected": sum(r.verdict in ("unexpected", "lost") for r in rows),
            "p50_ms": percentile(lat, 0.5), "p90_ms": percentile(lat, 0.9), "p99_ms": percentile(lat, 0.99),
            "max_ms": lat[-1] if lat else None, "burst_p99_ms": percentile(blat, 0.99),
            "rss_mib": statistics.median(s["rss_kb"] for s in ss) / 1024 if ss else None,
            "fds": statistics.median(s["fds"] for s in ss) if ss else None,
            "excess_fds": statistics.median(s["excess_fds"] for s in ss) if ss else None,
            "threads": statistics.median(s["threads"] for s in ss) if ss else None,
        })
        k += 1
    return windows


def report(args, res: dict, cmd: list[str], log_path: str) -> int:
    client: Client = res["client"]
    checks = Checks()
    log = log_replies(read_log(log_path))
    for r in client.reqs:
        classify(client, r, log)
    load = [r for r in client.reqs if r.phase == "load"]
    shut = [r for r in client.reqs if r.phase == "shutdown"]
    by_class, verdicts = class_table(client, log)
    check_requests(client, log, load, checks)
    metrics_summary = check_load_phase(args, client, res, load, checks)
    before, drained_ok, drain_note = check_shutdown(client, res, shut, checks)
    warm, span, res_checks, samples = check_resources(args, client, res, checks)
    windows = latency_windows(args, client, load, samples)
    W = args.window_s

    # ---- print
    f = lambda v, fmt="{:.1f}": "-" if v is None else fmt.format(v)  # noqa: E731
    print()
    print(f"Latency of successful requests (ms, bursts excluded) per {W:g} s window; resources are window medians")
    print(f"{'window':>13} {'sent':>6} {'ok':>6} {'bad':>4} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>8} "
          f"{'burst p99':>9} {'RSS MiB':>8} {'fds':>5} {'net fds':>7} {'thr':>4}")
    for w in windows:
        print(f"{w['start_s']:6.0f}-{w['end_s']:<6.0f} {w['sent']:6d} {w['ok']:6d} {w['unexpected']:4d} "
              f"{f(w['p50_ms']):>7} {f(w['p90_ms']):>7} {f(w['p99_ms']):>7} {f(w['max_ms']):>8} "
              f"{f(w['burst_p99_ms']):>9} {f(w['rss_mib']):>8} {f(w['fds'], '{:g}'):>5} "
              f"{f(w['excess_fds'], '{:g}'):>7} {f(w['threads'], '{:g}'):>4}")
    print()
    print("Requests by phase/class and outcome (status; server:N = what the server counted for a disconnect)")
    for name in sorted(by_class):
        c = by_class[name]
        print(f"  {name:34s} {sum(c.values()):6d}  " + "  ".join(f"{k}:{v}" for k, v in sorted(c.items())))
    print("  verdicts: " + ", ".join(f"{k}:{v}" for k, v in sorted(verdicts.items())))
    print(f"  bursts: {len(client.bursts)}; generator's largest lag behind the Poisson schedule: "
          f"{1000 * client.max_lag:.1f} ms (schedule skipped after lags: {client.skipped_lag_s:.2f} s); "
          f"/metrics scrapes: {len(client.scrapes)} "
          f"({len(client.meta_errors)} GETs failed{': ' + '; '.join(client.meta_errors[:3]) if client.meta_errors else ''})")
    if metrics_summary:
        ms = metrics_summary
        print(f"  server: inputs submitted {ms['submitted']}, outcomes {ms['outcomes']}, OOM events "
              f"{ms['oom_events']:g}, isolation retries {ms['isolation_retries']:g}, effective budget now "
              f"{ms['effective_budget']:g}")
    print(f"  shutdown: {len(shut)} requests ({len(before)} written before SIGTERM, {drained_ok} drained 200 after it, "
          f"{sum(r.status == 503 for r in shut)} got 503, {sum(r.verdict == 'refused_after_sigterm' for r in shut)} "
          f"refused after it); {drain_note}; exit {res['rc']} after {res['exit_s']:.2f} s")
    print()
    print("Checks")
    for c in checks.items:
        print(f"  [{'PASS' if c['ok'] else 'FAIL'}] {c['name']}" + (f": {c['detail']}" if c["detail"] else ""))

    summary = {
        "config": {k: v for k, v in vars(args).items()},
        "server_command": cmd,
        "server_log": log_path,
        "requests": len(client.reqs),
        "by_class": {k: dict(v) for k, v in by_class.items()},
        "verdicts": dict(verdicts),
        "bursts": [[round(b0 - client.t0, 3), round(b1 - client.t0, 3)] for b0, b1 in client.bursts],
        "max_generator_lag_ms": 1000 * client.max_lag,
        "generator_skipped_s": client.skipped_lag_s,
        "windows": windows,
        "resources": {"warmup_s": warm, "span_s": span, "checks": res_checks, "samples": samples,
                      "rest_samples": res.get("rest_samples")},
        "metrics": metrics_summary,
        "shutdown": {"requests": len(shut), "written_before_sigterm": len(before), "drained_200": drained_ok,
                     "exit_status": res["rc"], "exit_s": res["exit_s"], "drain_scrape": drain_note},
        "violations": client.violations[:200],
        "failed_gets": client.meta_errors[:50],
        "problems": [dataclasses.asdict(r) for r in client.reqs if r.verdict in ("lost", "unexpected")][:200],
        "checks": checks.items,
        "passed": not checks.failed,
    }
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=1, default=str)
        print(f"\nJSON summary: {args.json}")
    if checks.failed:
        print(f"\nSOAK FAILED: {len(checks.failed)} check(s) failed:", file=sys.stderr)
        for c in checks.failed:
            print(f"  - {c['name']}: {c['detail']}", file=sys.stderr)
        print(f"server log: {log_path}", file=sys.stderr)
        return 1
    print("\nSOAK PASSED")
    return 0
