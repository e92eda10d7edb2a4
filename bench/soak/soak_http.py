"""Raw HTTP/1.1 client for the soak (bench/soak/soak.py): strict response framing.

`Conn` is one keep-alive connection with one request outstanding at a time; it
reports framing errors, bytes after a complete response and bytes on an idle
connection to its owner's violation list. `Pool` keeps idle connections,
`build_request` writes a request, `now` is the clock every module uses. The
owner is the soak's client, seen only through `ConnOwner`, so that this module
needs nothing of the modules above it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


def now() -> float:
    return time.monotonic()


class ConnOwner(Protocol):
    """What connections report to and open new connections with (the soak's Client)."""

    open_conns: int

    def violation(self, kind: str, rid: str, detail: str) -> None: ...

    async def connect(self) -> Conn: ...


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: dict[str, list[str]], body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> str | None:
        v = self.headers.get(name)
        return v[0] if v else None


class NoResponse(Exception):
    """The connection ended before a complete response; `received` bytes of one came."""

    def __init__(self, kind: str, received: int, detail: str = ""):
        super().__init__(f"{kind} after {received} response bytes {detail}".strip())
        self.kind = kind
        self.received = received
        self.detail = detail


class Conn(asyncio.Protocol):
    """One HTTP/1.1 client connection, one request at a time, strict framing.

    Bytes after a complete response, or bytes while no request is outstanding,
    are protocol violations (a duplicate or stray reply) and are reported to
    the owner's violation list.
    """

    def __init__(self, client: ConnOwner):
        self.client = client
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.pending: asyncio.Future | None = None
        self.pending_rid = ""
        self.last_rid = ""
        self.head: tuple[int, dict[str, list[str]], int] | None = None
        self.received = 0
        self.closed = False
        self.reusable = True
        self.abandoned = False  # a deliberate disconnect: whatever comes is ignored
        self.last_used = now()

    # asyncio callbacks
    def connection_made(self, transport):
        self.transport = transport
        self.client.open_conns += 1

    def data_received(self, data: bytes):
        if self.abandoned:
            self.received += len(data)
            return
        if self.pending is None or self.pending.done():
            self.client.violation(
                "duplicate", self.last_rid, f"{len(data)} unsolicited bytes on an idle connection: {bytes(data[:120])!r}"
            )
            self.reusable = False
            self.close()
            return
        self.buf += data
        self.received += len(data)
        try:
            self._parse()
        except ValueError as e:
            self.client.violation("framing", self.pending_rid, str(e))
            self.reusable = False
            if not self.pending.done():
                self.pending.set_exception(NoResponse("malformed", self.received, str(e)))
            self.close()

    def eof_received(self):
        return False  # close the transport

    def connection_lost(self, exc):
        self.closed = True
        self.client.open_conns -= 1
        if self.pending is not None and not self.pending.done():
            kind = "reset" if isinstance(exc, ConnectionResetError) else "closed"
            self.pending.set_exception(NoResponse(kind, self.received, repr(exc) if exc else ""))

    # parsing
    def _parse(self):
        if self.head is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > 65536:
                    raise ValueError("response head over 64 KiB")
                return
            lines = self.buf[:end].decode("latin-1").split("\r\n")
            del self.buf[: end + 4]
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or parts[0] != "HTTP/1.1" or not parts[1].isdigit():
                raise ValueError(f"bad status line {lines[0]!r}")
            headers: dict[str, list[str]] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if not sep:
                    raise ValueError(f"bad header line {line!r}")
                headers.setdefault(name.strip().lower(), []).append(value.strip())
            if "transfer-encoding" in headers:
                raise ValueError("Transfer-Encoding in a response (expected Content-Length framing)")
            cl = headers.get("content-length", [])
            if len(cl) != 1 or not cl[0].isdigit():
                raise ValueError(f"expected exactly one Content-Length, got {cl}")
            self.head = (int(parts[1]), headers, int(cl[0]))
        status, headers, length = self.head
        if len(self.buf) < length:
            return
        body = bytes(self.buf[:length])
        extra = bytes(self.buf[length:])
        self.buf.clear()
        self.head = None
        if extra:
            self.client.violation(
                "duplicate", self.pending_rid, f"{len(extra)} bytes after a complete response: {extra[:120]!r}"
            )
            self.reusable = False
        if any(v.lower() == "close" for v in headers.get("connection", [])):
            self.reusable = False
        fut = self.pending
        fut.set_result(Response(status, headers, body))
        if not self.reusable:
            self.close()

    # use
    def send(self, data: bytes, rid: str) -> tuple[asyncio.Future, bool]:
        """Writes a request; returns the response future and whether the kernel took it all."""
        self.pending = asyncio.get_running_loop().create_future()
        self.pending_rid = rid
        self.last_rid = rid
        self.received = 0
        self.head = None
        self.transport.write(data)
        return self.pending, self.transport.get_write_buffer_size() == 0

    def close(self):
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class Pool:
    """Idle keep-alive connections, most recently used first."""

    def __init__(self, client: ConnOwner, idle_max_s: float):
        self.client = client
        self.idle: list[Conn] = []
        self.idle_max_s = idle_max_s

    async def get(self) -> Conn:
        while self.idle:
            c = self.idle.pop()
            if c.closed or not c.reusable or now() - c.last_used > self.idle_max_s:
                c.close()
                continue
            return c
        return await self.client.connect()

    def put(self, c: Conn):
        if c.closed or not c.reusable:
            c.close()
            return
        c.last_used = now()
        self.idle.append(c)

    def reap(self):
        keep = []
        t = now()
        for c in self.idle:
            if c.closed or not c.reusable or t - c.last_used > self.idle_max_s:
                c.close()
            else:
                keep.append(c)
        self.idle = keep

    def close_all(self):
        for c in self.idle:
            c.close()
        self.idle = []


def build_request(method: str, path: str, host: str, rid: str, body: bytes = b"", extra: list[tuple[str, str]] = ()) -> bytes:
    head = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"X-Request-Id: {rid}"]
    if method == "POST":
        head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
