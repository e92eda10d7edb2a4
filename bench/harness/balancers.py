"""HAProxy and nginx in front of replicas on loopback, with the shipped configurations.

HAProxy runs deploy/haproxy.cfg (or a rendered copy of it) unchanged, its
addresses given by the TB_* environment variables the file reads. nginx runs
deploy/nginx.conf (or a copy) with its listen and server addresses replaced,
under a temporary prefix. Both run in the foreground in their own process
group, registered with the run's `processes.Registry`.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess

from bench.harness import http_client, processes
from bench.harness.ports import HOST, accepts
from bench.harness.processes import HarnessError


class HAProxy:
    """deploy/haproxy.cfg (`cfg`) run unchanged, its addresses from TB_* environment variables.

    `servers` lists (port, agent port) of replicas r1, r2, ... ; `balance`
    sets TB_LB_BALANCE (None: the file's default).
    """

    def __init__(self, procs: processes.Registry, cfg: str, name: str, front_port: int, stats_port: int,
                 servers: list[tuple[int, int]], balance: str | None = None):
        self.procs, self.cfg, self.name = procs, cfg, name
        self.front_port, self.stats_port = front_port, stats_port
        self.servers = len(servers)
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
        """Starts `haproxy -db -f CFG`; does not wait (see wait_servers). Raises OSError."""
        self.log = self.procs.log_path(self.name)
        self.proc = self.procs.spawn(["haproxy", "-db", "-f", self.cfg], self.log, env=self.env)

    def stats(self) -> list[dict]:
        """Every row of the stats page's CSV. Raises HarnessError for a status other than 200, OSError."""
        status, body, _ = http_client.request(self.stats_port, "GET", "/stats;csv", timeout=2)
        if status != 200:
            raise HarnessError(f"{self.name}: stats answered {status}")
        text = body.decode()
        return list(csv.DictReader(io.StringIO(text[2:] if text.startswith("# ") else text)))

    def server_rows(self) -> dict[str, dict]:
        """The stats rows of the `tokenbatch` backend by server name (r1, r2, ..., BACKEND)."""
        return {r["svname"]: r for r in self.stats() if r["pxname"] == "tokenbatch"}

    def wait_servers(self, want_agent: bool, timeout_s: float = 15) -> dict[str, dict]:
        """Waits until every server r1..rN is UP and, with `want_agent`, its agent answered (L7OK);
        without, until the agent check has a status at all. Returns the backend's rows.

        Raises HarnessError (with HAProxy's log tail) when HAProxy exits or the
        servers are not all up within `timeout_s` seconds.
        """
        names = [f"r{i}" for i in range(1, self.servers + 1)]
        last: dict[str, dict] = {}

        def up():
            try:
                rows = self.server_rows()
            except (OSError, HarnessError):
                rows = {}
            last.clear()
            last.update(rows)
            servers = [rows.get(n) for n in names]
            return rows if all(s and s["status"] == "UP" and (s["agent_status"].startswith("L7OK") if want_agent
                                                                else s["agent_status"] != "")
                               for s in servers) else None

        try:
            rows = processes.wait_until(self.proc, up, timeout_s, poll_s=0.1)
        except processes.ProcessExited as e:
            raise HarnessError(f"{self.name} exited {e.returncode}:\n{processes.log_tail(self.log)}") from None
        if rows is None:
            raise HarnessError(f"{self.name}: servers not all UP within {timeout_s} s: "
                               f"{[(k, v.get('status'), v.get('agent_status')) for k, v in last.items()]}\n"
                               f"{processes.log_tail(self.log)}")
        return rows

    def stop(self) -> None:
        """SIGKILLs HAProxy's process group if it runs, and reaps it (up to 10 s)."""
        if self.proc is not None:
            processes.kill(self.proc, group=True)


class Nginx:
    """deploy/nginx.conf (`conf_src`) with its listen and server addresses replaced, under `prefix`.

    The listen line becomes `front_port` and the first len(`ports`) server
    lines the replicas' ports. Raises HarnessError when a placeholder is not
    found exactly once, so that the file and this class stay in step.
    """

    DEFAULT_LISTEN = "listen 127.0.0.1:8080;"
    DEFAULT_SERVERS = ["server 127.0.0.1:8081 ", "server 127.0.0.1:8082 ", "server 127.0.0.1:8083 "]

    def __init__(self, procs: processes.Registry, conf_src: str, prefix: str, front_port: int, ports: list[int]):
        self.procs, self.prefix, self.front_port = procs, prefix, front_port
        with open(conf_src) as f:
            text = f.read()
        subs = [(self.DEFAULT_LISTEN, f"listen {HOST}:{front_port};")]
        subs += [(old, f"server {HOST}:{p} ") for old, p in zip(self.DEFAULT_SERVERS, ports)]
        for old, new in subs:
            if text.count(old) != 1:
                raise HarnessError(f"{conf_src}: expected exactly one '{old.strip()}' to replace "
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
        """Starts nginx in the foreground and waits until its front port accepts connections.

        Raises HarnessError (with nginx's logs) when it exits or does not listen
        within `timeout_s` seconds, OSError when it cannot be run.
        """
        self.log = self.procs.log_path("nginx")
        self.proc = self.procs.spawn(["nginx", "-p", self.prefix + "/", "-c", self.conf,
                                      "-g", "daemon off;"], self.log)
        try:
            listening = processes.wait_until(self.proc, lambda: accepts(self.front_port), timeout_s)
        except processes.ProcessExited as e:
            raise HarnessError(f"nginx exited {e.returncode}:\n{processes.log_tail(self.log)}\n"
                               f"{processes.log_tail(self.error_log)}") from None
        if not listening:
            raise HarnessError(f"nginx not listening within {timeout_s} s:\n{processes.log_tail(self.error_log)}")

    def stop(self) -> None:
        """SIGKILLs nginx's process group (master and workers) if it runs, and reaps it (up to 10 s)."""
        if self.proc is not None:
            processes.kill(self.proc, group=True)
