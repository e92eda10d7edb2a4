"""`tokenbatch serve` on sparse (SPLADE) model directories against references
computed on the same directory: every weight of /embed_sparse must match within
|diff| <= 1e-4 (float32; --max-diff), and its ids must be the reference's ids
above 0 (a weight within the tolerance of 0 may be either side).

    sparse_parity.py [--max-diff D] TOKENBATCH SPARSE_DIR...

References:
  - a BertForMaskedLM directory (no modules.json, TEI's splade pooling): the
    weights computed with transformers, AutoModelForMaskedLM's logits through
    max over the tokens of log(1 + relu(logit)), with the attention mask;
  - a SparseEncoder directory (modules.json with SpladePooling): its
    SparseEncoder.encode, and the same formula from transformers with the
    module's pooling and activation, which must agree with it.
The texts are the repository corpus's (English, Chinese, emoji, code, long ones
the model's limit cuts), in both execution layouts (packed, padded), and
top_k and threshold are checked against the reference's largest weights.
Prints one line per directory and layout with the worst difference.
"""
import argparse
import json
import os

import numpy as np
import torch
import transformers

from rerank_parity import corpus
from serving import Serving, post_json


def splade_settings(model_dir):
    """(max pooling, log1p twice) as the directory's SpladePooling says; TEI's
    defaults (max, relu) without one."""
    modules = os.path.join(model_dir, "modules.json")
    if not os.path.exists(modules):
        return True, False
    with open(modules) as f:
        pooling = [m for m in json.load(f) if m["type"].endswith("SpladePooling")][0]
    with open(os.path.join(model_dir, pooling["path"], "config.json")) as f:
        config = json.load(f)
    return config.get("pooling_strategy", "max") == "max", config.get("activation_function", "relu") == "log1p_relu"


def transformers_reference(model_dir, texts, max_length):
    """Dense [len(texts), vocab] weights from AutoModelForMaskedLM's logits."""
    use_max, twice = splade_settings(model_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForMaskedLM.from_pretrained(model_dir).eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(texts), 16):
            batch = tokenizer(texts[start:start + 16], padding=True, truncation=True, max_length=max_length,
                              return_tensors="pt")
            logits = model(**batch).logits
            w = torch.log1p(torch.relu(logits))
            if twice:
                w = torch.log1p(w)
            w = w * batch["attention_mask"].unsqueeze(-1)
            out.append((w.max(dim=1).values if use_max else w.sum(dim=1)).numpy())
    return np.concatenate(out)


def sparse_encoder_reference(model_dir, texts):
    from sentence_transformers import SparseEncoder
    encoder = SparseEncoder(model_dir, device="cpu")
    return encoder.encode(texts, batch_size=16, convert_to_tensor=True).to_dense().numpy(), encoder.max_seq_length


def dense(pairs, vocab):
    v = np.zeros(vocab, dtype=np.float64)
    ids = [p["index"] for p in pairs]
    assert ids == sorted(set(ids)), "ids must ascend, each once"
    for p in pairs:
        v[p["index"]] = p["value"]
    return v


def check(args, model_dir, texts):
    name = os.path.basename(os.path.normpath(model_dir))
    with open(os.path.join(model_dir, "tokenizer_config.json")) as f:
        max_length = json.load(f)["model_max_length"]
    want = transformers_reference(model_dir, texts, max_length)
    vocab = want.shape[1]
    if os.path.exists(os.path.join(model_dir, "modules.json")):
        st, st_max_length = sparse_encoder_reference(model_dir, texts)
        assert st_max_length == max_length, f"{name}: SparseEncoder cuts at {st_max_length}, not {max_length}"
        agree = np.abs(st - want).max()
        assert agree <= args.max_diff, f"{name}: SparseEncoder and transformers differ by {agree:.2e}"
    # The check must be able to fail: many weights, spread far beyond the tolerance.
    nonzero = (want > 0).sum(axis=1)
    assert nonzero.min() >= 10 and want.max() > 100 * args.max_diff, f"{name}: {nonzero.min()} weights at least"
    for execution in ("packed", "padded"):
        with Serving(args.tokenbatch, ["--model-id", model_dir, "--execution", execution, "--threads", "2"]) as port:
            label = f"{name} {execution}"
            worst = 0.0
            for start in range(0, len(texts), 32):
                chunk = texts[start:start + 32]
                status, got = post_json(port, "/embed_sparse", {"inputs": chunk})
                assert status == 200, f"{label} /embed_sparse answered {status}: {got}"
                for i, pairs in enumerate(got):
                    w = want[start + i]
                    v = dense(pairs, vocab)
                    diff = np.abs(v - w).max()
                    worst = max(worst, diff)
                    assert diff <= args.max_diff, f"{label} text {start + i}: max |diff| {diff:.2e}"
                    clear = (w > args.max_diff) != (v > 0)
                    clear &= np.abs(w) > args.max_diff
                    assert not clear.any(), f"{label} text {start + i}: ids {np.flatnonzero(clear)[:5]} differ"
            # top_k and threshold cut each answer to the reference's largest weights.
            text, w = texts[0], want[0]
            status, got = post_json(port, "/embed_sparse", {"inputs": text, "top_k": 8})
            assert status == 200 and len(got[0]) == 8, f"{label} top_k: {status} {got}"
            kth = np.sort(w)[-8]
            assert all(w[p["index"]] >= kth - args.max_diff for p in got[0]), f"{label} top_k kept a smaller weight"
            threshold = float(np.median(w[w > 0]))
            status, got = post_json(port, "/embed_sparse", {"inputs": text, "threshold": threshold})
            assert status == 200, f"{label} threshold: {status} {got}"
            kept = {p["index"] for p in got[0]}
            assert all(p["value"] >= threshold for p in got[0]), f"{label} threshold kept a smaller weight"
            assert abs(len(kept) - int((w >= threshold).sum())) <= 2, f"{label} threshold kept {len(kept)}"
        print(f"{label}: {len(texts)} texts, {int(nonzero.mean())} weights per text on average, "
              f"max |diff| {worst:.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-diff", type=float, default=1e-4)
    parser.add_argument("tokenbatch")
    parser.add_argument("dirs", nargs="+")
    args = parser.parse_args()
    texts = corpus()[:160]
    for model_dir in args.dirs:
        check(args, model_dir, texts)


if __name__ == "__main__":
    main()
