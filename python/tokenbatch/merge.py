"""How the windows of a split input (``oversize="split"``) become one result."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def merge_mean(parts: Sequence[Any], windows: Sequence[tuple[int, int]]) -> np.ndarray:
    """The token-weighted mean of the windows' results (arrays of one shape).

    Each window weighs its token count (end - begin). When every part has unit
    L2 norm (normalised embeddings), so has the mean; this is how ``tokenbatch
    serve --oversize split`` merges embeddings (src/service/batcher_adapter.cc).
    Raises ValueError when the parts differ in shape.
    """
    arrays = [np.asarray(p) for p in parts]
    if any(a.shape != arrays[0].shape for a in arrays):
        raise ValueError("the windows' results differ in shape: " + ", ".join(str(a.shape) for a in arrays))
    dtype = arrays[0].dtype if np.issubdtype(arrays[0].dtype, np.floating) else np.float64
    stacked = np.stack(arrays).astype(np.float64)
    weights = np.array([end - begin for begin, end in windows], dtype=np.float64)
    mean = np.tensordot(weights, stacked, axes=1) / weights.sum()
    norms = np.linalg.norm(stacked.reshape(len(arrays), -1), axis=1)
    if np.all(np.abs(norms - 1.0) < 1e-3):
        total = np.linalg.norm(mean)
        if total > 0:
            mean = mean / total
    return mean.astype(dtype)


def merge_list(parts: Sequence[Any], windows: Sequence[tuple[int, int]]) -> list:
    """The windows' results themselves, in order (the caller combines them)."""
    return list(parts)


MERGES = {"mean": merge_mean, "list": merge_list}
