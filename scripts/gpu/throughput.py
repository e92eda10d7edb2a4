"""Offline throughput of tokenbatch against sentence-transformers' `encode` on
the same texts, model directory, device and dtype (gpu_check.sh).

    throughput.py TOKENBATCH MODEL_DIR WORKLOAD_JSONL [--device cuda:0] [--dtype bfloat16] [--json OUT]

WORKLOAD_JSONL is what `tokenbatch bench --save-workload` writes (text, tokens).
tokenbatch runs it with `bench` (packed, the default attention kernel, the
length-aware policy under a token budget); sentence-transformers encodes the same
texts with its defaults (batches of 32, sorted by length), after a warm-up.
Both rates are real tokens per second, counted by tokenbatch's tokenizer. The
last line is the verdict, "ok ..." (the figures are reported, not bounded).
"""
import argparse
import json
import os
import subprocess
import time

import torch
from sentence_transformers import SentenceTransformer

POLICY = "ours-length-aware"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokenbatch")
    parser.add_argument("model_dir")
    parser.add_argument("workload")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--max-batch-tokens", type=int, default=65536)
    parser.add_argument("--json")
    args = parser.parse_args()
    with open(args.workload) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    texts = [r["text"] for r in rows]
    tokens = sum(r["tokens"] for r in rows)

    threads = ["--threads", str(os.cpu_count())] if args.device == "cpu" else []
    bench = subprocess.run([args.tokenbatch, "bench", "--model-id", args.model_dir, "--device", args.device, *threads,
                            "--dtype", args.dtype, "--workload", args.workload, "--policies", POLICY,
                            "--max-batch-tokens", str(args.max_batch_tokens), "--no-progress", "--json"],
                           check=True, capture_output=True, text=True)
    ours = {r["policy"]: r for r in json.loads(bench.stdout)}[POLICY]

    model = SentenceTransformer(args.model_dir, device=args.device, model_kwargs={"dtype": getattr(torch, args.dtype)})
    model.encode(texts[:32], batch_size=32)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    model.encode(texts, batch_size=32)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    st_tokens_per_s = tokens / (time.perf_counter() - start)

    figures = {"texts": len(texts), "tokens": tokens, "device": args.device, "dtype": args.dtype,
               "tokenbatch_tokens_per_s": ours["tokens_per_s"], "tokenbatch_oom_events": ours["oom_events"],
               "sentence_transformers_tokens_per_s": round(st_tokens_per_s, 1),
               "ratio": round(ours["tokens_per_s"] / st_tokens_per_s, 3)}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    ok = ours["completed"] == len(texts) and ours["oom_events"] == 0
    print(("ok" if ok else "FAIL") + f" {args.dtype} on {args.device}, {len(texts)} texts: tokenbatch "
          f"{ours['tokens_per_s']:.0f} tokens/s, sentence-transformers {st_tokens_per_s:.0f}: {figures['ratio']}x"
          + ("" if ok else f" ({ours['completed']} completed, {ours['oom_events']} OOM events)"))


if __name__ == "__main__":
    main()
