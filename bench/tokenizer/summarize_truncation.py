"""Reads the JSON lines of truncation_bench and truncation_reference.py on
stdin and prints, per side, EncodeTruncated's median milliseconds and how many
times longer the whole-text encoding and Hugging Face's tokenizers took.

Usage: ... | python bench/tokenizer/summarize_truncation.py MODEL_NAME
"""
import json
import sys


def main():
    model = sys.argv[1]
    rows = {(r["impl"], r["mode"]): r for r in map(json.loads, sys.stdin)}
    whole = rows[("tokenbatch", "whole_then_cut")]["ms"]
    for side in ("right", "left"):
        ours = rows[("tokenbatch", f"truncated_{side}")]
        hf = rows[("huggingface", f"truncated_{side}")]
        if ours["tokens"] != hf["tokens"]:
            raise SystemExit(f"{model} {side}: tokenbatch kept {ours['tokens']} tokens, tokenizers {hf['tokens']}")
        print(f"{model:18} {side:5} kept {ours['tokens']:4}: EncodeTruncated {ours['ms']:8.3f} ms; "
              f"whole text then cut {whole:8.1f} ms ({whole / ours['ms']:.0f}x); "
              f"tokenizers {hf['ms']:8.1f} ms ({hf['ms'] / ours['ms']:.0f}x)")


if __name__ == "__main__":
    main()
