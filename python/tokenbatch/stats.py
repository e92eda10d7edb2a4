"""Stats: what a Scheduler has done, as one snapshot of its runtime's metrics."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Stats:
    """A snapshot of Scheduler.stats(). Counts are since the scheduler started.

    Percentiles come from the runtime's histograms (Prometheus-style buckets),
    so each is the upper bound of the bucket it falls in: the wait buckets
    double from 10 µs, the ratio buckets are 0.05 wide.
    """

    requests_submitted: int  # accepted by submit
    requests_succeeded: int  # resolved with a result (the worker's value or exception)
    failures: dict[str, int]  # by kind: "queue_full", "oversize", "deadline_exceeded", ...
    batches: int  # batches dispatched to the worker
    mean_batch_size: float  # inputs per batch
    mean_batch_tokens: float  # real tokens per batch
    mean_batch_cost: float  # cost model units per batch (tokens, padded tokens or bytes)
    padding_efficiency: float  # mean over batches of Σ tokens / (B × Lmax), in (0, 1]
    queue_wait_p50_ms: float  # arrival to dispatch
    queue_wait_p99_ms: float
    batch_time_mean_ms: float  # the worker's time per batch, retries included
    queue_requests: int  # queued now (a split input counts once per window)
    queue_tokens: int
    max_batch_tokens: int  # the configured budget
    effective_budget: int  # the budget now, lowered after out-of-memory failures (AIMD)
    oom_events: int  # worker calls that ran out of memory
    isolation_retries: int  # worker calls made to bisect failed batches
    dispatch_reasons: dict[str, int]  # why batches closed: "budget_full", "max_wait", ...

    @classmethod
    def from_metrics(cls, m: dict[str, Any]) -> "Stats":
        return cls(
            requests_submitted=m["requests_submitted"],
            requests_succeeded=m["requests_succeeded"],
            failures=dict(m["failures"]),
            batches=m["batches"],
            mean_batch_size=m["batch_size"]["mean"],
            mean_batch_tokens=m["batch_tokens"]["mean"],
            mean_batch_cost=m["batch_cost"]["mean"],
            padding_efficiency=m["padding_efficiency"]["mean"] if m["batches"] else 1.0,
            queue_wait_p50_ms=m["queue_wait_us"]["p50"] / 1e3,
            queue_wait_p99_ms=m["queue_wait_us"]["p99"] / 1e3,
            batch_time_mean_ms=m["batch_exec_us"]["mean"] / 1e3,
            queue_requests=m["queue_requests"],
            queue_tokens=m["queue_tokens"],
            max_batch_tokens=m["max_batch_tokens"],
            effective_budget=m["effective_budget"],
            oom_events=m["oom_events"],
            isolation_retries=m["isolation_retries"],
            dispatch_reasons=dict(m["dispatch_reasons"]),
        )
