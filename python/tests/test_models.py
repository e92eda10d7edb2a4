"""Embedder and Reranker against sentence-transformers on the same directories:
the real all-MiniLM-L6-v2, and random-initialised cross-encoders written by
tests/python/make_hf_models.py."""

import asyncio
import subprocess
import sys

import numpy as np
import pytest

import tokenbatch

TEXTS = [
    "A man is eating food.",
    "A man is riding a horse on a sunny beach while the crowd watches.",
    "Short.",
    " ".join(["a long passage about token budgets"] * 60),  # beyond max_seq_length: cut, as ST does
    "naïve café 東京",
]


@pytest.fixture(scope="module")
def cross_encoders(repo, tmp_path_factory):
    out = tmp_path_factory.mktemp("hf_models")
    subprocess.run([sys.executable, str(repo / "tests/python/make_hf_models.py"), str(out),
                    str(repo / "data/tokenizers"), "bert-reranker", "bert-nli"], check=True)
    return out


def test_embedder_equals_sentence_transformers(minilm_dir):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_dir), device="cpu")
    expected = reference.encode(TEXTS, convert_to_numpy=True)
    with tokenbatch.Embedder(minilm_dir) as embedder:
        # The package builds on the venv's torch (>= 2): the fused kernel.
        assert embedder.info["attention"] == "sdpa"
        got = embedder.encode(TEXTS)
        single = embedder.encode(TEXTS[0])
        normalized = embedder.encode(TEXTS, normalize_embeddings=True)

        async def concurrent():
            return await asyncio.gather(*(embedder.embed(t) for t in TEXTS * 4))

        streamed = asyncio.run(concurrent())
    assert got.shape == expected.shape and got.dtype == np.float32
    assert np.abs(got - expected).max() <= 1e-4
    assert np.abs(single - expected[0]).max() <= 1e-4
    assert np.abs(normalized - expected / np.linalg.norm(expected, axis=1, keepdims=True)).max() <= 1e-4
    assert np.abs(np.stack(streamed) - np.concatenate([expected] * 4)).max() <= 1e-4


def test_reranker_equals_cross_encoder(cross_encoders):
    from sentence_transformers import CrossEncoder

    pairs = [("what is a cat", t) for t in TEXTS] + [("q", "d")]
    for name in ("bert-reranker", "bert-nli"):
        path = cross_encoders / name
        expected = CrossEncoder(str(path), device="cpu").predict(pairs, convert_to_numpy=True)
        with tokenbatch.Reranker(path) as reranker:
            got = reranker.predict(pairs)
            if name == "bert-reranker":
                ranked = reranker.rank("what is a cat", TEXTS)
                assert [r["corpus_id"] for r in ranked] == list(np.argsort(-expected[: len(TEXTS)], kind="stable"))
                score = asyncio.run(reranker.score(*pairs[0]))
                assert abs(score - float(expected[0])) <= 1e-4
        assert got.shape == expected.shape, name
        assert np.abs(got - expected).max() <= 1e-4, name


def test_a_malformed_directory_raises_naming_the_file(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json"):
        tokenbatch.Embedder(tmp_path)


def test_a_budget_that_cannot_hold_the_longest_input_is_refused_not_made_the_limit(minilm_dir):
    # all-MiniLM-L6-v2 keeps 256 tokens (max_seq_length); a 100-token budget
    # would have cut every longer input to 100.
    with pytest.raises(ValueError, match=r"max_batch_tokens 100 \(cost model sum\) holds one input of at most 100 "
                                         r"tokens, below the input limit of 256 tokens"):
        tokenbatch.Embedder(minilm_dir, max_batch_tokens=100)
    with tokenbatch.Embedder(minilm_dir, max_batch_tokens=256) as embedder:
        assert embedder.info["max_input_tokens"] == 256
