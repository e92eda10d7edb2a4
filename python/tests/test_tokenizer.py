"""tokenbatch.Tokenizer against Hugging Face tokenizers on the same files."""

import pathlib

import pytest
import tokenizers

import tokenbatch

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  spaces   and\ttabs\nnewlines ",
    "naïve café, 東京, emoji 🤖 and ümlauts",
    "",
    "x" * 500,
    "Numbers 1234567 and symbols #$%^&*()",
]


def tokenizer_files(repo):
    files = sorted((repo / "data" / "tokenizers").glob("*/tokenizer.json"))
    shared = repo.parent / "shared" / "data" / "tokenizers"
    files += sorted(shared.glob("*/tokenizer.json"))
    assert len(files) >= 2
    return files


def test_ids_equal_hugging_face(repo):
    for path in tokenizer_files(repo):
        ours = tokenbatch.Tokenizer.from_file(str(path))
        theirs = tokenizers.Tokenizer.from_file(str(path))
        for text in TEXTS:
            for special in (True, False):
                expected = theirs.encode(text, add_special_tokens=special).ids
                assert ours.encode(text, add_special_tokens=special).ids == expected, (path, text)
                assert ours.count(text, add_special_tokens=special) == len(expected)
        batch = ours.encode_batch(TEXTS * 20)
        assert [e.ids for e in batch] == [e.ids for e in theirs.encode_batch(TEXTS * 20)], path
        ids = theirs.encode(TEXTS[3]).ids
        assert ours.decode(ids) == theirs.decode(ids), path


def test_malformed_and_missing_files_name_the_file(tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": {"type": "NoSuchModel"}}')
    with pytest.raises(ValueError) as error:
        tokenbatch.Tokenizer.from_file(str(bad))
    assert "NoSuchModel" in str(error.value) or str(bad) in str(error.value)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="JSON|json|parse"):
        tokenbatch.Tokenizer.from_file(str(bad))
    with pytest.raises(FileNotFoundError):
        tokenbatch.Tokenizer.from_file(str(tmp_path / "absent.json"))


def test_decode_refuses_ids_outside_the_vocabulary(bert_tokenizer_path):
    tok = tokenbatch.Tokenizer.from_file(bert_tokenizer_path)
    with pytest.raises(ValueError, match="999999"):
        tok.decode([101, 999999])
    with pytest.raises(TypeError):
        tok.encode_batch(["ok", 3])
