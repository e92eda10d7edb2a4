#!/usr/bin/env python3
"""Offline sentence-transformers throughput on a workload's texts (no server).

SentenceTransformer(DIR, device="cpu").encode(texts, batch_size=...) over the
first N `text` fields of a workload JSON Lines file (cycled when N exceeds the
file), with torch's intra-op threads set by --threads. This is what a caller
gets from the library itself, the bound a server on the same library can
approach (encode() sorts the texts by length before batching, so its batches
carry little padding, which a server seeing requests one by one cannot do). Tokens are counted with the model's own tokenizer, truncated to the
model's max_seq_length as encode() truncates, and include [CLS]/[SEP].
Prints JSON: texts/s, tokens/s, wall s, process CPU s.
Usage:
  build/peers-venv/bin/python bench/peers/offline_st.py WORKLOAD.jsonl \\
      --model-dir build/cache/models/all-MiniLM-L6-v2 --texts 10000 --threads 2
"""
import argparse
import json
import os
import resource
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload")
    ap.add_argument("--model-dir", default="build/cache/models/all-MiniLM-L6-v2")
    ap.add_argument("--texts", type=int, default=10000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup-batches", type=int, default=2,
                    help="batches encoded first and not timed (first-call allocations)")
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    with open(args.workload, encoding="utf-8") as f:
        pool = [json.loads(line)["text"] for line in f if line.strip()]
    texts = [pool[i % len(pool)] for i in range(args.texts)]

    model = SentenceTransformer(args.model_dir, device="cpu")
    tok = model.tokenizer
    enc = tok(texts, truncation=True, max_length=model.max_seq_length)
    tokens = sum(len(ids) for ids in enc["input_ids"])

    if args.warmup_batches:
        model.encode(texts[: args.batch_size * args.warmup_batches], batch_size=args.batch_size)

    c0, t0 = cpu_s(), time.perf_counter()
    emb = model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True)
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    print(json.dumps({
        "texts": len(texts), "dims": int(emb.shape[1]), "batch_size": args.batch_size,
        "threads": args.threads, "max_seq_length": model.max_seq_length,
        "tokens": tokens, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "texts_per_s": round(len(texts) / wall, 2), "tokens_per_s": round(tokens / wall, 1),
        "cpu_us_per_token": round(cpu * 1e6 / tokens, 3),
        "torch": torch.__version__,
    }, indent=1))


if __name__ == "__main__":
    main()
