"""Benchmark (b): the design note's workload through a real model, for
tokenbatch.Scheduler, the note's own scheduler, Ray Serve's @serve.batch and
`batched`.

5,000 requests, half about 1,500 characters and half about 20 (cut from
testdata/tokenizer/realtext.jsonl at seeded random offsets), shuffled, sent by
64 concurrent asyncio clients (each awaits one request at a time). The worker
is the same for all: a padded PyTorch forward of the real all-MiniLM-L6-v2
(transformers' BertModel, float32, CPU) with mean pooling, inputs cut to its
256 tokens. Each peer runs in its own process, one after another, so that its
peak RSS (getrusage of that child) is its own.

Batching per peer, each its documented way:
  tokenbatch  max_batch_tokens 4096 padded tokens (B × Lmax; --budget), max_batch_size 64,
              max_wait 4 ms, its exact tokenizer (the batch's ids go to the model)
  seed        its defaults: a budget of 4096 characters (len), 64 items, 4 ms
  ray         @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.004)
  batched     @batched.aio.dynamically(batch_size=32, timeout_ms=4)
The peers tokenise inside the worker with transformers' tokenizer (padding to
the batch's longest, truncation at 256).

    build/bench-venv/bin/python -m bench.python.seed_workload [--requests 5000] [--clients 64] [--peers ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = REPO / "build/cache/models/all-MiniLM-L6-v2"
PEERS = ("tokenbatch", "seed", "ray", "batched")


def workload(n: int, seed: int = 0) -> list[str]:
    corpus = " ".join(
        json.loads(line)["text"] for line in (REPO / "testdata/tokenizer/realtext.jsonl").read_text().splitlines()
        if line.strip()
    )
    rng = random.Random(seed)

    def cut(length: int) -> str:
        start = rng.randrange(0, len(corpus) - length)
        return corpus[start:start + length]

    texts = [cut(1500 + rng.randint(-100, 100)) for _ in range(n // 2)] + [cut(20) for _ in range(n - n // 2)]
    rng.shuffle(texts)
    return texts


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def drive(peer: str, texts: list[str], clients: int, budget: int) -> dict:
    import torch
    import transformers

    from bench.python import peers

    model = transformers.AutoModel.from_pretrained(str(MODEL)).eval()
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(MODEL))

    def pooled(input_ids, attention_mask):
        with torch.inference_mode():
            hidden = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return list(((hidden * mask).sum(1) / mask.sum(1)).numpy())

    def hf_worker(texts):
        encoded = hf_tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        return pooled(encoded["input_ids"], encoded["attention_mask"])

    if peer == "tokenbatch":
        import tokenbatch

        def worker(batch):
            return pooled(torch.from_dlpack(batch.input_ids), torch.from_dlpack(batch.attention_mask))

        options = dict(tokenizer=tokenbatch.Tokenizer.from_file(str(MODEL / "tokenizer.json")),
                       oversize="truncate", max_input_tokens=256)
        submit, close = await peers.make(peer, worker, max_batch_size=64, max_wait_ms=4.0, max_batch_tokens=budget,
                                         tokenbatch_options=options, raw_batch=True)
    elif peer == "seed":
        submit, close = await peers.make(peer, hf_worker, max_batch_size=64, max_wait_ms=4.0, max_batch_tokens=4096)
    else:
        submit, close = await peers.make(peer, hf_worker, max_batch_size=32, max_wait_ms=4.0, max_batch_tokens=0)

    pending = iter(range(len(texts)))
    latency = [0.0] * len(texts)

    async def client():
        for i in pending:
            start = time.perf_counter()
            result = await submit(texts[i])
            latency[i] = time.perf_counter() - start
            assert len(result) == 384

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - start
    await close()
    short = [latency[i] * 1e3 for i, t in enumerate(texts) if len(t) < 100]
    long_ = [latency[i] * 1e3 for i, t in enumerate(texts) if len(t) >= 100]
    return {"peer": peer, "requests_per_s": len(texts) / wall, "wall_s": wall,
            "short_p50_ms": statistics.median(short), "short_p99_ms": percentile(short, 0.99),
            "long_p50_ms": statistics.median(long_), "long_p99_ms": percentile(long_, 0.99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    parser.add_argument("--budget", type=int, default=4096, help="tokenbatch's max_batch_tokens (padded tokens)")
    parser.add_argument("--child", choices=PEERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(drive(args.child, workload(args.requests), args.clients, args.budget))))
        return
    rows = []
    for peer in args.peers:
        child = subprocess.Popen([sys.executable, "-m", "bench.python.seed_workload", "--child", peer,
                                  "--requests", str(args.requests), "--clients", str(args.clients),
                                  "--budget", str(args.budget)],
                                 stdout=subprocess.PIPE, text=True, cwd=REPO)
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            sys.exit(f"{peer} failed (status {status})")
        row = json.loads(out.strip().splitlines()[-1])
        row["peak_rss_mb"] = usage.ru_maxrss / 1024
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = next((r for r in rows if r["peer"] == "tokenbatch"), rows[0])
    print("\n| peer | requests/s (tokenbatch ÷ peer) | short p50 ms | short p99 ms | long p50 ms | long p99 ms | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['peer']} | {r['requests_per_s']:.1f} ({base['requests_per_s'] / r['requests_per_s']:.2f}×) | "
              f"{r['short_p50_ms']:.0f} | {r['short_p99_ms']:.0f} | {r['long_p50_ms']:.0f} | {r['long_p99_ms']:.0f} | "
              f"{r['peak_rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
