"""Processes for the load-balancer test: tokenbatch replicas, HAProxy, nginx.

Every process starts in its own session (process group) with its output in a
log file under the test's temporary directory, and is registered with a
`Procs` registry whose `kill_all` SIGKILLs every group still alive, so that a
failing check leaves nothing running. Ports are loopback ports below the
kernel's ephemeral range (checked free by binding), so that no outgoing
connection of the balancers can take a replica's port while it is down.
"""

from __future__ import annotations

import csv
import http.client
import io
import os
import random
import re
import signal
import socket
import subprocess
import time

HOST = "127.0.0.1"
HTTP_REQUESTS_RE = re.compile(r"^tokenbatch_http_requests_total\{([^}]*)\}\s+(\S+)", re.M)
LABEL_RE = re.compile(r'(\w+)="([^"]*)"')


class TestFailure(Exception):
    """A check failed; the message says which and with what measured values."""


def log_tail(path: str, lines: int = 25) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})"


def free_ports(n: int) -> list[int]:
    """`n` distinct free loopback ports below the ephemeral range."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random(os.getpid() ^ time.time_ns())
    ports: list[int] = []
    for _ in range(2000):
        if len(ports) == n:
            return ports
        p = rng.randrange(20000, low) if low > 21000 else 0
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((HOST, p))
            p = s.getsockname()[1]
            if p not in ports:
                ports.append(p)
        except OSError:
            pass
        finally:
            s.close()
    raise TestFailure(f"could not find {n} free loopback ports")


def http_request(port: int, method: str, path: str, body: bytes | None = None,
                 timeout: float = 5.0) -> tuple[int, bytes, dict]:
    """One request on a new connection: (status, body, headers)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def agent_line(port: int, timeout: float = 1.0) -> str:
    """What a HAProxy agent check reads from `port`: one line, or why none."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            data = b""
            while len(data) < 200:
                chunk = s.recv(200)
                if not chunk:
                    break
                data += chunk
            return data.decode("ascii", "replace").strip()
    except ConnectionRefusedError:
        return "(refused)"
    except OSError as e:
        return f"({type(e).__name__})"


class Procs:
    """Every process the test started, killed (whole group) at the end."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.started: list[subprocess.Popen] = []
        self.count = 0

    def log_path(self, name: str) -> str:
        self.count += 1
        return os.path.join(self.workdir, f"{self.count:02d}-{name}.log")

    def spawn(self, cmd: list[str], log_path: str, env: dict | None = None) -> subprocess.Popen:
        with open(log_path, "wb") as logf:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env,
                                 start_new_session=True)
        self.started.append(p)
        return p

    def kill_all(self) -> None:
        for p in self.started:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.started:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


