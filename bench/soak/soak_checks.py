"""The soak's verdicts and checks: each request judged against its class, and the
final checks (nothing lost or answered twice, only injected failures fail,
every fault class exercised, /metrics agrees, a clean drain on SIGTERM, flat
resources after the warm-up).

`Checks` (soak_checklist.py) collects them in the order they are printed; a
failed one makes the soak exit 1.
"""

from __future__ import annotations

import statistics

from bench.harness import prometheus
from bench.soak.soak_checklist import Checks
from bench.soak.soak_client import Client
from bench.soak.soak_http import now
from bench.soak.soak_metrics import check_metrics
from bench.soak.soak_requests import ALLOWED, Req


def overlaps_burst(req: Req, bursts: list[list[float]]) -> bool:
    end = req.t_done if req.t_done is not None else now()
    return any(req.t_send <= b1 and b0 <= end for b0, b1 in bursts)


def classify(client: Client, req: Req, log: dict[str, list[tuple[str, int]]]):
    """Sets req.verdict: ok, collateral_429, refused_after_sigterm, unexpected or lost."""
    allowed = ALLOWED[req.cls]
    shutdown = req.phase == "shutdown"
    logged = log.get(req.rid, [])
    if req.cls == "disconnect_after_send":
        if len(logged) != 1:
            req.verdict, req.why = "lost", f"the server logged {len(logged)} replies for a disconnected request"
        elif logged[0][1] in allowed or (logged[0][1] == 429 and overlaps_burst(req, client.bursts)):
            req.verdict = "ok"
        else:
            req.verdict, req.why = "unexpected", f"server status {logged[0][1]} for a disconnected request"
        return
    if req.cls == "disconnect_mid_body":
        if logged:
            req.verdict, req.why = "unexpected", f"the server answered a half-sent request: {logged}"
        elif req.outcome != "disconnected":
            req.verdict, req.why = "unexpected", f"{req.outcome}: {req.detail}"
        else:
            req.verdict = "ok"
        return
    if req.outcome == "reply":
        st = req.status
        if req.detail:
            req.verdict, req.why = "unexpected", req.detail
        elif st in allowed:
            req.verdict = "ok"
            if st == 500 and req.cls == "poison" and str(client.args.fail_id) not in req.message:
                req.verdict, req.why = "unexpected", f"500 not naming the fail id: {req.message[:120]}"
            if st == 500 and req.cls == "oom_lone" and "memory" not in req.message.lower():
                req.verdict, req.why = "unexpected", f"oom_lone 500 not an out-of-memory: {req.message[:120]}"
        elif st == 429 and overlaps_burst(req, client.bursts):
            req.verdict = "collateral_429"
        elif shutdown and st == 503:
            # Drain mode: a 503 comes from a refusal ("the server is shutting
            # down"), never from a queued input being failed.
            if "shutting down" in req.message:
                req.verdict = "ok"
            else:
                req.verdict, req.why = "unexpected", f"503 in drain mode: {req.message[:160]}"
        else:
            req.verdict, req.why = "unexpected", f"status {st} ({req.message[:160]})"
        if req.verdict in ("ok", "collateral_429") and (len(logged) != 1 or logged[0][1] != st):
            req.verdict, req.why = "unexpected", f"client saw {st}, server log says {logged}"
        return
    # No reply.
    written_before = client.t_kill is not None and req.t_written is not None and req.t_written < client.t_kill
    if shutdown and not (written_before and req.written_whole) and req.received == 0 and req.outcome in (
        "refused", "closed", "reset", "connect_error"
    ):
        if logged:
            req.verdict, req.why = "lost", f"accepted after SIGTERM ({logged}) but no reply reached the client ({req.outcome})"
        else:
            req.verdict = "refused_after_sigterm"
        return
    req.verdict = "lost"
    req.why = f"{req.outcome} after {req.received} response bytes {req.detail}".strip()
    if logged:
        req.why += f"; the server logged {logged}"


def in_bursts(t: float, bursts: list[list[float]]) -> bool:
    return any(b0 <= t <= b1 for b0, b1 in bursts)


