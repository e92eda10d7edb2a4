"""Embedder and Reranker: a Hugging Face model directory run in process by
tokenbatch's C++ backend (the one ``tokenbatch serve --model-id`` runs),
behind its embedding service: tokenizer -> token-budget batcher -> model.

Their results equal sentence-transformers' ``SentenceTransformer.encode`` and
``CrossEncoder.predict`` on the same directory (python/tests/test_models.py).
Both need the package built with torch importable; they share that torch's
libtorch, so importing them imports torch.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Sequence

import numpy as np
import torch  # noqa: F401  (loads the libtorch _models links against)

from . import _models


def _resolve(future: asyncio.Future, value: Any) -> None:
    if future.done():
        return
    if isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)


class _Model:
    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        device: str = "cpu",
        dtype: str = "float32",
        execution: str = "packed",
        max_batch_tokens: int | None = None,
        max_batch_size: int = 256,
        max_wait: float = 0.002,
        num_threads: int = 0,
        tokenizer_threads: int = 1,
        max_queue_size: int = 65536,
    ) -> None:
        self._model = _models._Model(
            model_dir=os.fspath(model_dir),
            device=device,
            dtype=dtype,
            execution=execution,
            max_batch_tokens=0 if max_batch_tokens is None else max_batch_tokens,
            max_batch_size=max_batch_size,
            max_wait_s=float(max_wait),
            num_threads=num_threads,
            tokenizer_threads=tokenizer_threads,
            max_queue_size=max_queue_size,
        )

    @property
    def info(self) -> dict[str, Any]:
        """architecture, dtype, attention (the kernel: sdpa with libtorch >= 2 on the CPU; flash_varlen or
        efficient_varlen on CUDA when packed), pooling, hidden_size, max_input_tokens, normalize (and labels,
        activation)."""
        return self._model.info

    def close(self) -> None:
        """Finishes what is queued and stops the service's threads. Blocks."""
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.to_thread(self.close)


class Embedder(_Model):
    """A sentence-transformers embedding directory (BERT, XLM-R, Qwen3).

    model_dir: the directory (config.json, model.safetensors, tokenizer.json,
        modules.json and its Pooling / Dense / Normalize modules).
    device: "cpu", or "cuda" / "cuda:N" with a CUDA torch. dtype: "float32",
        "float16" or "bfloat16". execution: "packed" (no padding computed; the
        budget is Σ tokens) or "padded" (B × Lmax).
    max_batch_tokens, max_batch_size, max_wait (seconds): the batcher's limits;
        concurrent callers share batches. Inputs longer than the model's
        max_seq_length are cut to it, as sentence-transformers does. The
        default max_batch_tokens (None) is 16,384 tokens, raised to hold one
        input of max_seq_length; one given that cannot hold such an input is
        refused (ValueError), never made the input limit.
    Raises ValueError (a malformed directory, naming the file; a budget below
    the model's input limit), FileNotFoundError.
    Thread-safety: every method may be called from any thread or loop at once.
    """

    def encode(
        self,
        sentences: str | Sequence[str],
        *,
        normalize_embeddings: bool = False,
        prompt_name: str | None = None,
        truncate_dim: int | None = None,
    ) -> np.ndarray:
        """float32 [N, H] (or [H] for one str), as SentenceTransformer.encode.

        normalize_embeddings: L2-normalise even without a Normalize module.
        prompt_name: a prompt of config_sentence_transformers.json.
        truncate_dim: keep the first dimensions (Matryoshka).
        Blocks without the GIL. Raises ValueError for an input the model
        refuses (invalid UTF-8, an unknown prompt)."""
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        out = self._model.embed(texts, True if normalize_embeddings else None, prompt_name, truncate_dim or 0)
        return out[0] if single else out

    async def embed(
        self, text: str, *, normalize_embeddings: bool = False, prompt_name: str | None = None,
        truncate_dim: int | None = None,
    ) -> np.ndarray:
        """One text's embedding, float32 [H], batched with concurrent callers."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._model.embed_async(text, True if normalize_embeddings else None, prompt_name, truncate_dim or 0,
                                loop, _resolve, future)
        return await future


def _activate(logits: np.ndarray, activation: str, apply_softmax: bool) -> np.ndarray:
    if logits.shape[-1] > 1:
        if not apply_softmax:
            return logits
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)
    scores = logits[..., 0]
    if activation == "sigmoid":
        return 1.0 / (1.0 + np.exp(-scores))
    if activation == "tanh":
        return np.tanh(scores)
    return scores


class Reranker(_Model):
    """A cross-encoder directory (``*ForSequenceClassification``), as
    sentence-transformers' CrossEncoder: same options as Embedder."""

    def predict(self, pairs: Sequence[tuple[str, str]], *, apply_softmax: bool = False) -> np.ndarray:
        """Scores [N] with the model's activation (sigmoid for one label unless
        its config names another), or [N, labels] logits for several labels
        (softmax with apply_softmax), as CrossEncoder.predict. Blocks without the GIL."""
        logits = self._model.logits([(str(q), str(d)) for q, d in pairs])
        return _activate(logits, self.info.get("activation", "identity"), apply_softmax).astype(np.float32)

    def rank(self, query: str, documents: Sequence[str], *, top_k: int | None = None,
             return_documents: bool = False) -> list[dict[str, Any]]:
        """The documents by score, highest first: ``{"corpus_id", "score"[, "text"]}``, as CrossEncoder.rank."""
        scores = self.predict([(query, d) for d in documents])
        order = np.argsort(-scores, kind="stable")[: top_k or len(documents)]
        ranked = [{"corpus_id": int(i), "score": float(scores[i])} for i in order]
        if return_documents:
            for r in ranked:
                r["text"] = documents[r["corpus_id"]]
        return ranked

    async def score(self, query: str, document: str) -> float:
        """One pair's score (single-label models), batched with concurrent callers."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._model.logits_async(query, document, loop, _resolve, future)
        logits = await future
        return float(_activate(logits[None, :], self.info.get("activation", "identity"), False)[0])
