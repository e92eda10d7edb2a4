#!/usr/bin/env python3
"""Scale-out: 1, 2 and 3 `tokenbatch serve --backend noop` replicas behind HAProxy and nginx (#19).

    python3 -m bench.scale.run_scale [--binary build/src/cli/tokenbatch] [--out build/scale/scale.json]
    python3 bench/scale/plot_scale.py build/scale/scale.json docs/plots

Each replica sleeps --delay-us per batch (the noop backend's --noop-delay-us, a
stand-in for a GPU's forward) and takes at most --batch-requests inputs per
batch (the token budget is set high enough never to bind), so one replica
serves at most batch-requests / delay inputs per second however fast the CPU
is. One request is one input, so requests/s are inputs/s. The replicas run
with --workers 1 and the load-balancer agent on (--lb-agent-port).

The balancers are the real /usr/sbin/haproxy and nginx with deploy/haproxy.cfg
and deploy/nginx.conf rendered for loopback as tests/lb/ does (HAProxy's
addresses from its TB_* environment variables; nginx's listen and server lines
replaced, run under a temporary prefix). Per point only what the point needs
is changed in a temporary copy, by exact-string substitution that fails when
the line is not found exactly once:

  haproxy-rr             deploy/haproxy.cfg with `balance roundrobin`,
                         agent ports pointed at ports where nothing listens
                         (HAProxy then keeps every weight at 100)
  haproxy-leastconn      `balance leastconn`, agents unreachable as above
  haproxy-rr-agent       `balance roundrobin`, agents on: weights from the replicas' queues
  haproxy-leastconn-agent  as shipped (`balance leastconn`), agents on
  nginx-rr               deploy/nginx.conf without its `least_conn;` line
  nginx-leastconn        deploy/nginx.conf as shipped (least_conn)
  direct                 no balancer: the client talks to replica 1 (1 replica only)

With fewer than three replicas the server lines of the missing ones are removed.

Load: bench/peers/load_client.py on the seed mix (`tokenbatch simulate --mix
seed --save-workload`: short queries and long passages, classes "short" and
"long"), build/peers-venv/bin/python (uvloop) when it has uvloop, else python3.
Per point --warmup seconds uncounted, then --duration measured:

  closed   --conns-per-replica x replicas connections, each sending its next
           request when the reply arrives: the throughput (capacity) figure;
  open     Poisson arrivals at --load-fraction x replicas x the direct
           one-replica closed-loop throughput measured first in the same run
           (the same offered rate for every balancer at a replica count): the
           short and long requests' latency percentiles.

Before that, the ceiling of client + balancer + replicas on this machine: the
same closed loop against replicas that do not sleep (--noop-delay-us 0),
direct and through each balancer at 3 replicas.

Then the slow-replica case: 3 replicas, replica 1 sleeping --slow-factor x the
delay per batch; its own closed-loop throughput is measured direct; then
each HAProxy policy and nginx least_conn, closed and open loop (the open rate:
--load-fraction x the three replicas' measured capacities summed), with each
replica's share of the requests (from its /metrics, warm-up included).

For every measured window the CPU time of the replicas, the balancer, the
client and the whole machine is read from /proc (in cores busy).

Prints the JSON summary and writes it to --out. Standard library only; every
process is started in its own process group and killed at the end (also on
failure or a signal); the temporary directory is removed unless --keep.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from bench.harness import http_client, processes
from bench.harness.balancers import HAProxy, Nginx
from bench.harness.cpu import CpuWindow
from bench.harness.ports import HOST, free_ports
from bench.harness.processes import HarnessError, Registry
from bench.harness.replica import Replica, start_replicas

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAPROXY_CFG = os.path.join(ROOT, "deploy", "haproxy.cfg")
NGINX_CONF = os.path.join(ROOT, "deploy", "nginx.conf")
HOMOGENEOUS = ["haproxy-rr", "haproxy-leastconn", "haproxy-rr-agent", "haproxy-leastconn-agent", "nginx-rr",
               "nginx-leastconn"]
SLOW_CASE = ["haproxy-rr", "haproxy-leastconn", "haproxy-rr-agent", "haproxy-leastconn-agent",
             "nginx-leastconn"]


def log(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- rendering

def replace_once(text: str, old: str, new: str, src: str) -> str:
    n = text.count(old)
    if n != 1:
        raise HarnessError(f"{src}: expected exactly one {old.strip()!r} (found {n})")
    return text.replace(old, new)


def remove_line(text: str, pattern: str, src: str) -> str:
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if re.match(pattern, line)]
    if len(hits) != 1:
        raise HarnessError(f"{src}: expected exactly one line matching {pattern!r} (found {len(hits)})")
    del lines[hits[0]]
    return "".join(lines)


def render_haproxy(workdir: str, name: str, replicas: int, leastconn: bool) -> str:
    with open(HAPROXY_CFG) as f:
        text = f.read()
    text = replace_once(text, '    balance "${TB_LB_BALANCE-leastconn}"\n',
                        "    balance leastconn\n" if leastconn else "    balance roundrobin\n", HAPROXY_CFG)
    for i in range(replicas + 1, 4):
        text = remove_line(text, rf"\s*server r{i}\s", HAPROXY_CFG)
    path = os.path.join(workdir, f"{name}-{replicas}.cfg")
    with open(path, "w") as f:
        f.write(text)
    return path


def render_nginx(workdir: str, name: str, replicas: int, leastconn: bool) -> str:
    """A copy of deploy/nginx.conf that bench.harness.balancers.Nginx then gives its addresses."""
    with open(NGINX_CONF) as f:
        text = f.read()
    if not leastconn:
        text = remove_line(text, r"\s*least_conn;\s*$", NGINX_CONF)
    for i in range(replicas + 1, 4):
        text = remove_line(text, rf"\s*server 127\.0\.0\.1:808{i}\s", NGINX_CONF)
    path = os.path.join(workdir, f"{name}-{replicas}.conf.src")
    with open(path, "w") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------- balancers

class Balancer:
    """One balancer (or none: direct) in front of the first `n` replicas."""

    def __init__(self, args, procs: Registry, workdir: str, config: str, replicas: list[Replica]):
        self.config, self.replicas = config, replicas
        self.hx: HAProxy | None = None
        self.ng: Nginx | None = None
        n = len(replicas)
        if config == "direct":
            self.port = replicas[0].port
            self.pids: list[int] = []
            return
        if config.startswith("haproxy-"):
            agent = config.endswith("-agent")
            cfg = render_haproxy(workdir, config, n, leastconn="leastconn" in config)
            ports = free_ports(2 + n)
            agent_ports = [r.agent_port for r in replicas] if agent else ports[2:]
            self.hx = HAProxy(procs, cfg, f"{config}-{n}", ports[0], ports[1],
                              [(r.port, a) for r, a in zip(replicas, agent_ports)])
            self.agent = agent
            self.port = ports[0]
        elif config.startswith("nginx-"):
            src = render_nginx(workdir, config, n, leastconn=config == "nginx-leastconn")
            prefix = os.path.join(workdir, f"{config}-{n}-prefix")
            self.port = free_ports(1)[0]
            self.ng = Nginx(procs, src, prefix, self.port, [r.port for r in replicas])
        else:
            raise ValueError(config)

    def start(self) -> None:
        if self.hx is not None:
            self.hx.start()
            self.pids = [self.hx.proc.pid]
            self.hx.wait_servers(want_agent=self.agent)
        elif self.ng is not None:
            self.ng.start()
            self.pids = [self.ng.proc.pid]
        # One request through it before the load starts.
        deadline = time.monotonic() + 10
        while True:
            try:
                st = http_client.request(self.port, "POST", "/v1/embeddings", b'{"input": "ready?"}', timeout=3)[0]
                if st == 200:
                    return
            except OSError as e:
                st = repr(e)
            if time.monotonic() > deadline:
                raise HarnessError(f"{self.config}: first request answered {st}")
            time.sleep(0.1)

    def weights(self) -> list[int] | None:
        if self.hx is None:
            return None
        try:
            rows = self.hx.server_rows()
            return [int(rows[f"r{i + 1}"]["weight"]) for i in range(len(self.replicas))]
        except (OSError, HarnessError, KeyError, ValueError):
            return None

    def stop(self) -> None:
        for b in (self.hx, self.ng):
            if b is not None:
                b.stop()


# ---------------------------------------------------------------- load

class Runner:
    def __init__(self, args, procs: Registry, workload: str, python: str):
        self.args, self.procs, self.workload, self.python = args, procs, workload, python
        self.client: subprocess.Popen | None = None

    def load(self, bal: Balancer, mode: str, rate: float = 0.0, connections: int = 0) -> dict:
        a = self.args
        cmd = [self.python, "-m", "bench.peers.load_client", self.workload,
               "--url", f"http://{HOST}:{bal.port}/v1/embeddings", "--model", "noop", "--warmup", str(a.warmup), "--duration", str(a.duration), "--no-parse",
               "--seed", str(a.seed)]
        if mode == "closed":
            cmd += ["--connections", str(connections)]
        else:
            cmd += ["--rate", f"{rate:.1f}", "--connections", str(a.open_connections),
                    "--max-outstanding", str(a.max_outstanding)]
        for p in bal.pids:
            cmd += ["--server-pid", str(p)]
        before = [r.embeddings_served() for r in bal.replicas]
        groups = {"replicas": [r.proc.pid for r in bal.replicas], "balancer": list(bal.pids)}
        self.client = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT)
        groups["client"] = [self.client.pid]
        cpu = CpuWindow(groups)
        # The client's window opens about warm-up + its start-up after launch.
        th = threading.Thread(target=cpu.run, args=(a.warmup + 0.4, a.duration - 0.8), daemon=True)
        th.start()
        weights: list[list[int]] = []
        t_end = time.monotonic() + a.warmup + a.duration + 120
        while self.client.poll() is None:
            if time.monotonic() > t_end:
                processes.kill(self.client, group=True)
                raise HarnessError(f"load client did not finish: {' '.join(cmd)}")
            if bal.hx is not None:
                w = bal.weights()
                if w:
                    weights.append(w)
            time.sleep(0.25)
        out, err = self.client.communicate()
        th.join(timeout=5)
        if self.client.returncode != 0:
            raise HarnessError(f"load client exited {self.client.returncode}: {err[-2000:]}")
        self.client = None
        rep = json.loads(out)
        after = [r.embeddings_served() for r in bal.replicas]
        served = [x - y for x, y in zip(after, before)]
        total = sum(served)
        lat = rep["latency"]

        def pick(d):
            return {k: d[k] for k in ("count", "p50_ms", "p90_ms", "p99_ms", "max_ms") if k in d}

        res = {
            "mode": mode, "connections": connections if mode == "closed" else a.open_connections,
            "offered_per_s": round(rate, 1) if mode == "open" else None,
            "inputs_per_s": rep["requests_per_s"], "completed": rep["completed"],
            "errors": rep["errors"], "error_count": rep["error_count"], "dropped": rep["dropped"],
            "latency_ms": {c: pick(lat[c]) for c in ("short", "long", "overall")},
            "client_cpu_s": rep["client_cpu_s"], "balancer_cpu_s": rep.get("server_cpu_s"),
            "cpu": cpu.result, "event_loop": rep["event_loop"],
            "replica_shares": [round(s / total, 3) if total else None for s in served],
            "replica_requests": served,
        }
        if weights:
            ws = list(zip(*weights))
            res["haproxy_weights_min_median_max"] = [[min(w), sorted(w)[len(w) // 2], max(w)] for w in ws]
        sl = res["latency_ms"]["short"]
        log(f"  {bal.config} x{len(bal.replicas)} {mode}: {res['inputs_per_s']} inputs/s"
            f"{'' if mode == 'closed' else f' (offered {rate:.0f})'}, short p50/p99 "
            f"{sl.get('p50_ms')}/{sl.get('p99_ms')} ms, errors {res['error_count']}, dropped {res['dropped']}, "
            f"shares {res['replica_shares']}, cpu {cpu.result}")
        return res

    def kill_client(self) -> None:
        if self.client is not None:
            processes.kill(self.client, group=True)


def replica_flags(args, delay_us: int) -> list[str]:
    return ["--noop-delay-us", str(delay_us), "--max-batch-requests", str(args.batch_requests),
            "--cost-model", "sum", "--max-batch-tokens", str(args.batch_tokens),
            "--min-padding-efficiency", "0", "--max-concurrent-requests", "8192",
            "--max-queue-size", "0"]


def start_set(args, procs, binary, tag: str, delays: list[int]) -> list[Replica]:
    ports = free_ports(2 * len(delays))
    reps = [Replica(procs, binary, f"{tag}-r{i + 1}", ports[i], ports[len(delays) + i], replica_flags(args, d))
            for i, d in enumerate(delays)]
    start_replicas(reps)
    return reps


def stop_set(reps: list[Replica]) -> None:
    for r in reps:
        r.stop()


def with_balancer(args, procs, workdir, config, reps, fn):
    bal = Balancer(args, procs, workdir, config, reps)
    bal.start()
    try:
        return fn(bal)
    finally:
        bal.stop()


def machine_info(python: str) -> dict:
    info = {"nproc": os.cpu_count(), "kernel": platform.release(), "python_client": python}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            info["cpu"] = m.group(1).strip() if m else None
    except OSError:
        pass
    for name, cmd in (("haproxy", ["haproxy", "-v"]), ("nginx", ["nginx", "-v"])):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            info[name] = (p.stdout + p.stderr).splitlines()[0].strip()
        except (OSError, IndexError, subprocess.TimeoutExpired):
            info[name] = None
    try:
        with open("/proc/loadavg") as f:
            info["loadavg_at_start"] = f.read().split()[:3]
    except OSError:
        pass
    return info


def pick_python() -> str:
    venv = os.path.join(ROOT, "build", "peers-venv", "bin", "python")
    if os.path.exists(venv):
        if subprocess.run([venv, "-c", "import uvloop"], capture_output=True).returncode == 0:
            return venv
    return sys.executable or "python3"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "src", "cli", "tokenbatch"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "scale", "scale.json"))
    ap.add_argument("--delay-us", type=int, default=20000, help="noop sleep per batch")
    ap.add_argument("--batch-requests", type=int, default=8, help="most inputs per batch")
    ap.add_argument("--batch-tokens", type=int, default=16384,
                    help="token budget per batch (sum cost), set so that it never binds before --batch-requests")
    ap.add_argument("--slow-factor", type=float, default=3.0, help="slow replica's delay multiple")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--conns-per-replica", type=int, default=32, help="closed loop connections per replica")
    ap.add_argument("--load-fraction", type=float, default=0.7, help="open loop: share of measured capacity")
    ap.add_argument("--open-connections", type=int, default=64, help="open loop: connections opened up front")
    ap.add_argument("--max-outstanding", type=int, default=4000, help="open loop: cap on requests in flight")
    ap.add_argument("--replicas", default="1,2,3")
    ap.add_argument("--configs", default=",".join(HOMOGENEOUS))
    ap.add_argument("--slow-configs", default=",".join(SLOW_CASE))
    ap.add_argument("--skip", default="", help="comma list of phases to skip: ceiling, main, slow")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, configs)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    counts = [int(x) for x in args.replicas.split(",")]
    configs = [c for c in args.configs.split(",") if c]
    slow_configs = [c for c in args.slow_configs.split(",") if c]

    t_start = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="tb-scale-")
    procs = Registry(workdir)
    python = pick_python()
    runner = Runner(args, procs, os.path.join(workdir, "seed.jsonl"), python)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    summary: dict = {
        "started_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(["python3 -m bench.scale.run_scale"] + sys.argv[1:]),
        "machine": machine_info(python),
        "settings": {k: v for k, v in vars(args).items() if k not in ("keep",)},
    }
    rc = 0
    try:
        # A copy of the binary: a rebuild during the run must not change what runs.
        binary = os.path.join(workdir, "tokenbatch")
        shutil.copy2(args.binary, binary)
        summary["settings"]["binary_mtime_utc"] = datetime.datetime.fromtimestamp(
            os.path.getmtime(args.binary), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        summary["settings"]["replica_command"] = " ".join(
            Replica(procs, "tokenbatch", "x", 0, 0, replica_flags(args, args.delay_us)).command()).replace(
            "--port 0 --lb-agent-port 0", "--port P --lb-agent-port A")
        subprocess.run([binary, "simulate", "--mix", "seed", "--save-workload", runner.workload,
                        "--policies", "fixed-32", "--no-progress"], check=True, capture_output=True)
        summary["workload"] = workload_info(runner.workload)
        per = args.conns_per_replica

        if "ceiling" not in skip:
            log("ceiling: replicas without the sleep")
            reps = start_set(args, procs, binary, "ceil", [0, 0, 0])
            ceil = []
            try:
                for config, n in [("direct", 1), ("haproxy-rr", 3), ("nginx-rr", 3)]:
                    r = with_balancer(args, procs, workdir, config, reps[:n],
                                      lambda b, n=n: runner.load(b, "closed", connections=per * n))
                    ceil.append({"config": config, "replicas": n, "closed": r})
            finally:
                stop_set(reps)
            summary["ceiling"] = ceil

        if "main" not in skip:
            log(f"main: replicas sleeping {args.delay_us} us per batch of <= {args.batch_requests}")
            reps = start_set(args, procs, binary, "main", [args.delay_us] * max(counts))
            points = []
            try:
                c1 = with_balancer(args, procs, workdir, "direct", reps[:1],
                                   lambda b: runner.load(b, "closed", connections=per))
                cap1 = c1["inputs_per_s"]
                summary["capacity_1_replica"] = cap1
                rate1 = args.load_fraction * cap1
                o1 = with_balancer(args, procs, workdir, "direct", reps[:1],
                                   lambda b: runner.load(b, "open", rate=rate1))
                points.append({"config": "direct", "replicas": 1, "closed": c1, "open": o1})
                for n in counts:
                    for config in configs:
                        def both(b, n=n):
                            c = runner.load(b, "closed", connections=per * n)
                            o = runner.load(b, "open", rate=args.load_fraction * n * cap1)
                            return c, o
                        c, o = with_balancer(args, procs, workdir, config, reps[:n], both)
                        points.append({"config": config, "replicas": n, "closed": c, "open": o,
                                       "scaling_vs_direct_1": round(c["inputs_per_s"] / cap1, 3)})
            finally:
                stop_set(reps)
            summary["points"] = points

        if "slow" not in skip:
            slow_us = int(args.delay_us * args.slow_factor)
            log(f"slow case: replica 1 sleeps {slow_us} us, replicas 2-3 {args.delay_us} us")
            reps = start_set(args, procs, binary, "slow", [slow_us, args.delay_us, args.delay_us])
            cases = []
            try:
                caps = []
                for i in (0, 1):
                    c = with_balancer(args, procs, workdir, "direct", [reps[i]],
                                      lambda b: runner.load(b, "closed", connections=per))
                    caps.append(c["inputs_per_s"])
                capacity = caps[0] + 2 * caps[1]
                rate = args.load_fraction * capacity
                for config in slow_configs:
                    def both(b):
                        return runner.load(b, "closed", connections=per * 3), runner.load(b, "open", rate=rate)
                    c, o = with_balancer(args, procs, workdir, config, reps, both)
                    cases.append({"config": config, "replicas": 3, "closed": c, "open": o,
                                  "closed_vs_capacity": round(c["inputs_per_s"] / capacity, 3)})
            finally:
                stop_set(reps)
            summary["slow_case"] = {"slow_delay_us": slow_us, "slow_replica_capacity": caps[0],
                                    "fast_replica_capacity": caps[1], "capacity_sum": round(capacity, 1),
                                    "open_rate": round(rate, 1), "cases": cases}
    except HarnessError as e:
        log(f"FAILED: {e}")
        summary["failure"] = str(e)
        rc = 1
    finally:
        runner.kill_client()
        procs.kill_all()
        summary["elapsed_s"] = round(time.monotonic() - t_start, 1)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
        print(json.dumps(summary, indent=1))
        if args.keep or rc:
            log(f"logs and configs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return rc


def workload_info(path: str) -> dict:
    n = {"short": 0, "long": 0}
    tok = {"short": 0, "long": 0}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            n[r["class"]] += 1
            tok[r["class"]] += int(r["tokens"])
    return {"requests": sum(n.values()), **{f"{c}_requests": n[c] for c in n},
            **{f"{c}_mean_tokens": round(tok[c] / n[c], 1) for c in n if n[c]}}


if __name__ == "__main__":
    sys.exit(main())
