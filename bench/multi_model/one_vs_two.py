"""An embedder and a cross-encoder in one `tokenbatch serve` against the same
two models in two processes: throughput and peak resident memory.

    build/venv/bin/python -m bench.multi_model.one_vs_two [--seconds 30] [--rounds 3]

The models: the real all-MiniLM-L6-v2 (scripts/prepare_assets.sh) and a
cross-encoder of its encoder under a random one-label head
(bench/peers/make_reranker.py, written to build/bench-models). Every round
runs both layouts for --seconds each, in alternating order, with the same load:
--embed-clients closed-loop clients POSTing one text each to /v1/embeddings
and --rerank-clients POSTing a query with 20 documents to /v1/rerank, texts
from the seed mix (bench/peers: fortunes and licence passages). Both layouts
use the same flags per model (--threads 1: one core each on this machine).
Peak RSS is each server process's VmHWM at the end of its run (for two
processes, their sum). Prints a Markdown table per round and the medians of
the ratios, one process over two.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from bench.harness import ports, processes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.path.join(ROOT, "build", "src", "cli", "tokenbatch")
MINILM = os.path.join(ROOT, "build", "cache", "models", "all-MiniLM-L6-v2")
RERANKER = os.path.join(ROOT, "build", "bench-models", "minilm-reranker")
FLAGS = ["--threads", "1"]


def texts() -> list[str]:
    """The seed mix's texts, as `tokenbatch simulate --save-workload` generates them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.jsonl")
        subprocess.run([BINARY, "simulate", "--requests", "2000", "--save-workload", path], check=True,
                       stdout=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as f:
            return [json.loads(line)["text"] for line in f]


def hwm_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise processes.HarnessError(f"no VmHWM for {pid}")


def start(args: list[str], port: int, name: str, registry: processes.Registry):
    log = registry.log_path(name)
    proc = registry.spawn([BINARY, "serve", "--port", str(port), *args, *FLAGS], log)
    probe = lambda: ports.accepts(port) and urllib.request.urlopen(f"http://127.0.0.1:{port}/health").status == 200
    if not processes.wait_until(proc, probe, timeout_s=120):
        raise processes.HarnessError(f"server on {port} did not start:\n{processes.log_tail(log)}")
    return proc


def post(port: int, path: str, body: dict) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()


def load(embed_port: int, rerank_port: int, corpus: list[str], args) -> dict:
    """Closed-loop clients for `args.seconds`; counts of what was answered."""
    stop = time.monotonic() + args.seconds
    counts = {"embeddings": 0, "rerank_documents": 0, "errors": 0}
    lock = threading.Lock()

    def embed(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop:
            try:
                post(embed_port, "/v1/embeddings", {"model": "embed", "input": rng.choice(corpus)})
                key, n = "embeddings", 1
            except OSError:
                key, n = "errors", 1
            with lock:
                counts[key] += n

    def rerank(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop:
            docs = rng.sample(corpus, 20)
            try:
                post(rerank_port, "/v1/rerank", {"model": "rerank", "query": rng.choice(corpus)[:80], "documents": docs})
                key, n = "rerank_documents", 20
            except OSError:
                key, n = "errors", 1
            with lock:
                counts[key] += n

    threads = [threading.Thread(target=embed, args=(i,)) for i in range(args.embed_clients)]
    threads += [threading.Thread(target=rerank, args=(100 + i,)) for i in range(args.rerank_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {k: v / args.seconds if k != "errors" else v for k, v in counts.items()}


def run_layout(layout: str, corpus: list[str], args, tmp: str) -> dict:
    registry = processes.Registry(tmp)
    try:
        if layout == "one process":
            port = ports.free_ports(1)[0]
            proc = start(["--model-id", MINILM, "--served-model-name", "embed", "--model-id", RERANKER,
                          "--served-model-name", "rerank"], port, "one", registry)
            result = load(port, port, corpus, args)
            result["peak_rss_mib"] = hwm_bytes(proc.pid) / 2**20
        else:
            embed_port, rerank_port = ports.free_ports(2)
            embed = start(["--model-id", MINILM, "--served-model-name", "embed"], embed_port,
                          "embed", registry)
            rerank = start(["--model-id", RERANKER, "--served-model-name", "rerank"], rerank_port,
                           "rerank", registry)
            result = load(embed_port, rerank_port, corpus, args)
            result["peak_rss_mib"] = (hwm_bytes(embed.pid) + hwm_bytes(rerank.pid)) / 2**20
        return result
    finally:
        registry.kill_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--embed-clients", type=int, default=8)
    parser.add_argument("--rerank-clients", type=int, default=2)
    args = parser.parse_args()
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "peers", "make_reranker.py"), MINILM, RERANKER],
                   check=True)
    corpus = texts()
    ratios = {"embeddings": [], "rerank_documents": [], "peak_rss_mib": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ["one process", "two processes"] if r % 2 == 0 else ["two processes", "one process"]
            results = {layout: run_layout(layout, corpus, args, tmp) for layout in order}
            print(f"\nround {r + 1} ({args.seconds:g} s each, {args.embed_clients} embedding and "
                  f"{args.rerank_clients} rerank clients)\n")
            print("| layout | embeddings/s | rerank documents/s | errors | peak RSS MiB |\n|---|---:|---:|---:|---:|")
            for layout in ("one process", "two processes"):
                x = results[layout]
                print(f"| {layout} | {x['embeddings']:.1f} | {x['rerank_documents']:.1f} | {x['errors']} | "
                      f"{x['peak_rss_mib']:.0f} |")
            for k in ratios:
                ratios[k].append(results["one process"][k] / results["two processes"][k])
    print("\none process / two processes, median of the rounds: " +
          ", ".join(f"{k} {statistics.median(v):.2f}x" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
