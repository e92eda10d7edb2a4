#!/usr/bin/env python3
"""Checks that a running server embeds like sentence-transformers on the same model.

Posts a few texts (one at a time, so no server-side batching changes them) to an
OpenAI-style embeddings route and compares each vector with
SentenceTransformer(DIR, device="cpu").encode(...): cosine must exceed --min-cos.
It proves the peer loaded the real weights and pools like the reference, so its
timings are for the same computation. Exits 1 on a mismatch or a bad reply.
Usage, from the repository root:
  build/peers-venv/bin/python -m bench.peers.embed_parity \\
      --url http://127.0.0.1:7997/embeddings --model-dir build/cache/models/all-MiniLM-L6-v2
"""
import argparse
import json
import os
import sys

from bench.harness.http_client import post_json

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TEXTS = [
    "A man is playing a guitar on the stage.",
    "The quick brown fox jumps over the lazy dog near the riverbank at dawn.",
    "Token-budget batching packs requests of similar length together.",
]


def fetch(url, model, text):
    return post_json(url, {"input": text, "model": model}, timeout=60)["data"][0]["embedding"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="all-MiniLM-L6-v2", help="the request's model field")
    ap.add_argument("--model-dir", required=True, help="sentence-transformers directory")
    ap.add_argument("--min-cos", type=float, default=0.9999)
    args = ap.parse_args()

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)  # the server under test keeps the cores
    st = SentenceTransformer(args.model_dir, device="cpu")
    ref = st.encode(TEXTS, convert_to_numpy=True)
    worst = 1.0
    for text, r in zip(TEXTS, ref):
        got = np.asarray(fetch(args.url, args.model, text), dtype=np.float64)
        if got.shape != r.shape:
            sys.exit(f"embed_parity: dims {got.shape} != reference {r.shape}")
        cos = float(got @ r / (np.linalg.norm(got) * np.linalg.norm(r)))
        worst = min(worst, cos)
    print(json.dumps({"texts": len(TEXTS), "dims": int(ref.shape[1]), "min_cosine": round(worst, 7)}))
    if worst <= args.min_cos:
        sys.exit(f"embed_parity: cosine {worst} <= {args.min_cos}")


if __name__ == "__main__":
    main()