def flat_check(samples: list[dict], rest: list[dict], key: str, t_lo: float, span: float,
               bursts: list[list[float]], base_key: str | None = None):
    """The median of `key` over [t_lo, t_lo + span) outside the bursts' windows (times
    relative to the load phase's start), against its least value among the samples
    taken at rest after the load phase. A leak persists at rest; what a burst or a
    request in progress holds does not, nor does a socket the server is still closing."""
    window = [s for s in samples if t_lo <= s["t"] < t_lo + span and not in_bursts(s["t"], bursts)]
    if len(window) < 3 or not rest:
        return None
    f, l_ = statistics.median(s[key] for s in window), min(s[key] for s in rest)
    base = statistics.median(s[base_key] for s in window) if base_key else f
    return {"first": f, "last": l_, "base": base, "growth": (l_ - f) / base if base else 0.0,
            "n_first": len(window), "n_last": len(rest)}


def check_requests(client: Client, log, load: list[Req], checks: Checks):
    """Nothing lost, nothing answered twice, no unexpected status or protocol violation."""
    lost = [r for r in client.reqs if r.verdict == "lost"]
    unexpected = [r for r in client.reqs if r.verdict == "unexpected"]
    dups = [v for v in client.violations if v["kind"] == "duplicate"]
    dup_log = {rid: v for rid, v in log.items() if rid.startswith("sk") and len(v) > 1}
    other_viol = [v for v in client.violations if v["kind"] not in ("duplicate",)]

    checks.add("no request lost (every request answered, except deliberate disconnects and post-SIGTERM refusals)",
               not lost, "; ".join(f"{r.rid}: {r.why}" for r in lost[:10]) + (f" ... ({len(lost)} in all)" if len(lost) > 10 else ""))
    checks.add("no request answered twice (strict framing on the client; one log line per request id on the server)",
               not dups and not dup_log,
               "; ".join(f"{v['rid']}: {v['detail']}" for v in dups[:5]) + "; ".join(f"{k}: {v}" for k, v in list(dup_log.items())[:5]))
    checks.add("no unexpected status (each request got a status allowed for its class)", not unexpected,
               "; ".join(f"{r.rid} [{r.phase}]: {r.why}" for r in unexpected[:10]) + (f" ... ({len(unexpected)} in all)" if len(unexpected) > 10 else ""))
    checks.add("no protocol violations (framing, x-request-id echo, monotonic counters)", not other_viol,
               "; ".join(f"{v['kind']} {v['rid']}: {v['detail']}" for v in other_viol[:10]))
    normal = [r for r in load if r.cls in ("text_openai", "text_tei", "ids_openai", "ids_tei", "large")]
    checks.add("only injected failures fail: every normal request outside bursts got 200",
               all(r.status == 200 or r.verdict == "collateral_429" for r in normal),
               f"{sum(r.status == 200 for r in normal)} of {len(normal)} got 200, "
               f"{sum(r.verdict == 'collateral_429' for r in normal)} collateral 429 during bursts")


def check_load_phase(args, client: Client, res: dict, load: list[Req], checks: Checks) -> dict | None:
    """The /metrics comparison, the fault classes' coverage and the settle; returns the metrics summary."""
    cov = []
    if args.fail_id >= 0 and not any(r.cls == "poison" and r.status == 500 for r in load):
        cov.append("no poison request got 500")
    if not any(r.cls == "deadline" and r.status == 504 for r in load):
        cov.append("no deadline request got 504")
    if client.bursts and not any(r.cls == "burst" and r.status == 429 for r in load):
        cov.append("no burst request got 429")
    if client.bursts and not any(r.cls == "burst" and r.status == 200 for r in load):
        cov.append("no burst request got 200")
    if not any(r.cls == "disconnect_after_send" for r in load):
        cov.append("no disconnect was sent")
    final = res["final"]
    metrics_summary = None
    if final is None:
        checks.add("metrics: final scrape after the load phase", False, "the scrape failed")
    else:
        metrics_summary = check_metrics(client, final, res["log_at_final"], checks)
        if args.oom_above_tokens > 0 and metrics_summary["oom_events"] <= 0:
            cov.append("no OOM event (tokenbatch_oom_events_total is 0)")
        if args.fail_id >= 0 and metrics_summary["isolation_retries"] <= 0:
            cov.append("no isolation retry")
    checks.add("coverage: every fault class was exercised", not cov, "; ".join(cov))
    checks.add("load phase settled (no client request outstanding, server in flight back to 1)",
               res["settled"] and res["unsettled"] == 0, f"settled={res['settled']}, outstanding={res['unsettled']}")
    return metrics_summary


