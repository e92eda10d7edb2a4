"""The soak's request classes: their share of the mix, the statuses each may get,
their payloads, the client's record of one request and the check of a 200 body.

Every request is tagged with its class; the table in soak.py's docstring says
what each class sends and which statuses it allows.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

ROUTE_OPENAI = "/v1/embeddings"
ROUTE_TEI = "/embed"

# Classes: weight in the Poisson mix and the statuses the client may see.
CLASS_WEIGHTS = {
    "text_openai": 26,
    "text_tei": 22,
    "ids_openai": 12,
    "ids_tei": 8,
    "large": 8,
    "poison": 6,
    "oom_lone": 2,
    "deadline": 6,
    "disconnect_after_send": 5,
    "disconnect_mid_body": 3,
}
ALLOWED = {
    "text_openai": {200},
    "text_tei": {200},
    "ids_openai": {200},
    "ids_tei": {200},
    "large": {200},
    "poison": {500},
    "oom_lone": {500},
    "deadline": {504},
    "burst": {200, 429},
    # What the server may count (no reply reaches the client).
    "disconnect_after_send": {200, 499},
    "disconnect_mid_body": set(),
}
DISCONNECT_CLASSES = ("disconnect_after_send", "disconnect_mid_body")
# Sent in the shutdown phase (no disconnects, no bursts: their outcome there is
# not the point).
SHUTDOWN_CLASSES = ("text_openai", "text_tei", "ids_openai", "ids_tei", "large", "poison", "deadline")

WORDS = (
    "the of and to in is was for on that with as by at from his her an were are which this be or had not but "
    "first one their its new after who they have has been also we more other time people during two can city "
    "world year most about state them when some such school would many these into only through three over "
    "where like then between used under part called known since while system before well being both each "
    "however number water later government until area often group early work against film music house game "
    "player season team history war family national country including among several based second company "
    "river point church law public small although million country large power battle village model batch token "
    "queue budget server request latency memory embedding vector kernel scheduler padding"
).split()
UNICODE_WORDS = ("naïve", "café", "Zürich", "東京", "北京大学", "смысл", "مرحبا", "γλώσσα", "🙂", "ﬁnance", "Ångström")


@dataclasses.dataclass(slots=True)
class Req:
    rid: str
    cls: str
    route: str
    n_inputs: int
    phase: str  # "load" or "shutdown"
    t_send: float = 0.0
    t_written: float | None = None
    written_whole: bool = False
    t_done: float | None = None
    status: int | None = None
    # reply | disconnected | refused | closed | reset | malformed | timeout | connect_error
    outcome: str = ""
    detail: str = ""
    kind429: str = ""  # concurrency | queue
    message: str = ""
    received: int = 0
    verdict: str = ""  # ok | collateral_429 | refused_after_sigterm | unexpected | lost
    why: str = ""


class Payloads:
    """Route, body and headers of a request of each class, drawn from the soak's one RNG."""

    def __init__(self, args, rng: random.Random):
        self.args = args
        self.rng = rng

    def text(self) -> str:
        r = self.rng.random()
        n = self.rng.randint(3, 12) if r < 0.5 else self.rng.randint(20, 80) if r < 0.85 else self.rng.randint(120, 250)
        words = [self.rng.choice(WORDS) for _ in range(n)]
        if self.rng.random() < 0.15:
            words.insert(self.rng.randrange(len(words) + 1), self.rng.choice(UNICODE_WORDS))
        return " ".join(words)

    def ids(self, lo: int | None = None, hi: int | None = None) -> list[int]:
        if lo is None:
            r = self.rng.random()
            lo, hi = (5, 60) if r < 0.6 else (60, 250) if r < 0.9 else (250, 500)
        n = self.rng.randint(lo, hi)
        return [self.rng.randrange(1, 150_000) for _ in range(n)]

    def make(self, cls: str) -> tuple[str, dict, list[tuple[str, str]], int]:
        """Route, JSON body, extra headers, number of inputs for a request of `cls`."""
        a = self.args
        rng = self.rng
        extra: list[tuple[str, str]] = []
        if cls == "disconnect_after_send" and rng.random() < 0.5:
            # Heavy half the time (several batches, OOM bisection): still queued
            # when the server notices the close, so cancelled (499).
            n = rng.randint(4, 8)
            return ROUTE_OPENAI, {"input": [self.ids(150, 450) for _ in range(n)]}, extra, n
        if cls in ("text_openai", "text_tei", "deadline", "disconnect_after_send", "disconnect_mid_body"):
            n = rng.choice((1, 1, 1, 2, 3, 4)) if cls != "deadline" else rng.choice((1, 1, 2))
            texts = [self.text() for _ in range(n)]
            openai = cls == "text_openai" or (cls != "text_tei" and rng.random() < 0.5)
            if cls == "deadline":
                extra.append(("X-Request-Timeout-Ms", str(a.deadline_ms)))
            if openai:
                body: dict[str, Any] = {"input": texts if n > 1 or rng.random() < 0.5 else texts[0], "model": "noop"}
                if rng.random() < 0.2:
                    body["encoding_format"] = "base64"
                return ROUTE_OPENAI, body, extra, n
            return ROUTE_TEI, {"inputs": texts if n > 1 or rng.random() < 0.5 else texts[0]}, extra, n
        if cls in ("ids_openai", "ids_tei"):
            n = rng.choice((1, 1, 2, 3, 4))
            lists = [self.ids() for _ in range(n)]
            # A single id list may also be sent flat: `input: [1, 2, 3]`.
            value: Any = lists[0] if n == 1 and rng.random() < 0.5 else lists
            if cls == "ids_openai":
                return ROUTE_OPENAI, {"input": value}, extra, n
            return ROUTE_TEI, {"inputs": value}, extra, n
        if cls == "large":
            n = rng.randint(4, 8)
            return ROUTE_OPENAI, {"input": [self.ids(150, 450) for _ in range(n)]}, extra, n
        if cls == "poison":
            n = rng.choice((1, 1, 2, 3))
            lists = [self.ids(5, 120) for _ in range(n)]
            victim = lists[rng.randrange(n)]
            victim.insert(rng.randrange(len(victim) + 1), a.fail_id)
            if rng.random() < 0.5:
                return ROUTE_OPENAI, {"input": lists}, extra, n
            return ROUTE_TEI, {"inputs": lists}, extra, n
        if cls == "oom_lone":
            lo = a.oom_above_tokens + 16
            hi = max(lo, min(a.max_input_tokens, a.oom_above_tokens + 256))
            return ROUTE_OPENAI, {"input": [self.ids(lo, hi)]}, extra, 1
        if cls == "burst":
            n = a.burst_inputs
            return ROUTE_OPENAI, {"input": [self.ids(8, 40) for _ in range(n)]}, extra, n
        raise ValueError(cls)


