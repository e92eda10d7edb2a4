"""Writes the golden ids that src/tokenizer/golden_test.cc compares against.

The reference is Hugging Face's own `tokenizers` (the Rust library, through its
PyPI binding, pinned in scripts/requirements.txt). For each tokenizer (qwen3,
llama3 and bert from the shared tokenizer data, the variants in
testdata/tokenizer/variants/*.json: a base tokenizer with some top-level fields
replaced, and the small tokenizers of testdata/tokenizer/synthetic/*.json) it
writes testdata/tokenizer/golden/<name>.corpus.jsonl: one line per corpus text
with the ids with and without special tokens and the byte offsets (plus, for the
real tokenizers, the ids with Hugging Face's truncation to 16 tokens). For the
three real tokenizers it also writes <name>.realtext.jsonl: the token count and
an FNV-1a-64 hash of the ids of each real text (the hash keeps the committed
file small; the test compares every id through it and prints the ids on a
mismatch). Long documents (names long_doc*) are stored the same way.

The JSON is written compactly, keys in insertion order and non-ASCII text
unescaped, so that the files are byte-identical to what the project's earlier
generator (the JavaScript binding of the same library) wrote.

Usage, from the repository root, after scripts/setup.sh:
    build/venv/bin/python scripts/tokenizer/generate_goldens.py [--tokenizers DIR]
DIR defaults to ../shared/data/tokenizers (see its README).
"""

import argparse
import json
import os

from tokenizers import Tokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.path.join(ROOT, "testdata", "tokenizer")
REAL = ("qwen3", "llama3", "bert")
# Short names used by the goldens and variants -> folders of the tokenizer data.
FOLDER = {"qwen3": "qwen3", "llama3": "llama3", "bert": "bert-base-uncased"}


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def utf8_prefix(text):
    """prefix[i] = the UTF-8 length of text[:i] (code points to bytes)."""
    prefix = [0]
    for ch in text:
        prefix.append(prefix[-1] + len(ch.encode("utf-8")))
    return prefix


def byte_offsets(text, offsets, prefix=None):
    """Hugging Face reports offsets in code points; the C++ API reports UTF-8 bytes.
    `prefix` is utf8_prefix(text), when the caller has it already."""
    if prefix is None:
        prefix = utf8_prefix(text)
    return [[prefix[b], prefix[e]] for b, e in offsets]


def hash_ids(ids):
    """FNV-1a 64 over the ids, one id at a time (see golden_test.cc)."""
    h = 0xCBF29CE484222325
    for i in ids:
        h ^= i
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return format(h, "016x")


def tokenizer_path(tokenizers_dir, name):
    return os.path.join(tokenizers_dir, FOLDER[name], "tokenizer.json")


def load_variant(tokenizers_dir, path):
    with open(path, encoding="utf-8") as f:
        v = json.load(f)
    with open(tokenizer_path(tokenizers_dir, v["base"]), encoding="utf-8") as f:
        base = json.load(f)
    base.update(v.get("replace", {}))
    if "extra_added_tokens" in v:
        base["added_tokens"] = base["added_tokens"] + v["extra_added_tokens"]
    base["model"].update(v.get("model_options", {}))
    return Tokenizer.from_str(json.dumps(base))


def json_files(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".json"))


def corpus_line(tok, truncating, text_name, text):
    with_special = tok.encode(text, add_special_tokens=True)
    without = tok.encode(text, add_special_tokens=False)
    offsets = byte_offsets(text, with_special.offsets)
    line = {"name": text_name}
    if text_name.startswith("long_doc"):
        # Long documents: counts and hashes only, to keep the committed files small.
        line.update(n=len(with_special.ids), ids_hash=hash_ids(with_special.ids),
                    n_no_special=len(without.ids), ids_no_special_hash=hash_ids(without.ids),
                    offsets_hash=hash_ids([o for pair in offsets for o in pair]))
    else:
        line.update(ids=with_special.ids, ids_no_special=without.ids, offsets=offsets)
    if truncating is not None:
        line["truncated_16"] = truncating.encode(text, add_special_tokens=True).ids
    return line


def write_jsonl(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(dumps(line) for line in lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers", default=os.path.join(ROOT, "..", "shared", "data", "tokenizers"),
                        help="folder holding qwen3/, llama3/ and bert-base-uncased/")
    args = parser.parse_args()

    corpus = read_jsonl(os.path.join(DATA, "corpus.jsonl"))
    real = read_jsonl(os.path.join(DATA, "realtext.jsonl"))
    tokenizers = [(n, Tokenizer.from_file(tokenizer_path(args.tokenizers, n)), True) for n in REAL]
    for f in json_files(os.path.join(DATA, "variants")):
        tokenizers.append((f[:-5], load_variant(args.tokenizers, os.path.join(DATA, "variants", f)), False))
    # Small hand-made tokenizers for options the real ones do not use (byte_fallback,
    # fuse_unk, continuing_subword_prefix, end_of_word_suffix, merges as pairs).
    for f in json_files(os.path.join(DATA, "synthetic")):
        tokenizers.append((f[:-5], Tokenizer.from_file(os.path.join(DATA, "synthetic", f)), False))

    for name, tok, with_real in tokenizers:
        # The same tokenizer with Hugging Face's truncation to 16 tokens, for
        # Tokenizer::EncodeTruncated (real tokenizers only).
        truncating = None
        if with_real:
            truncating = Tokenizer.from_file(tokenizer_path(args.tokenizers, name))
            truncating.enable_truncation(16)
        lines = [corpus_line(tok, truncating, c["name"], c["text"]) for c in corpus]
        write_jsonl(os.path.join(DATA, "golden", f"{name}.corpus.jsonl"), lines)
        if not with_real:
            continue
        real_lines = []
        for r in real:
            ids = tok.encode(r["text"], add_special_tokens=True).ids
            real_lines.append({"name": r["name"], "n": len(ids), "hash": hash_ids(ids)})
        write_jsonl(os.path.join(DATA, "golden", f"{name}.realtext.jsonl"), real_lines)
    print("goldens for " + ", ".join(t[0] for t in tokenizers))


if __name__ == "__main__":
    main()
