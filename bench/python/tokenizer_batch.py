"""Benchmark (c): tokenbatch.Tokenizer.encode_batch against Hugging Face
tokenizers' Tokenizer.encode_batch, both from Python, on the same texts.

testdata/tokenizer/realtext.jsonl (2,043 real texts) for each tokenizer.json
given; both libraries use every core (tokenbatch its threads, tokenizers its
Rayon pool). Rounds alternate ours and theirs, one untimed warm-up each; the
figure is the median round, texts/s and MB/s, with the ratio ours / theirs.
The ids are checked equal first.

    build/venv/bin/python -m bench.python.tokenizer_batch [--rounds 7] [TOKENIZER_JSON ...]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time

import tokenizers

import tokenbatch

REPO = pathlib.Path(__file__).resolve().parents[2]
DEFAULT = [REPO / "data/tokenizers/bert-base-uncased/tokenizer.json", REPO / "data/tokenizers/qwen3/tokenizer.json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tokenizers", nargs="*", type=pathlib.Path, default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--texts", type=pathlib.Path, default=REPO / "testdata/tokenizer/realtext.jsonl")
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in args.texts.read_text(encoding="utf-8").splitlines() if line.strip()]
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    print("| tokenizer | tokenbatch texts/s (MB/s) | tokenizers texts/s (MB/s) | ratio |")
    print("|---|---|---|---|")
    for path in args.tokenizers:
        ours, theirs = tokenbatch.Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
        assert [e.ids for e in ours.encode_batch(texts)] == [e.ids for e in theirs.encode_batch(texts)], path
        times = {"ours": [], "theirs": []}
        for _ in range(args.rounds):
            for name, tok in (("ours", ours), ("theirs", theirs)):
                start = time.perf_counter()
                tok.encode_batch(texts)
                times[name].append(time.perf_counter() - start)
        ours_s, theirs_s = statistics.median(times["ours"]), statistics.median(times["theirs"])
        print(f"| {path.parent.name} | {len(texts) / ours_s:,.0f} ({megabytes / ours_s:.1f}) | "
              f"{len(texts) / theirs_s:,.0f} ({megabytes / theirs_s:.1f}) | {theirs_s / ours_s:.2f}× |")


if __name__ == "__main__":
    main()