def check_embeddings(req: Req, payload: Any, hidden: int) -> str:
    """What is wrong with a 200 body (one embedding per input, `hidden` wide); "" if nothing."""
    if req.route == ROUTE_OPENAI:
        if not isinstance(payload, dict) or payload.get("object") != "list":
            return "OpenAI reply without object=list"
        data = payload.get("data")
        if not isinstance(data, list) or len(data) != req.n_inputs:
            return f"{len(data) if isinstance(data, list) else '?'} embeddings for {req.n_inputs} inputs"
        for i, d in enumerate(data):
            if d.get("index") != i:
                return f"embedding {i} has index {d.get('index')}"
            e = d.get("embedding")
            if isinstance(e, str):
                if len(e) != 4 * ((4 * hidden + 2) // 3):
                    return f"base64 embedding {i} of {len(e)} chars"
            elif not isinstance(e, list) or len(e) != hidden:
                return f"embedding {i} has {len(e) if isinstance(e, list) else '?'} values, expected {hidden}"
        usage = payload.get("usage", {})
        if not isinstance(usage.get("prompt_tokens"), int) or usage["prompt_tokens"] < req.n_inputs:
            return f"usage {usage}"
        return ""
    if not isinstance(payload, list) or len(payload) != req.n_inputs:
        return f"TEI reply with {len(payload) if isinstance(payload, list) else '?'} embeddings for {req.n_inputs}"
    for i, e in enumerate(payload):
        if not isinstance(e, list) or len(e) != hidden:
            return f"embedding {i} has {len(e) if isinstance(e, list) else '?'} values, expected {hidden}"
    return ""
