#!/usr/bin/env python3
"""Table of bench/peers/compare_servers.sh's results, and tokenbatch/Infinity ratios.

Reads the JSON Lines it wrote (one load_client.py report per server, mode and
load) and prints a Markdown table: requests/s, tokens/s (capped at the model's
length, the work the servers really do), p50/p99 latency per class (short,
long), server CPU µs per capped token, the slowest second's answers and the
seconds with none (stalls); then, per load and per tokenbatch server
(`tokenbatch`, `tokenbatch@DIR`), its requests/s and p99 as ratios of Infinity's.

Usage: python3 bench/peers/summarize_servers.py build/peers-cache/servers.jsonl
"""
import json
import sys


def cell(latency, cls, key):
    value = latency.get(cls, {}).get(key)
    return "-" if value is None else f"{value:,.0f}"


def stalls(r):
    """The fewest answers in one second of the window, and the seconds with none."""
    per_second = r.get("completions_per_second")
    if not per_second:
        return "-"
    return f"{min(per_second)} · {r.get('stalled_seconds', 0)}"


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    print("| server | load | req/s | tokens/s | short p50 / p99 ms | long p50 / p99 ms | CPU µs / token | errors "
          "| slowest second · stalled seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        load = f"{r['load']} conn" if r["mode"] == "closed" else f"{r['load']}/s Poisson"
        lat = r["latency"]
        print(f"| {r['server']} | {load} | {r['requests_per_s']:.2f} | {r.get('tokens_capped_per_s', 0):,.0f} | "
              f"{cell(lat, 'short', 'p50_ms')} / {cell(lat, 'short', 'p99_ms')} | "
              f"{cell(lat, 'long', 'p50_ms')} / {cell(lat, 'long', 'p99_ms')} | "
              f"{r.get('server_cpu_us_per_capped_token', 0):,.0f} | {r['error_count'] + r.get('dropped', 0)} | "
              f"{stalls(r)} |")
    by_key = {(r["server"], r["mode"], r["load"]): r for r in rows}
    print()
    print("| server | load | / Infinity req/s | p99 ratio (overall) |")
    print("|---|---|---|---|")
    for (server, mode, load), r in by_key.items():
        other = by_key.get(("infinity", mode, load))
        if not server.startswith("tokenbatch") or other is None or not other["requests_per_s"]:
            continue
        p99 = r["latency"]["overall"].get("p99_ms")
        p99_other = other["latency"]["overall"].get("p99_ms")
        name = f"{load} conn" if mode == "closed" else f"{load}/s Poisson"
        ratio_p99 = f"{p99 / p99_other:.3f}" if p99 and p99_other else "-"
        print(f"| {server} | {name} | {r['requests_per_s'] / other['requests_per_s']:.3f} | {ratio_p99} |")


if __name__ == "__main__":
    main()
