"""Writes the cross-encoder the rerank comparison serves: all-MiniLM-L6-v2's
encoder (real weights, the shape of the ms-marco-MiniLM-L-6-v2 rerankers: 6
layers, 384 wide) under a BertForSequenceClassification head with one label,
the head random (seeded), saved by sentence-transformers' CrossEncoder with its
tokenizer. No PyPI package ships a trained cross-encoder, and the comparison
measures speed, which a trained head does not change. The scores are not
meaningful as relevance; both servers must still agree on them.

    build/peers-venv/bin/python bench/peers/make_reranker.py MINILM_DIR OUT_DIR

Idempotent: an OUT_DIR with config.json is kept.
"""
import os
import shutil
import sys

import torch
import transformers
from sentence_transformers import CrossEncoder


def main():
    source, out = sys.argv[1], sys.argv[2]
    if os.path.exists(os.path.join(out, "config.json")):
        return
    torch.manual_seed(7)
    model = transformers.BertForSequenceClassification.from_pretrained(source, num_labels=1)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if os.path.exists(os.path.join(source, name)):
            shutil.copy(os.path.join(source, name), os.path.join(tmp, name))
    CrossEncoder(tmp, device="cpu", max_length=512).save(out)
    shutil.rmtree(tmp)
    print(f"make_reranker: wrote {out}")


if __name__ == "__main__":
    main()
