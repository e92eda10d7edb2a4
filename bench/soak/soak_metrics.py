"""The comparison of the soak client's own counts with the server's /metrics after
the load phase (the scrapes are parsed by bench.harness.prometheus).

`check_metrics` holds the metric checks: requests per route and code (the
disconnected requests attributed from the server's log, with log-free bounds
as well), inputs per route, the duration histogram's counts, the settled
gauges, the engine's input accounting and the injected failures' outcomes.
"""

from __future__ import annotations

import collections

from bench.harness import prometheus
from bench.soak.soak_checklist import Checks
from bench.soak.soak_client import Client
from bench.soak.soak_requests import ROUTE_OPENAI, ROUTE_TEI


def expected_http_counts(client: Client, log) -> tuple[collections.Counter, dict]:
    """(route, code) -> count the server should report after the load phase; plus per-route bounds."""
    exp: collections.Counter = collections.Counter()
    bounds: dict[str, dict] = collections.defaultdict(lambda: {"known": 0, "disc": 0, "inputs_lo": 0, "inputs_hi": 0})
    for r in client.reqs:
        if r.phase != "load":
            continue
        b = bounds[r.route]
        if r.cls == "disconnect_mid_body":
            continue
        if r.cls == "disconnect_after_send":
            b["disc"] += 1
            logged = log.get(r.rid, [])
            if logged:
                exp[(r.route, logged[0][1])] += 1
                st = logged[0][1]
                if st != 429:
                    b["inputs_lo"] += r.n_inputs
                b["inputs_hi"] += r.n_inputs
            else:
                b["inputs_hi"] += r.n_inputs
            continue
        if r.outcome == "reply":
            exp[(r.route, r.status)] += 1
            b["known"] += 1
            if not (r.status == 429 and r.kind429 == "concurrency"):
                b["inputs_lo"] += r.n_inputs
                b["inputs_hi"] += r.n_inputs
    return exp, bounds


