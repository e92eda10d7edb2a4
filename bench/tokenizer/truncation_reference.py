"""Hugging Face tokenizers (PyPI `tokenizers`) with truncation on one huge text,
the same text truncation_bench.cc builds: TEXTS_JSONL's texts joined by
newlines and repeated up to TEXT_BYTES, cut to MAX_TOKENS from the end
(truncation_side right) and from the start (left). Hugging Face tokenises the
whole text and then cuts. One untimed warm-up, then the median of ROUNDS; one
JSON line per mode.

Usage: build/venv/bin/python bench/tokenizer/truncation_reference.py TOKENIZER_JSON TEXTS_JSONL
           [TEXT_BYTES] [MAX_TOKENS] [ROUNDS]
"""

import json
import statistics
import sys
import time

from tokenizers import Tokenizer


def main():
    if not 3 <= len(sys.argv) <= 6:
        sys.exit(__doc__)
    text_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 1_500_000
    max_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 256
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 7
    with open(sys.argv[2], encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    parts, size, i = [], 0, 0
    while size < text_bytes:  # bytes, as the C++ program counts them
        piece = texts[i % len(texts)] + "\n"
        parts.append(piece)
        size += len(piece.encode("utf-8"))
        i += 1
    text = "".join(parts)
    for side in ("right", "left"):
        tok = Tokenizer.from_file(sys.argv[1])
        tok.enable_truncation(max_length=max_tokens, direction=side)
        kept = len(tok.encode(text).ids)
        ms = []
        for _ in range(rounds):
            start = time.perf_counter()
            kept = len(tok.encode(text).ids)
            ms.append((time.perf_counter() - start) * 1000)
        print(json.dumps({"impl": "huggingface", "mode": f"truncated_{side}", "tokens": kept,
                          "ms": round(statistics.median(ms), 3)}))


if __name__ == "__main__":
    main()
