#!/usr/bin/env python3
"""Three `tokenbatch serve --backend noop` replicas behind HAProxy and nginx, on loopback (#19).

    python3 -m tests.lb.loopback_balancers BINARY REPO_ROOT [--keep]   # from the repository root

Runs the real /usr/sbin/haproxy with deploy/haproxy.cfg unchanged (addresses
from its TB_* environment variables) and the real nginx with deploy/nginx.conf
(its listen and server addresses replaced, run under a temporary prefix), and
checks:

  a. shares: one replica slowed; through HAProxy (balance roundrobin, so that
     the split is the agents' alone) with the replicas' load agents its share
     of requests falls well below each fast replica's; with the agents
     unreachable (same config) round robin splits evenly. Shares are counted
     over a window of at least --window-requests requests.
  b. failures through HAProxy (the file's own leastconn) under steady load: SIGTERM one replica (it keeps
     serving while /health says draining and its agent says drain, then exits
     0), SIGKILL another; every client request still gets 200 (retries and
     redispatches read from HAProxy's stats); the killed replica restarted on
     its ports serves again through HAProxy.
  c. nginx: requests reach every replica; one SIGKILLed under load, nginx's
     retries (proxy_next_upstream ... non_idempotent) keep failures at zero.

Measured values are printed as JSON at the end. Exit 0 when every check
passed, 1 when one failed (named, with the logs that matter). Standard library
only; every process is killed and the temporary directory removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from bench.harness import http_client
from bench.harness.balancers import HAProxy, Nginx
from bench.harness.ports import free_ports
from bench.harness.processes import HarnessError, Registry
from bench.harness.replica import Replica, agent_line, start_replicas
from tests.lb.lb_load import Load

NEW_FLAGS = ["--lb-agent-port", "--lb-agent-backlog-ms", "--shutdown-delay-ms"]


class TestFailure(HarnessError):
    """A check failed; the message says which and with what measured values."""


def check(cond: bool, what: str, measured) -> None:
    if not cond:
        raise TestFailure(f"{what}; measured: {measured}")


def served(replicas: list[Replica]) -> list[int]:
    return [r.embeddings_served() for r in replicas]


def shares_of(before: list[int], after: list[int]) -> tuple[list[float], int]:
    deltas = [a - b for a, b in zip(after, before)]
    total = sum(deltas)
    return [round(d / total, 3) if total else 0.0 for d in deltas], total


def measure_shares(args, procs, cfg, replicas, agent_ports, lb_ports, name) -> dict:
    """Load through one HAProxy for warm-up + window; shares from the replicas' counters."""
    # Round robin: its split follows the agent weights alone (leastconn, the
    # file's default, would move traffic off a slow replica by itself).
    hx = HAProxy(procs, cfg, name, lb_ports[0], lb_ports[1], [(r.port, a) for r, a in zip(replicas, agent_ports)],
                 balance="roundrobin")
    hx.start()
    real_agents = agent_ports == [r.agent_port for r in replicas]
    rows = hx.wait_servers(want_agent=real_agents)
    agent_status = [rows[f"r{i}"]["agent_status"] for i in (1, 2, 3)]
    load = Load(hx.front_port, args.clients, max_s=args.warm_s + args.measure_max_s + 10).start()
    weights: list[list[int]] = []
    try:
        time.sleep(args.warm_s)
        before = served(replicas)
        # At least measure_s (several agent polls) and at least window_requests
        # requests, however slowly a loaded machine serves them.
        start = time.monotonic()
        while True:
            rows = hx.server_rows()
            weights.append([int(rows[f"r{i}"]["weight"]) for i in (1, 2, 3)])
            after = served(replicas)
            elapsed = time.monotonic() - start
            if elapsed >= args.measure_max_s or (
                    elapsed >= args.measure_s and sum(after) - sum(before) >= args.window_requests):
                break
            time.sleep(0.25)
    finally:
        load.stop()
        hx.stop()
    shares, total = shares_of(before, after)
    res = load.summary()
    check(not res["failures"], f"{name}: requests failed while measuring shares", res)
    check(total >= args.window_requests,
          f"{name}: fewer than {args.window_requests} requests in {args.measure_max_s} s to judge shares", total)
    slow_w = sorted(w[0] for w in weights)
    return {"shares": shares, "requests": total, "agent_status": agent_status,
            "slow_weight_min_median_max": [slow_w[0], slow_w[len(slow_w) // 2], slow_w[-1]],
            "fast_weight_min": min(min(w[1], w[2]) for w in weights)}


def part_shares(args, procs, cfg, summary) -> None:
    # 0-2 replicas, 3-5 their agents, 6-8 nothing (agents off), 9-12 the two HAProxys.
    ports = free_ports(13)
    common = ["--lb-agent-backlog-ms", str(args.backlog_ms)] if args.backlog_ms else []
    replicas = [Replica(procs, args.binary, f"a-r{i + 1}", ports[i], ports[3 + i],
                        ["--noop-delay-us", str(args.slow_delay_us if i == 0 else args.fast_delay_us),
                         *(["--max-batch-requests", str(args.slow_batch_requests)] if i == 0 else []),
                         *common]) for i in range(3)]
    start_replicas(replicas)
    try:
        with_agent = measure_shares(args, procs, cfg, replicas, ports[3:6], ports[9:11], "haproxy-agent")
        # Same config, agent ports where nothing listens: HAProxy keeps weight 100.
        no_agent = measure_shares(args, procs, cfg, replicas, ports[6:9], ports[11:13], "haproxy-no-agent")
    finally:
        for r in replicas:
            r.stop()
    summary["a_shares"] = {"slow_replica": "r1", "with_agent": with_agent, "without_agent": no_agent}
    # Relative to the fast replicas: a loaded machine slows them too, which
    # lowers their weights as well as the slow one's.
    slow, fast = with_agent["shares"][0], min(with_agent["shares"][1:])
    check(slow < args.slow_share_ratio * fast,
          f"with agent weights the slow replica's share should be < {args.slow_share_ratio} x the "
          f"smaller fast replica's", with_agent)
    check(all(0.28 <= s <= 0.39 for s in no_agent["shares"]),
          "without agents round robin should split evenly (each share in 0.28-0.39)", no_agent)


def part_failures(args, procs, cfg, summary) -> list[Replica]:
    ports = free_ports(8)
    extra = ["--noop-delay-us", str(args.fast_delay_us), "--shutdown-delay-ms", str(args.shutdown_delay_ms)]
    reps = [Replica(procs, args.binary, f"b-r{i + 1}", ports[i], ports[3 + i], extra) for i in range(3)]
    start_replicas(reps)
    hx = HAProxy(procs, cfg, "haproxy-failures", ports[6], ports[7], [(r.port, r.agent_port) for r in reps])
    hx.start()
    hx.wait_servers(want_agent=True)
    out: dict = {"shutdown_delay_ms": args.shutdown_delay_ms}
    load = Load(hx.front_port, args.clients, max_s=90).start()
    try:
        time.sleep(1.5)
        # SIGTERM r1: probe it directly (health, agent) and HAProxy's view until it exits.
        seen: dict[str, dict[str, float]] = {"health": {}, "agent": {}, "haproxy": {}}
        t_term = time.monotonic()
        reps[0].signal(signal.SIGTERM)
        while reps[0].proc.poll() is None and time.monotonic() < t_term + 15:
            now = time.monotonic() - t_term
            try:
                st, body, _ = http_client.request(reps[0].port, "GET", "/health", timeout=1)
                health = f"{st} {body.decode(errors='replace')}"
            except ConnectionRefusedError:
                health = "refused"
            except OSError as e:
                health = type(e).__name__
            seen["health"].setdefault(health, round(now, 2))
            seen["agent"].setdefault(agent_line(reps[0].agent_port), round(now, 2))
            seen["haproxy"].setdefault(hx.server_rows()["r1"]["status"], round(now, 2))
            time.sleep(0.05)
        rc = reps[0].wait_exit(10)
        out["sigterm"] = {"exit_code": rc, "exited_after_s": round(time.monotonic() - t_term, 2),
                          "first_seen_s": seen}
        check(rc == 0, "the SIGTERMed replica should exit 0", out["sigterm"])
        draining = [k for k in seen["health"] if k.startswith("503") and "draining" in k]
        check(bool(draining), "the SIGTERMed replica's /health should answer 503 draining during its delay",
              seen["health"])
        check("drain" in seen["agent"], "the SIGTERMed replica's agent should say drain", seen["agent"])
        closed_at = seen["health"].get("refused", 1e9)
        lb_out = [t for s, t in seen["haproxy"].items() if not s.startswith("UP")]
        check(bool(lb_out) and min(lb_out) < closed_at,
              "HAProxy should take the draining replica out before its listener closes", seen)

        # SIGKILL r2 under load, wait for HAProxy to mark it down, restart it on its ports.
        time.sleep(0.5)
        t_kill = time.monotonic()
        reps[1].stop()
        down_after = None
        while time.monotonic() < t_kill + 6:
            if hx.server_rows()["r2"]["status"].startswith("DOWN"):
                down_after = round(time.monotonic() - t_kill, 2)
                break
            time.sleep(0.05)
        time.sleep(0.5)
        reps[1].start()
        reps[1].wait_ready()
        t_restart = time.monotonic()
        back_after = None
        while time.monotonic() < t_restart + args.rejoin_max_s:
            if reps[1].embeddings_served() > 0:
                back_after = round(time.monotonic() - t_restart, 2)
                break
            time.sleep(0.1)
        time.sleep(0.5)
        end = time.monotonic() + 30  # enough requests to judge, however slowly they are served
        while load.total() < args.window_requests and time.monotonic() < end:
            time.sleep(0.1)
    finally:
        load.stop()
    rows = hx.server_rows()
    hx.stop()
    res = load.summary()
    backend = rows["BACKEND"]
    out.update({"load": res, "sigkill_marked_down_after_s": down_after,
                "restarted_serving_after_s": back_after,
                "haproxy_retries_wretr": int(backend["wretr"]), "haproxy_redispatches_wredis": int(backend["wredis"]),
                "per_server_wretr_wredis": {k: [int(v["wretr"]), int(v["wredis"])] for k, v in rows.items()
                                            if k.startswith("r")}})
    summary["b_failures_haproxy"] = out
    check(not res["failures"], "every request through HAProxy should get 200 across SIGTERM and SIGKILL", res)
    check(res["ok"] >= args.window_requests, "too few requests to judge", res["ok"])
    check(out["haproxy_retries_wretr"] + out["haproxy_redispatches_wredis"] > 0,
          "the SIGKILL should have made HAProxy retry (else the check exercised nothing)", out)
    check(back_after is not None, f"the restarted replica should serve via HAProxy within {args.rejoin_max_s} s",
          out)
    return reps


def retried_lines(access_log: str) -> list[str]:
    """Access-log lines of requests nginx sent to more than one upstream."""
    try:
        with open(access_log, errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    return [ln for ln in lines if "upstream=" in ln and "," in ln.split("upstream=", 1)[1].split(" ")[0]]


def part_nginx(args, procs, conf, workdir, reps, summary) -> None:
    reps[0].start()  # the replica SIGTERMed in part b, back on its ports
    reps[0].wait_ready()
    port = free_ports(1)[0]
    ngx = Nginx(procs, conf, os.path.join(workdir, "nginx"), port, [r.port for r in reps])
    ngx.start()
    load = Load(port, args.clients, max_s=90).start()
    try:
        # Warm-up: until every replica has answered some requests (the one
        # restarted just now may be slow to start on a loaded machine).
        start_counts = served(reps)
        end = time.monotonic() + 15
        while time.monotonic() < end and min(a - b for a, b in zip(served(reps), start_counts)) < 20:
            time.sleep(0.1)
        time.sleep(0.5)
        before = served(reps)
        start = time.monotonic()
        while True:  # at least 1.5 s and 100 requests
            time.sleep(0.25)
            after = served(reps)
            elapsed = time.monotonic() - start
            if elapsed >= 30 or (elapsed >= 1.5 and sum(after) - sum(before) >= 100):
                break
        shares, total = shares_of(before, after)
        reps[2].stop()  # SIGKILL under load
        # Until nginx has logged a request retried on another replica (the
        # first one it sends to the dead replica), then a little more load.
        end = time.monotonic() + args.retry_max_s
        while not retried_lines(ngx.access_log) and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(1)
    finally:
        load.stop()
    ngx.stop()
    res = load.summary()
    with open(ngx.access_log, errors="replace") as f:
        lines = f.read().splitlines()
    retried = retried_lines(ngx.access_log)
    with open(ngx.error_log, errors="replace") as f:
        errors = f.read()
    out = {"shares_before_kill": shares, "requests_before_kill": total, "load": res,
           "requests_logged": len(lines), "retried_on_another_replica": len(retried),
           "retried_examples": [ln.split("\"", 2)[2].strip() for ln in retried[:3]],
           "error_log_counts": {k: errors.count(k) for k in
                                ("Connection reset by peer", "prematurely closed", "Connection refused",
                                 "temporarily disabled", "no live upstreams")}}
    summary["c_nginx"] = out
    check(all(s > 0.1 for s in shares), "nginx should spread requests over all three replicas", out)
    check(not res["failures"], "every request through nginx should get 200 across a SIGKILL", out)
    check(len(retried) > 0, "the SIGKILL should have made nginx retry on another replica", out)


def print_logs(workdir: str) -> None:
    """The last lines of every process's log, request lines left out."""
    for root, _, files in os.walk(workdir):
        for name in sorted(files):
            if not name.endswith(".log") or name == "access.log":
                continue
            with open(os.path.join(root, name), errors="replace") as f:
                lines = [ln for ln in f.read().splitlines() if '"POST ' not in ln and "route=/health" not in ln]
            print(f"--- {os.path.relpath(os.path.join(root, name), workdir)} (last lines)", file=sys.stderr)
            print("\n".join(lines[-8:]), file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("repo")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--warm-s", type=float, default=3.0)
    ap.add_argument("--measure-s", type=float, default=5.0, help="shortest share window")
    ap.add_argument("--measure-max-s", type=float, default=30.0, help="longest share window")
    ap.add_argument("--window-requests", type=int, default=300,
                    help="fewest requests in a share window, and through HAProxy across the failures")
    ap.add_argument("--slow-delay-us", type=int, default=20000)
    ap.add_argument("--fast-delay-us", type=int, default=200)
    ap.add_argument("--slow-batch-requests", type=int, default=1)
    ap.add_argument("--backlog-ms", type=float, default=0, help="--lb-agent-backlog-ms (0: the server's default)")
    ap.add_argument("--slow-share-ratio", type=float, default=0.5,
                    help="with agents, the slow replica's share must be below this x each fast one's")
    # Several agent and health-check intervals (1 s each in deploy/haproxy.cfg),
    # so that a late poll on a loaded machine still sees the drain in time.
    ap.add_argument("--shutdown-delay-ms", type=int, default=4000)
    ap.add_argument("--rejoin-max-s", type=float, default=10.0)
    ap.add_argument("--retry-max-s", type=float, default=15.0,
                    help="longest wait for nginx to retry a request of the killed replica")
    ap.add_argument("--only", choices=["a", "b", "c"], action="append", help="run only these parts")
    args = ap.parse_args()
    t0 = time.monotonic()
    cfg = os.path.join(args.repo, "deploy", "haproxy.cfg")
    conf = os.path.join(args.repo, "deploy", "nginx.conf")
    # Debian installs both in /usr/sbin, which a user's PATH may lack.
    os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    for tool in ("haproxy", "nginx"):
        if shutil.which(tool) is None:
            print(f"load_balancers_loopback: {tool} is not installed (scripts/setup.sh installs it)",
                  file=sys.stderr)
            return 1
    help_text = subprocess.run([args.binary, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
    missing = [f for f in NEW_FLAGS if f not in help_text]
    if missing:
        print(f"load_balancers_loopback: {args.binary} lacks {missing}", file=sys.stderr)
        return 1
    workdir = tempfile.mkdtemp(prefix="tb-lb-")
    procs = Registry(workdir)
    summary: dict = {}
    parts = set(args.only or ["a", "b", "c"])
    failed = None
    try:
        if "a" in parts:
            part_shares(args, procs, cfg, summary)
        if parts & {"b", "c"}:
            reps = part_failures(args, procs, cfg, summary)
            if "c" in parts:
                part_nginx(args, procs, conf, workdir, reps, summary)
    except HarnessError as e:  # a failed check, or a process that did not start
        failed = str(e)
    finally:
        procs.kill_all()
        if failed:
            print_logs(workdir)
        summary["wall_s"] = round(time.monotonic() - t0, 1)
        print(json.dumps(summary, indent=1))
        if args.keep:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if failed:
        print(f"load_balancers_loopback: FAILED: {failed}", file=sys.stderr)
        return 1
    print("load_balancers_loopback: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
