"""Summarises run_tokenizer_bench.sh's JSON lines for one tokenizer: the best
figure of each (impl, mode) over the repetitions, and each of ours as a ratio to
the best Hugging Face mode.

Usage: python3 summarize.py NAME OURS_JSONL REFERENCE_JSONL (JSON Lines as text)
"""

import json
import sys


def best_by_mode(text):
    best = {}
    for line in text.strip().splitlines():
        x = json.loads(line)
        if x["mode"] not in best or best[x["mode"]]["tokens_per_s"] < x["tokens_per_s"]:
            best[x["mode"]] = x
    return list(best.values())


def main():
    name, ours_text, ref_text = sys.argv[1:4]
    ours, ref = best_by_mode(ours_text), best_by_mode(ref_text)
    hf = max(x["tokens_per_s"] for x in ref)
    print(f"{name}:")
    for x in ref:
        print(f"  huggingface {x['mode']:<18} {x['tokens_per_s']:>10} tokens/s  ({x['mb_per_s']} MB/s)")
    for x in ours:
        print(f"  tokenbatch  {x['mode']:<18} {x['tokens_per_s']:>10} tokens/s  ({x['mb_per_s']} MB/s)"
              f"  ratio vs best HF: {x['tokens_per_s'] / hf:.2f}x")
    if ours[0]["tokens"] != ref[0]["tokens"]:
        print(f"  WARNING: token totals differ: ours {ours[0]['tokens']}, HF {ref[0]['tokens']}")


if __name__ == "__main__":
    main()
