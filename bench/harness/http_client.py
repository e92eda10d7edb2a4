"""A small HTTP/1.1 client on the standard library's http.client.

Each call opens a fresh connection and closes it, so that no state carries
from one request to the next. Proxy settings of the environment are ignored:
the servers under test are on loopback.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any

from bench.harness.ports import HOST


class HTTPStatusError(Exception):
    """A reply whose status is not 2xx; `status` and `body` (bytes) are the reply's."""

    def __init__(self, url: str, status: int, body: bytes):
        super().__init__(f"{url}: HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
        self.status = status
        self.body = body


def request(port: int, method: str, path: str, body: bytes | None = None, timeout: float = 5.0,
            host: str = HOST) -> tuple[int, bytes, dict]:
    """One request on a new connection: (status, body bytes, headers with lower-case names).

    A `body` is sent as application/json. `timeout` (seconds) bounds the
    connect and each read. Raises OSError (refused, reset, timed out) and
    http.client.HTTPException (a malformed reply); any status is returned.
    """
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def post_json(url: str, payload: Any, timeout: float = 60.0) -> Any:
    """POSTs `payload` as JSON to `url` (http://host:port/path) and returns the decoded JSON reply.

    `timeout` is in seconds. Raises HTTPStatusError for a status other than 2xx,
    ValueError for a URL that is not http:// or a reply that is not JSON, and
    OSError or http.client.HTTPException when the exchange itself fails.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"not an http:// URL: {url}")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    status, body, _ = request(parts.port or 80, "POST", path, json.dumps(payload).encode(), timeout=timeout,
                              host=parts.hostname)
    if not 200 <= status < 300:
        raise HTTPStatusError(url, status, body)
    return json.loads(body)