class Replica:
    """One `tokenbatch serve --backend noop` on fixed ports (restartable on them)."""

    def __init__(self, procs: Procs, binary: str, name: str, port: int, agent_port: int,
                 extra: list[str]):
        self.procs, self.binary, self.name = procs, binary, name
        self.port, self.agent_port, self.extra = port, agent_port, extra
        self.proc: subprocess.Popen | None = None
        self.log = ""

    def command(self) -> list[str]:
        return [self.binary, "serve", "--backend", "noop", "--host", HOST, "--port", str(self.port),
                "--lb-agent-port", str(self.agent_port), "--workers", "1", "--noop-hidden", "16",
                "--log-level", "info", *self.extra]

    def start(self) -> None:
        self.log = self.procs.log_path(self.name)
        self.proc = self.procs.spawn(self.command(), self.log)

    def wait_ready(self, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure(f"replica {self.name} exited {self.proc.returncode} at start:\n"
                                  f"{log_tail(self.log)}")
            try:
                if http_request(self.port, "GET", "/health", timeout=1)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise TestFailure(f"replica {self.name} not ready within {timeout_s} s:\n{log_tail(self.log)}")

    def embeddings_served(self) -> int:
        """Replies on /v1/embeddings so far, any status (from /metrics)."""
        status, body, _ = http_request(self.port, "GET", "/metrics")
        if status != 200:
            raise TestFailure(f"replica {self.name}: /metrics answered {status}")
        total = 0
        for m in HTTP_REQUESTS_RE.finditer(body.decode()):
            if dict(LABEL_RE.findall(m.group(1))).get("route") == "/v1/embeddings":
                total += int(float(m.group(2)))
        return total

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait_exit(self, timeout_s: float) -> int:
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"replica {self.name} still running {timeout_s} s after the signal:\n"
                              f"{log_tail(self.log)}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)


def start_replicas(replicas: list[Replica]) -> None:
    for r in replicas:
        r.start()
    for r in replicas:
        r.wait_ready()


class HAProxy:
    """deploy/haproxy.cfg run unchanged, its addresses from TB_* environment variables."""

    def __init__(self, procs: Procs, cfg: str, name: str, front_port: int, stats_port: int,
                 servers: list[tuple[int, int]], balance: str | None = None):
        self.procs, self.cfg, self.name = procs, cfg, name
        self.front_port, self.stats_port = front_port, stats_port
        self.env = dict(os.environ)
        self.env.pop("TB_LB_BALANCE", None)
        if balance:  # else the file's default
            self.env["TB_LB_BALANCE"] = balance
        self.env["TB_LB_BIND"] = f"{HOST}:{front_port}"
        self.env["TB_LB_STATS_BIND"] = f"{HOST}:{stats_port}"
        for i, (port, agent_port) in enumerate(servers, 1):
            self.env[f"TB_REPLICA{i}_ADDR"] = f"{HOST}:{port}"
            self.env[f"TB_REPLICA{i}_AGENT_PORT"] = str(agent_port)
        self.proc: subprocess.Popen | None = None
        self.log = ""

    def start(self) -> None:
        self.log = self.procs.log_path(self.name)
        self.proc = self.procs.spawn(["haproxy", "-db", "-f", self.cfg], self.log, env=self.env)

    def stats(self) -> list[dict]:
        status, body, _ = http_request(self.stats_port, "GET", "/stats;csv", timeout=2)
        if status != 200:
            raise TestFailure(f"{self.name}: stats answered {status}")
        text = body.decode()
        return list(csv.DictReader(io.StringIO(text[2:] if text.startswith("# ") else text)))

    def server_rows(self) -> dict[str, dict]:
        return {r["svname"]: r for r in self.stats() if r["pxname"] == "tokenbatch"}

    def wait_servers(self, want_agent: bool, timeout_s: float = 15) -> dict[str, dict]:
        """Waits until r1..r3 are UP (and, with `want_agent`, their agents answered)."""
        deadline = time.monotonic() + timeout_s
        rows: dict[str, dict] = {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure(f"{self.name} exited {self.proc.returncode}:\n{log_tail(self.log)}")
            try:
                rows = self.server_rows()
            except (OSError, TestFailure):
                rows = {}
            servers = [rows.get(f"r{i}") for i in (1, 2, 3)]
            if all(s and s["status"] == "UP" and (s["agent_status"].startswith("L7OK") if want_agent
                                                 else s["agent_status"] != "")
                   for s in servers):
                return rows
            time.sleep(0.1)
        raise TestFailure(f"{self.name}: servers not all UP within {timeout_s} s: "
                          f"{[(k, v['status'], v['agent_status']) for k, v in rows.items()]}\n"
                          f"{log_tail(self.log)}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


class Nginx:
    """deploy/nginx.conf with its listen and server addresses replaced, under a prefix."""

    DEFAULT_LISTEN = "listen 127.0.0.1:8080;"
    DEFAULT_SERVERS = ["server 127.0.0.1:8081 ", "server 127.0.0.1:8082 ", "server 127.0.0.1:8083 "]

    def __init__(self, procs: Procs, conf_src: str, prefix: str, front_port: int, ports: list[int]):
        self.procs, self.prefix, self.front_port = procs, prefix, front_port
        with open(conf_src) as f:
            text = f.read()
        subs = [(self.DEFAULT_LISTEN, f"listen {HOST}:{front_port};")]
        subs += [(old, f"server {HOST}:{p} ") for old, p in zip(self.DEFAULT_SERVERS, ports)]
        for old, new in subs:
            if text.count(old) != 1:
                raise TestFailure(f"{conf_src}: expected exactly one '{old.strip()}' to replace "
                                  f"(found {text.count(old)}); keep the test's placeholders in step")
            text = text.replace(old, new)
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        # As root, nginx's workers run as nobody: they must reach the temp dirs
        # (mkdtemp makes the test's directory 0700).
        os.chmod(os.path.dirname(os.path.abspath(prefix)), 0o755)
        os.chmod(prefix, 0o755)
        self.conf = os.path.join(prefix, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(text)
        self.access_log = os.path.join(prefix, "logs", "access.log")
        self.error_log = os.path.join(prefix, "logs", "error.log")
        self.proc: subprocess.Popen | None = None
        self.log = ""

    def start(self, timeout_s: float = 15) -> None:
        self.log = self.procs.log_path("nginx")
        self.proc = self.procs.spawn(["nginx", "-p", self.prefix + "/", "-c", self.conf,
                                      "-g", "daemon off;"], self.log)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure(f"nginx exited {self.proc.returncode}:\n{log_tail(self.log)}\n"
                                  f"{log_tail(self.error_log)}")
            try:
                with socket.create_connection((HOST, self.front_port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise TestFailure(f"nginx not listening within {timeout_s} s:\n{log_tail(self.error_log)}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
