#!/usr/bin/env python3
"""Checks `tokenbatch simulate` against `tokenbatch bench` on this machine.

One command: calibrate the model (or take --calibration), then for every mix and
worker count simulate the workload on the calibrated device (saving it with
--save-workload) and run the same workload file through bench on the real
backend, every policy. Prints predicted against measured per policy:
throughput, short and long p50 and p99, mean batch size, peak forward memory,
and whether each is within the target (throughput and p50 within 15%, p99
within 25%, issue #21); exits 1 if any check misses. Standard library only; the figures belong in
docs/benchmarks.md ("Simulator fidelity") with this command.

Pointed at a GPU calibration (--calibration FILE --device cuda:0), the same
script checks the GPU predictions.
"""
import argparse
import json
import os
import subprocess
import sys

TARGETS = {"req/s": 0.15, "short p50": 0.15, "long p50": 0.15, "short p99": 0.25, "long p99": 0.25}


def run_json(cmd):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return {r["policy"]: r for r in json.loads(out)}


def metrics(r):
    lat = r["latency_ms"]
    return {
        "req/s": r["requests_per_s"],
        "short p50": lat["short"]["p50"], "short p99": lat["short"]["p99"],
        "long p50": lat["long"]["p50"], "long p99": lat["long"]["p99"],
        "mean batch": r["mean_batch_size"],
        "peak MiB": r["peak_forward_bytes"] / 2**20,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", help="TorchScript model (default: BUILD/cache/models/minilm.pt)")
    ap.add_argument("--model-id", help="Hugging Face model directory instead of --model")
    ap.add_argument("--calibration", help="an existing `calibrate --json` file (default: calibrate now)")
    ap.add_argument("--memory-limit", default="6GiB", help="calibrate --memory-limit")
    ap.add_argument("--threads", type=int, default=1, help="libtorch threads per forward (calibrate and bench)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--mixes", default="seed,long_tailed")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--max-batch-tokens", type=int, default=4096)
    ap.add_argument("--out", default="build/fidelity", help="folder for the calibration, workloads and JSON")
    a = ap.parse_args()

    tb = os.path.join(a.build, "src", "cli", "tokenbatch")
    model = ["--model-id", a.model_id] if a.model_id else [
        "--model", a.model or os.path.join(a.build, "cache", "models", "minilm.pt")]
    os.makedirs(a.out, exist_ok=True)
    cal = a.calibration
    if not cal:
        cal = os.path.join(a.out, "calibration.json")
        subprocess.run([tb, "calibrate", *model, "--device", a.device, "--memory-limit", a.memory_limit,
                        "--threads", str(a.threads), "--repeats", "2", "--json", cal], check=True,
                       stdout=subprocess.DEVNULL)

    rows, misses, checks = [], 0, 0
    for mix in a.mixes.split(","):
        workload = os.path.join(a.out, f"workload_{mix}.jsonl")
        for workers in a.workers.split(","):
            common = ["--max-batch-tokens", str(a.max_batch_tokens), "--workers", workers, "--json", "--no-progress"]
            sim = run_json([tb, "simulate", "--calibration", cal, "--mix", mix, "--requests", str(a.requests),
                            "--save-workload", workload, *common])
            real = run_json([tb, "bench", *model, "--device", a.device, "--threads", str(a.threads),
                             "--workload", workload, *common])
            for policy, measured in real.items():
                m, p = metrics(measured), metrics(sim[policy])
                cells = []
                for key in m:
                    ratio = p[key] / m[key] if m[key] else float("nan")
                    mark = ""
                    if key in TARGETS and m[key] > 0:
                        checks += 1
                        ok = abs(ratio - 1) <= TARGETS[key]
                        misses += 0 if ok else 1
                        mark = "" if ok else " ✗"
                    cells.append(f"{p[key]:.4g} / {m[key]:.4g} ({ratio:.2f}{mark})")
                rows.append(f"| {mix} | {workers} | {policy} | " + " | ".join(cells) + " |")

    keys = list(metrics(next(iter(real.values()))).keys())
    print("Predicted / measured (predicted ÷ measured); ✗: outside the target "
          "(throughput and p50 within 15%, p99 within 25%)\n")
    print("| mix | workers | policy | " + " | ".join(keys) + " |")
    print("|---|---:|---|" + "---:|" * len(keys))
    print("\n".join(rows))
    print(f"\n{checks - misses} of {checks} checks within the target.")
    print(f"calibration: {cal}", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
