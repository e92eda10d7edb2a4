#!/usr/bin/env python3
"""Runtime overhead per request, two builds of tokenbatch side by side.

Runs build A's and build B's bench/runtime_overhead_bench alternately (A, B, A,
B, ...: drift on a shared machine hits both alike), one repetition each turn, and
prints, per configuration, the median and best µs per request of each build and
the ratio B / A. Use it to check that a runtime change keeps the per-request cost
(docs/benchmarks.md, "Runtime overhead per request").
Usage: python3 bench/compare_runtime_builds.py --a OLD_BUILD --b NEW_BUILD [--rounds 9]
"""
import argparse
import json
import pathlib
import statistics
import subprocess


def run_once(build):
    binary = pathlib.Path(build) / "bench" / "runtime_overhead_bench"
    out = subprocess.run([str(binary), "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    return {b["name"]: 1e6 / b["items_per_second"] for b in json.loads(out)["benchmarks"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, help="baseline build directory")
    parser.add_argument("--b", required=True, help="build directory under test")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    runs = {"a": {}, "b": {}}
    for _ in range(args.rounds):
        for side in ("a", "b"):
            for name, us in run_once(getattr(args, side)).items():
                runs[side].setdefault(name, []).append(us)
    print(f"| configuration | A median µs | B median µs | B/A median | A best | B best | B/A best |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in runs["a"]:
        a, b = runs["a"][name], runs["b"][name]
        am, bm, ab, bb = statistics.median(a), statistics.median(b), min(a), min(b)
        print(f"| {name} | {am:.3f} | {bm:.3f} | {bm / am:.3f} | {ab:.3f} | {bb:.3f} | {bb / ab:.3f} |")


if __name__ == "__main__":
    main()
