"""Starting and stopping `tokenbatch serve` from the Python tests.

    with Serving(binary, ["--backend", "noop", ...]) as port:
        ... talk to http://127.0.0.1:{port} ...

Picks a free loopback port, waits for /health, and on exit sends SIGTERM and
checks that the server exited 0 (a clean drain). Requests to loopback must not go
through a proxy from the environment, so NO_PROXY is set for the process.
"""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, server, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass  # not up yet
        time.sleep(0.05)
    raise AssertionError("server did not become healthy")


def post_json(port, path, body, timeout=300):
    """POSTs `body` as JSON; returns (status, parsed reply)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


class Serving:
    def __init__(self, binary, args):
        self.binary, self.args = binary, args

    def __enter__(self):
        self.port = free_port()
        self.server = subprocess.Popen([self.binary, "serve", "--port", str(self.port), *self.args],
                                       stdin=subprocess.DEVNULL)
        try:
            wait_healthy(self.port, self.server)
        except BaseException:
            self.server.kill()
            self.server.wait()
            raise
        return self.port

    def __exit__(self, kind, value, traceback):
        if self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
        try:
            code = self.server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.server.kill()
            raise
        if kind is None:
            assert code == 0, f"server must exit 0 after SIGTERM, got {code}"
        return False
