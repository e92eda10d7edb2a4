#!/usr/bin/env python3
"""Is a swing in CPU time per token ours or the machine's?

Runs two fixed amounts of work in alternating rounds and reports, for each,
the time per unit of work, each timed by its own process around the work alone
(loading and start-up left out):

  tokenbatch  `tokenbatch bench` on one saved workload (every text submitted at
              once, ours-length-aware, one intra-op thread): µs per token, from
              its tokens_per_s;
  gemm        a loop of torch.mm over all-MiniLM-L6-v2's own linear products
              (rows 1,024; (K, N) = (384, 384) x 4, (384, 1536), (1536, 384)),
              one thread, in a fresh process: µs per GFLOP, by time.perf_counter.
              No tokenbatch code runs in it.

Both run on one thread, on a machine with no other load, so their wall time is
the CPU time of the work. The rounds alternate (tokenbatch first in odd rounds, gemm first in
even ones). If the machine delivers a different amount of work per CPU second
from one round to the next (a busy SMT sibling or neighbour on the host, the
clock), the gemm loop swings as much as tokenbatch does, and the two move
together; if the swing were ours (allocator, threads, batch shapes), the gemm
loop would stay flat.

Prints one line per round, then for each workload its lowest and highest value
and their ratio, and the correlation between the two across rounds; --json
writes the same.

Usage (from the repository root, with the peers' environment):
  build/peers-venv/bin/python bench/peers/machine_stability.py --tokenbatch build/src/cli/tokenbatch \\
      --model-dir build/cache/models/all-MiniLM-L6-v2 --workload FILE [--rounds 8] [--gflop 300] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

GEMM_LOOP = r"""
import sys, time, torch
torch.set_num_threads(1)
gflop = float(sys.argv[1])
m, h, i = 1024, 384, 1536
shapes = [(h, h)] * 4 + [(h, i), (i, h)]
x = {k: torch.randn(m, k) for k in (h, i)}
w = [torch.randn(k, n) for k, n in shapes]
per_pass = sum(2 * m * k * n for k, n in shapes) / 1e9
for b in w:  # warm-up
    torch.mm(x[b.shape[0]], b)
passes = max(1, round(gflop / per_pass))
start = time.perf_counter()
for _ in range(passes):
    for b in w:
        torch.mm(x[b.shape[0]], b)
print((time.perf_counter() - start) * 1e6 / (passes * per_pass))
"""


def run_tokenbatch(args):
    done = subprocess.run([args.tokenbatch, "bench", "--model-id", args.model_dir, "--workload", args.workload,
                           "--policies", "ours-length-aware", "--threads", "1", "--max-positions",
                           str(args.max_positions), "--intra-op", "fixed", "--json", "--no-progress"],
                          check=True, capture_output=True, text=True)
    return 1e6 / json.loads(done.stdout)[0]["tokens_per_s"]


def run_gemm(args):
    done = subprocess.run([sys.executable, "-c", GEMM_LOOP, str(args.gflop)], check=True, capture_output=True,
                          text=True)
    return float(done.stdout)


def spread(values):
    return {"lowest": min(values), "highest": max(values), "highest_over_lowest": max(values) / min(values)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenbatch", required=True, help="the tokenbatch binary")
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--workload", required=True, help="a saved workload (simulate --save-workload)")
    parser.add_argument("--max-positions", type=int,
                        help="truncate each text to this many tokens (default: the model directory's "
                             "max_seq_length, from sentence_bert_config.json)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--gflop", type=float, default=300.0, help="GFLOP per gemm round")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.max_positions is None:
        with open(os.path.join(args.model_dir, "sentence_bert_config.json")) as config:
            args.max_positions = json.load(config)["max_seq_length"]

    rounds = []
    for r in range(args.rounds):
        order = ("tokenbatch", "gemm") if r % 2 == 0 else ("gemm", "tokenbatch")
        row = {}
        for name in order:
            row[name] = run_tokenbatch(args) if name == "tokenbatch" else run_gemm(args)
        rounds.append(row)
        print(f"round {r + 1}: tokenbatch {row['tokenbatch']:.1f} µs/token, gemm {row['gemm']:.0f} µs/GFLOP",
              flush=True)

    ours = [row["tokenbatch"] for row in rounds]
    gemm = [row["gemm"] for row in rounds]
    result = {"rounds": rounds, "gflop_per_round": args.gflop,
              "tokenbatch": spread(ours), "gemm": spread(gemm),
              "correlation": statistics.correlation(ours, gemm) if len(rounds) > 2 else None}
    for name in ("tokenbatch", "gemm"):
        s = result[name]
        print(f"{name}: lowest {s['lowest']:.1f}, highest {s['highest']:.1f}, highest / lowest "
              f"{s['highest_over_lowest']:.3f}")
    if result["correlation"] is not None:
        print(f"correlation across rounds: {result['correlation']:.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
