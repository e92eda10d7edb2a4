#!/usr/bin/env python3
"""What fraction of this CPU's GEMM rate a `tokenbatch bench` run reached.

The useful work of a run is each request's forward at its own length L (capped
at --max-tokens, as the model truncates), with bench/peers/gemm_ceiling.py's
count per token: N_l * (2*(4*H^2 + 2*H*I) + 2*2*L*H) FLOPs. Padding is not
useful work, so it counts against the fraction. The achieved rate is that sum
over the run's makespan; the ceiling is gemm_ceiling.py's "model" rate (one
layer's linear products at the largest M) for the same thread count, the best
of numpy (OpenBLAS) and torch.mm. Also prints the equivalent ceiling in tokens/s
for the workload's mix of lengths.

Usage:
  python3 bench/peers/ceiling_fraction.py --workload W.jsonl --bench-json B.json \\
      --gemm-json G.json --threads 1 [--max-tokens 256] [--model-dir DIR]
"""
import argparse
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", required=True, help="JSON Lines with a tokens field per request")
    ap.add_argument("--bench-json", required=True, help="`tokenbatch bench --json` output (first policy used)")
    ap.add_argument("--gemm-json", required=True, help="`gemm_ceiling.py --json-only` output")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--model-dir", default=str(ROOT / "build/cache/models/all-MiniLM-L6-v2"))
    args = ap.parse_args()

    cfg = json.load(open(pathlib.Path(args.model_dir) / "config.json"))
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    lengths = [min(json.loads(line)["tokens"], args.max_tokens) for line in open(args.workload) if line.strip()]
    linear = 2 * (4 * h * h + 2 * h * inter)
    useful = sum(layers * (linear * n + 2 * 2 * n * n * h) for n in lengths)
    tokens = sum(lengths)

    bench = json.load(open(args.bench_json))[0]
    gemm = json.load(open(args.gemm_json))
    rates = {k: v["model"] for k, v in gemm["rates_gflops"].items() if k.endswith(f"-{args.threads}t")}
    best_lib, best = max(rates.items(), key=lambda kv: kv[1])
    achieved = useful / bench["makespan_s"] / 1e9
    ceiling_tokens = best * 1e9 / (useful / tokens)
    print(json.dumps({
        "requests": len(lengths), "tokens": tokens, "useful_gflop": round(useful / 1e9, 1),
        "makespan_s": bench["makespan_s"], "tokens_per_s": round(tokens / bench["makespan_s"], 1),
        "achieved_gflops": round(achieved, 2), "gemm_gflops": best, "gemm_lib": best_lib,
        "fraction_of_ceiling": round(achieved / best, 3),
        "ceiling_tokens_per_s": round(ceiling_tokens, 1),
        "mean_mflop_per_token": round(useful / tokens / 1e6, 2),
    }, indent=1))


if __name__ == "__main__":
    main()
