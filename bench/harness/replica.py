"""`tokenbatch serve --backend noop` replicas on fixed loopback ports, for load-balancer runs.

A replica keeps its ports across restarts (a balancer's configuration names
them), serves /v1/embeddings with a 16-wide no-op model on one worker, and runs
the HAProxy agent (--lb-agent-port). Its output goes to a numbered log of the
run's `processes.Registry`.
"""

from __future__ import annotations

import socket
import subprocess

from bench.harness import http_client, processes, prometheus
from bench.harness.ports import HOST
from bench.harness.processes import HarnessError


class Replica:
    """One `tokenbatch serve --backend noop` on `port` with its agent on `agent_port`; `extra` flags appended."""

    def __init__(self, procs: processes.Registry, binary: str, name: str, port: int, agent_port: int,
                 extra: list[str]):
        self.procs, self.binary, self.name = procs, binary, name
        self.port, self.agent_port, self.extra = port, agent_port, extra
        self.proc: subprocess.Popen | None = None
        self.log = ""

    def command(self) -> list[str]:
        """The replica's command line."""
        return [self.binary, "serve", "--backend", "noop", "--host", HOST, "--port", str(self.port),
                "--lb-agent-port", str(self.agent_port), "--workers", "1", "--noop-hidden", "16",
                "--log-level", "info", *self.extra]

    def start(self) -> None:
        """Starts the replica (again, after a stop) with a new log; does not wait. Raises OSError."""
        self.log = self.procs.log_path(self.name)
        self.proc = self.procs.spawn(self.command(), self.log)

    def _healthy(self) -> bool:
        try:
            return http_client.request(self.port, "GET", "/health", timeout=1)[0] == 200
        except OSError:
            return False

    def wait_ready(self, timeout_s: float = 30) -> None:
        """Waits until GET /health answers 200. Raises HarnessError (with the log's tail)
        when the replica exits first or is not ready within `timeout_s` seconds."""
        try:
            ready = processes.wait_until(self.proc, self._healthy, timeout_s)
        except processes.ProcessExited as e:
            raise HarnessError(f"replica {self.name} exited {e.returncode} at start:\n"
                               f"{processes.log_tail(self.log)}") from None
        if not ready:
            raise HarnessError(f"replica {self.name} not ready within {timeout_s} s:\n"
                               f"{processes.log_tail(self.log)}")

    def embeddings_served(self) -> int:
        """Replies on /v1/embeddings so far, any status (tokenbatch_http_requests_total from /metrics).

        Raises HarnessError when /metrics does not answer 200, OSError when it cannot be reached.
        """
        status, body, _ = http_client.request(self.port, "GET", "/metrics")
        if status != 200:
            raise HarnessError(f"replica {self.name}: /metrics answered {status}")
        m = prometheus.parse(body.decode())
        return sum(int(v) for labels, v in prometheus.series(m, "tokenbatch_http_requests_total").items()
                   if dict(labels).get("route") == "/v1/embeddings")

    def signal(self, sig: int) -> None:
        """Sends `sig` to the replica's process (not its group)."""
        self.proc.send_signal(sig)

    def wait_exit(self, timeout_s: float) -> int:
        """The replica's exit status, waited for up to `timeout_s` seconds; HarnessError if it still runs."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"replica {self.name} still running {timeout_s} s after the signal:\n"
                               f"{processes.log_tail(self.log)}") from None

    def stop(self) -> None:
        """SIGKILLs the replica's process group if it runs, and reaps it (up to 10 s)."""
        if self.proc is not None:
            processes.kill(self.proc, group=True)


def start_replicas(replicas: list[Replica]) -> None:
    """Starts every replica, then waits for each to be ready (see Replica.wait_ready)."""
    for r in replicas:
        r.start()
    for r in replicas:
        r.wait_ready()


def agent_line(port: int, timeout: float = 1.0) -> str:
    """What a HAProxy agent check reads from the agent on `port`: its line (stripped), or why none, in parentheses."""
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
