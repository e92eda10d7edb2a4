"""tokenbatch: token-budget micro-batching for embedding and reranking inference.

The scheduler, its runtime and the tokenizers are tokenbatch's C++ engine
(the extension module ``tokenbatch._core``); this package is their asyncio
face. ``Embedder`` and ``Reranker`` (``tokenbatch.models``) need the package
to have been built with torch importable.

    async with tokenbatch.Scheduler(worker, max_batch_tokens=8192) as scheduler:
        result = await scheduler.submit("a text")
"""

from __future__ import annotations

from . import _core
from .errors import (
    BY_KIND as _BY_KIND,
    Cancelled,
    DeadlineExceeded,
    Error,
    InvalidInput,
    OutOfMemoryError,
    Overloaded,
    OversizeError,
    ShuttingDown,
    WorkerError,
)

_core._register_error_types(dict(_BY_KIND))

from ._core import Batch, Encoding, Tokenizer  # noqa: E402
from .scheduler import Scheduler, Stats  # noqa: E402

__version__ = "0.1.0"


def __getattr__(name: str):
    # Embedder and Reranker import torch (their libtorch): only when asked for.
    if name in ("Embedder", "Reranker"):
        try:
            from . import models
        except ImportError as e:
            raise ImportError(
                f"tokenbatch.{name} needs torch, and the package built with it: pip install torch "
                "scikit-build-core==1.1.2 nanobind==3.1.0, then pip install --no-build-isolation . "
                f"({e})"
            ) from e
        return getattr(models, name)
    raise AttributeError(f"module 'tokenbatch' has no attribute {name!r}")


__all__ = [
    "Batch",
    "Cancelled",
    "DeadlineExceeded",
    "Embedder",
    "Encoding",
    "Error",
    "InvalidInput",
    "OutOfMemoryError",
    "Overloaded",
    "OversizeError",
    "Reranker",
    "Scheduler",
    "ShuttingDown",
    "Stats",
    "Tokenizer",
    "WorkerError",
]