def check_metrics(client: Client, final: dict, log, checks: Checks) -> dict:
    m = final["metrics"]
    meta = final["meta_before"]
    exp, bounds = expected_http_counts(client, log)
    for key, n in meta.items():
        exp[key] += n
    server = {}
    for labels, v in prometheus.series(m, "tokenbatch_http_requests_total").items():
        d = dict(labels)
        server[(d.get("route"), int(d.get("code", 0)))] = int(v)
    keys = sorted(set(server) | set(exp), key=lambda k: (k[0] or "", k[1]))
    diff = {f"{k[0]} {k[1]}": {"client": exp.get(k, 0), "server": server.get(k, 0)} for k in keys}
    bad = {k: v for k, v in diff.items() if v["client"] != v["server"]}
    checks.add(
        "metrics: tokenbatch_http_requests_total{route,code} == client counts (disconnects attributed from the log)",
        not bad,
        "; ".join(f"{k}: client {v['client']} server {v['server']}" for k, v in bad.items()) or f"{len(diff)} series agree",
    )
    # Log-free bounds: the disconnected requests are the only unknowns.
    msgs = []
    for route in (ROUTE_OPENAI, ROUTE_TEI):
        b = bounds[route]
        total_server = sum(v for (r, _), v in server.items() if r == route)
        client_only = collections.Counter()
        for r in client.reqs:
            if r.phase == "load" and r.route == route and r.outcome == "reply" and r.cls != "disconnect_after_send":
                client_only[r.status] += 1
        if total_server != b["known"] + b["disc"]:
            msgs.append(f"{route}: server total {total_server} != client replies {b['known']} + disconnected {b['disc']}")
        for code in set(client_only) | {c for (r, c) in server if r == route}:
            s = server.get((route, code), 0)
            lo = client_only.get(code, 0)
            hi = lo + (b["disc"] if code in (200, 499, 429) else 0)
            if not lo <= s <= hi:
                msgs.append(f"{route} {code}: server {s} outside [{lo}, {hi}]")
    checks.add("metrics: per-route totals within the log-free bounds", not msgs, "; ".join(msgs))
    # Inputs per route.
    msgs = []
    for route in (ROUTE_OPENAI, ROUTE_TEI):
        s = int(prometheus.value(m, "tokenbatch_http_inputs_total", route=route))
        lo, hi = bounds[route]["inputs_lo"], bounds[route]["inputs_hi"]
        if not lo <= s <= hi:
            msgs.append(f"{route}: server {s} outside [{lo}, {hi}]")
    checks.add("metrics: tokenbatch_http_inputs_total{route} matches the inputs sent", not msgs, "; ".join(msgs))
    # Histogram counts agree with the reply counters.
    msgs = []
    for labels, v in prometheus.series(m, "tokenbatch_http_request_duration_seconds_count").items():
        route = dict(labels).get("route")
        total = sum(n for (r, _), n in server.items() if r == route)
        if int(v) != total:
            msgs.append(f"{route}: duration count {int(v)} != replies {total}")
    checks.add("metrics: request-duration histogram counts == reply counters", not msgs, "; ".join(msgs))
    # Settled gauges.
    gauges = {
        "tokenbatch_http_in_flight": prometheus.value(m, "tokenbatch_http_in_flight"),
        "tokenbatch_queue_size": prometheus.value(m, "tokenbatch_queue_size"),
        "tokenbatch_queue_tokens": prometheus.value(m, "tokenbatch_queue_tokens"),
    }
    checks.add(
        "metrics: settled (in flight 1 = the scrape itself, queue empty)",
        gauges["tokenbatch_http_in_flight"] == 1 and gauges["tokenbatch_queue_size"] == 0
        and gauges["tokenbatch_queue_tokens"] == 0,
        ", ".join(f"{k} {v:g}" for k, v in gauges.items()),
    )
    # Engine accounting: every input accepted was resolved exactly once.
    outcomes = {dict(l).get("outcome"): int(v) for l, v in prometheus.series(m, "tokenbatch_inputs_total").items()}
    submitted = int(prometheus.value(m, "tokenbatch_inputs_submitted_total"))
    resolved = sum(v for k, v in outcomes.items() if k not in ("queue_full",))
    checks.add(
        "metrics: inputs submitted == inputs resolved (success + failures other than queue_full refusals)",
        submitted == resolved,
        f"submitted {submitted}, resolved {resolved} ({outcomes})",
    )
    # Injected failures' outcomes.
    load = [r for r in client.reqs if r.phase == "load"]

    def count(cls, status):
        return sum(1 for r in load if r.cls == cls and r.status == status)

    msgs = []
    if client.args.fail_id >= 0:
        lo = count("poison", 500)
        hi = lo + count("poison", 429)
        if not lo <= outcomes.get("backend", 0) <= hi:
            msgs.append(f"backend failures {outcomes.get('backend', 0)} outside [{lo}, {hi}] (poison requests answered 500)")
    elif outcomes.get("backend", 0):
        msgs.append(f"backend failures {outcomes.get('backend')} without a fail id")
    if client.args.oom_above_tokens > 0:
        lo = count("oom_lone", 500)
        hi = lo + count("oom_lone", 429)
        if not lo <= outcomes.get("out_of_memory", 0) <= hi:
            msgs.append(f"out_of_memory outcomes {outcomes.get('out_of_memory', 0)} outside [{lo}, {hi}]")
        oom_events = prometheus.value(m, "tokenbatch_oom_events_total")
        if oom_events < lo:
            msgs.append(f"oom_events_total {oom_events:g} < lone OOM replies {lo}")
    ok_inputs = sum(r.n_inputs for r in load if r.status == 200)
    ok_inputs += sum(r.n_inputs for r in load if r.cls == "disconnect_after_send" and log.get(r.rid, [("", 0)])[0][1] == 200)
    uncertain = sum(r.n_inputs for r in load if r.status not in (200, None) and r.kind429 != "concurrency")
    uncertain += sum(r.n_inputs for r in load if r.cls == "disconnect_after_send" and log.get(r.rid, [("", 0)])[0][1] != 200)
    if not ok_inputs <= outcomes.get("success", 0) <= ok_inputs + uncertain:
        msgs.append(f"successful inputs {outcomes.get('success', 0)} outside [{ok_inputs}, {ok_inputs + uncertain}]")
    checks.add("metrics: engine outcomes match the injected failures and the 200 replies", not msgs, "; ".join(msgs))
    return {"http": diff, "bounds": {k: dict(v) for k, v in bounds.items()}, "gauges": gauges, "outcomes": outcomes,
            "submitted": submitted, "oom_events": prometheus.value(m, "tokenbatch_oom_events_total"),
            "isolation_retries": prometheus.value(m, "tokenbatch_isolation_retries_total"),
            "effective_budget": prometheus.value(m, "tokenbatch_effective_budget")}
