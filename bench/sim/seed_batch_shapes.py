"""Runs the seed note's own Python scheduler on a saved workload and reports the
shapes of the batches it forms.

The scheduler class is extracted from the design note at run time
(bench/seed_scheduler.py); nothing of it is copied here. Its gpu_worker is a stub
that records each batch and returns at once, so only the packing is measured.
The seed estimates tokens as characters (len(text)); the real token counts of the
workload file (written by `tokenbatch simulate --save-workload`) give each
batch's true Σ tokens and padded cost B·Lmax.

  tokenbatch simulate --save-workload /tmp/seed.jsonl
  python3 -m bench.sim.seed_batch_shapes /tmp/seed.jsonl [--budget 4096]   # from the repository root
"""
import argparse
import asyncio
import json

from bench.seed_scheduler import extract_seed_scheduler


async def run(requests, budget):
    scheduler_class = extract_seed_scheduler()
    tokens_of = {}
    batches = []

    async def gpu_worker(texts):
        batches.append([tokens_of[id(t)] for t in texts])
        return [None] * len(texts)

    scheduler = scheduler_class(gpu_worker, max_token_budget_per_batch=budget)
    await scheduler.start()
    texts = []
    for r in requests:
        text = str(r["text"])  # a distinct object per request, to map back to its tokens
        tokens_of[id(text)] = r["tokens"]
        texts.append(text)
    await asyncio.gather(*(scheduler.submit(t) for t in texts))
    scheduler._is_running = False
    scheduler._loop_task.cancel()
    return batches


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("workload")
    parser.add_argument("--budget", type=int, default=4096)
    args = parser.parse_args()
    requests = [json.loads(line) for line in open(args.workload, encoding="utf-8") if line.strip()]
    batches = asyncio.run(run(requests, args.budget))
    real = sum(sum(b) for b in batches)
    padded = sum(len(b) * max(b) for b in batches)
    over = sum(1 for b in batches if len(b) * max(b) > args.budget)
    sizes = sorted(len(b) for b in batches)
    print(f"seed scheduler (budget {args.budget} characters as tokens): {len(batches)} batches for "
          f"{len(requests)} requests, mean batch size {len(requests) / len(batches):.1f} "
          f"(min {sizes[0]}, median {sizes[len(sizes) // 2]}, max {sizes[-1]})")
    print(f"padding efficiency (real tokens / B*Lmax): {real / padded:.3f}; "
          f"batches over {args.budget} padded tokens: {over}/{len(batches)}; "
          f"largest padded cost: {max(len(b) * max(b) for b in batches)}")


if __name__ == "__main__":
    main()
