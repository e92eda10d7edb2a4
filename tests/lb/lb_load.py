"""Closed-loop load through a balancer: client threads on keep-alive connections.

Each client posts a small /v1/embeddings request, reads the reply, and posts
the next, until told to stop, its time runs out or it has sent its share of
requests. Any reply but 200, and any error on the connection (reset, closed
without a reply, timeout), is a client-visible failure: counted, with the
first few kept for the report. After an error a client reconnects.
"""

from __future__ import annotations

import collections
import http.client
import threading
import time

BODY = b'{"input": ["a short query that a load balancer passes to one of three replicas"]}'


class Load:
    def __init__(self, port: int, clients: int, max_s: float, max_requests_per_client: int = 200000,
                 host: str = "127.0.0.1", timeout_s: float = 15.0):
        self.port, self.host, self.clients = port, host, clients
        self.max_s, self.max_per_client, self.timeout_s = max_s, max_requests_per_client, timeout_s
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.ok = 0
        self.failures: collections.Counter = collections.Counter()
        self.examples: list[str] = []
        self.max_latency_s = 0.0
        self.threads: list[threading.Thread] = []
        self.t0 = 0.0

    def start(self) -> "Load":
        self.t0 = time.monotonic()
        for i in range(self.clients):
            t = threading.Thread(target=self._client, name=f"client-{i}", daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self) -> None:
        self.stop_event.set()
        for t in self.threads:
            t.join(timeout=self.timeout_s + 5)
        if any(t.is_alive() for t in self.threads):
            raise RuntimeError("a load client did not stop")

    def total(self) -> int:
        with self.lock:
            return self.ok + sum(self.failures.values())

    def _fail(self, kind: str, detail: str) -> None:
        with self.lock:
            self.failures[kind] += 1
            if len(self.examples) < 5:
                self.examples.append(f"t={time.monotonic() - self.t0:.2f}s {kind}: {detail}")

    def _client(self) -> None:
        deadline = self.t0 + self.max_s
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        headers = {"Content-Type": "application/json"}
        try:
            for _ in range(self.max_per_client):
                if self.stop_event.is_set() or time.monotonic() > deadline:
                    return
                start = time.monotonic()
                try:
                    conn.request("POST", "/v1/embeddings", body=BODY, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                except (OSError, http.client.HTTPException) as e:
                    self._fail(type(e).__name__, str(e))
                    conn.close()
                    conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
                    continue
                latency = time.monotonic() - start
                if resp.status == 200:
                    with self.lock:
                        self.ok += 1
                        self.max_latency_s = max(self.max_latency_s, latency)
                else:
                    self._fail(f"HTTP {resp.status}", data[:200].decode("utf-8", "replace"))
        finally:
            conn.close()

    def summary(self) -> dict:
        with self.lock:
            return {"ok": self.ok, "failures": dict(self.failures), "examples": list(self.examples),
                    "max_latency_ms": round(self.max_latency_s * 1000, 1)}
