"""Fixtures of the Python package's tests: the repository's files, and the
models scripts/prepare_assets.sh wrote (tests fail, never skip, without them)."""

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo() -> pathlib.Path:
    return REPO


@pytest.fixture(scope="session")
def bert_tokenizer_path() -> str:
    return str(REPO / "data" / "tokenizers" / "bert-base-uncased" / "tokenizer.json")


@pytest.fixture(scope="session")
def minilm_dir() -> pathlib.Path:
    path = REPO / "build" / "cache" / "models" / "all-MiniLM-L6-v2"
    assert (path / "config.json").exists(), f"{path} is missing: run scripts/prepare_assets.sh"
    return path