def check_shutdown(client: Client, res: dict, shut: list[Req], checks: Checks) -> tuple[list[Req], int, str]:
    """Exit 0 and every request written before the SIGTERM answered; returns those requests,
    how many of them drained with 200 after the signal, and a note on the drain scrape."""
    before = [r for r in shut if r.t_written is not None and client.t_kill is not None and r.t_written < client.t_kill]
    drained_ok = sum(1 for r in before if r.status == 200 and r.t_done and r.t_done > client.t_kill)
    checks.add("SIGTERM: the server exited 0", res["rc"] == 0, f"exit status {res['rc']} after {res['exit_s']:.2f} s")
    checks.add("SIGTERM: every request written before the signal was answered (its status or 503)",
               all(r.verdict != "lost" for r in before),
               f"{len(before)} written before, {drained_ok} answered 200 after the signal (drained), "
               f"{sum(r.status == 503 for r in before)} got 503")
    if res["drain"] is None:
        drain_note = "no scrape during the drain (connection closed first)"
    else:
        dm = res["drain"]["metrics"]
        drain_note = (f"drain scrape at +{res['drain']['t'] - (client.t_kill - client.t0):.3f} s: in flight "
                      f"{prometheus.value(dm, 'tokenbatch_http_in_flight'):g}, "
                      f"queue {prometheus.value(dm, 'tokenbatch_queue_size'):g}")
    return before, drained_ok, drain_note


def check_resources(args, client: Client, res: dict, checks: Checks) -> tuple[float, float, dict, list[dict]]:
    """RSS, fds net of the client's connections and threads: at rest after the load
    phase, no more than just after the warm-up; returns the warm-up, the compared
    span, the comparisons and the load phase's samples."""
    a = args
    D = a.duration_s
    warm = a.warmup_s if a.warmup_s is not None else min(300.0, max(20.0, 0.2 * D))
    span = min(a.window_s, (D - warm) / 3)
    res_checks = {}
    samples = [s for s in client.samples if 0 <= s["t"] <= D]
    bursts = [[b0 - client.t0, b1 - client.t0] for b0, b1 in client.bursts]
    rest = res.get("rest_samples") or []
    for key, base in (("rss_kb", None), ("excess_fds", "fds"), ("threads", None)):
        fc = flat_check(samples, rest, key, warm, span, bursts, base)
        res_checks[key] = fc
        if fc is None:
            checks.add(f"resources: {key} flat after warm-up", False,
                       f"too few samples (3 outside bursts after the warm-up and 1 at rest needed; "
                       f"{len(rest)} at rest)")
            continue
        if key == "excess_fds":
            ok = fc["last"] - fc["first"] < 0.05 * fc["base"] or fc["last"] <= fc["first"]
            detail = (f"server fds net of client connections: median {fc['first']:g} -> {fc['last']:g} at rest "
                      f"(baseline fd count {fc['base']:g}; growth {100 * (fc['last'] - fc['first']) / fc['base']:+.1f} %)")
        else:
            ok = fc["growth"] < 0.05
            unit = " KiB" if key == "rss_kb" else ""
            detail = f"median {fc['first']:g}{unit} -> {fc['last']:g}{unit} at rest ({100 * fc['growth']:+.2f} %)"
        checks.add(f"resources: {key} growth under 5 % after {warm:g} s warm-up", ok, detail)
    return warm, span, res_checks, samples
