"""Latency percentiles, by linear interpolation between the closest ranks."""

from __future__ import annotations

from typing import Sequence


def percentile(sorted_vals: Sequence[float], q: float) -> float | None:
    """The `q` quantile (0 <= q <= 1) of ascending `sorted_vals`, in their unit; None when empty."""
    if not sorted_vals:
        return None
    k = (len(sorted_vals) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def latency_summary(values_s: Sequence[float]) -> dict:
    """Count, mean, p50, p90, p99 and max of latencies given in seconds, reported in ms (3 decimals).

    {"count": 0} when there are none.
    """
    if not values_s:
        return {"count": 0}
    v = sorted(values_s)

    def q(p):
        return percentile(v, p) * 1e3

    return {"count": len(v), "mean_ms": round(sum(v) / len(v) * 1e3, 3),
            "p50_ms": round(q(0.50), 3), "p90_ms": round(q(0.90), 3),
            "p99_ms": round(q(0.99), 3), "max_ms": round(v[-1] * 1e3, 3)}
