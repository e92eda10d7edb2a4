"""Throughput of Hugging Face tokenizers (PyPI `tokenizers`, the Rust library) on
a JSON Lines file of texts, single thread. Two ways of calling it:
  encode:        one tok.encode(text) per text (includes the Python <-> Rust call cost)
  encode_batch:  one tok.encode_batch(all texts) per round; run with
                 RAYON_NUM_THREADS=1 so that Rust uses a single thread
Each mode runs one untimed warm-up round and then ROUNDS timed rounds, and prints
one JSON line: {"impl", "mode", "tokens", "seconds", "tokens_per_s", "mb_per_s"}.

Usage: build/venv/bin/python bench/tokenizer/reference_bench.py TOKENIZER_JSON TEXTS_JSONL [ROUNDS]
"""

import json
import sys
import time

from tokenizers import Tokenizer


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: reference_bench.py TOKENIZER_JSON TEXTS_JSONL [ROUNDS]")
    tok = Tokenizer.from_file(sys.argv[1])
    with open(sys.argv[2], encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    rounds = int(sys.argv[3]) if len(sys.argv) == 4 else 5
    total_bytes = sum(len(t.encode("utf-8")) for t in texts)

    def encode():
        return sum(len(tok.encode(t, add_special_tokens=True).ids) for t in texts)

    def encode_batch():
        return sum(len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=True))

    for mode, one_round in (("encode", encode), ("encode_batch", encode_batch)):
        one_round()
        tokens = 0
        start = time.perf_counter()
        for _ in range(rounds):
            tokens += one_round()
        seconds = time.perf_counter() - start
        print(json.dumps({"impl": "huggingface", "mode": mode, "tokens": tokens, "seconds": round(seconds, 4),
                          "tokens_per_s": round(tokens / seconds),
                          "mb_per_s": round(total_bytes * rounds / seconds / 1e6, 2)}))


if __name__ == "__main__":
    main()
