"""`tokenbatch serve --model-id DIR` on a cross-encoder against
sentence-transformers' CrossEncoder on the same directory: every score must
match within |diff| <= 1e-4 (float32; --max-diff), and each query's documents
must come back in the same order.

    rerank_parity.py [--max-diff D] TOKENBATCH CROSS_ENCODER_DIR...

The pairs are real texts: queries are the repository corpus's short texts, each
paired with documents from the whole corpus (English, Chinese, emoji, accents,
code, and long documents that the model's limit cuts; some queries are long
too, so that both texts are cut, longest_first, as CrossEncoder cuts). A few
hundred pairs per directory, in both execution layouts (packed, padded):
  - a one-label directory (a reranker): TEI's /rerank with raw_scores false and
    true, and the Cohere-shaped /v1/rerank with top_n and documents, against
    CrossEncoder.predict with its activation and with none;
  - every directory: TEI's /predict on the pairs as a batch, against
    CrossEncoder.predict (softmax over the labels when there are several).
Prints one line per directory and layout with the worst difference.
"""
import argparse
import json
import os

import numpy as np
import torch
from sentence_transformers import CrossEncoder

from serving import Serving, post_json

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def corpus():
    """Non-blank corpus texts, less the documented tokenizer exceptions (as hf_parity.py)."""
    data = os.path.join(ROOT, "testdata", "tokenizer")
    with open(os.path.join(data, "exceptions.json"), encoding="utf-8") as f:
        excluded = {e["text"] for e in json.load(f)}
    out = []
    for name, step in (("corpus.jsonl", 1), ("realtext.jsonl", 7)):
        with open(os.path.join(data, name), encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        out += [r["text"] for r in rows[::step] if r["text"].strip() and r["name"] not in excluded]
    return out


def queries_and_documents(model, texts):
    """Short queries (3 to 24 tokens), long ones (over half the model's limit,
    which longest_first cuts as well as the document), and the documents: all."""
    counts = [len(model.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    short = [t for t, n in zip(texts, counts) if 3 <= n <= 24][:10]
    long = [t for t, n in zip(texts, counts) if n > model.max_seq_length // 2][:2]
    assert len(short) >= 8 and len(long) >= 2, f"only {len(short)} short and {len(long)} long texts for queries"
    return short, long, texts


def check_scores(label, got, want, max_diff):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
    diff = np.abs(got - want).max()
    assert diff <= max_diff, f"{label}: max |diff| {diff:.2e} at {np.unravel_index(np.argmax(np.abs(got - want)), got.shape)}"
    return diff


def check_order(label, got_indices, want_scores):
    """The server's order must be CrossEncoder's by score; scores closer than the
    tolerance may swap (their order is within float noise)."""
    want = np.asarray(want_scores)
    for a, b in zip(got_indices, got_indices[1:]):
        assert want[a] >= want[b] - 1e-5, f"{label}: document {a} ranked before {b} ({want[a]} < {want[b]})"


def check(args, model_dir, texts):
    model = CrossEncoder(model_dir, device="cpu")
    name = os.path.basename(os.path.normpath(model_dir))
    short, long, documents = queries_and_documents(model, texts)
    queries = short + long
    rows = []  # (query index, documents of this query)
    for qi, q in enumerate(queries):
        # A different spread of documents per query; fewer for a long query,
        # which the /predict body repeats with each.
        docs = documents[qi::3][:40 if qi < len(short) else 12]
        rows.append((q, docs))
    pairs = [(q, d) for q, docs in rows for d in docs]
    one_label = model.num_labels == 1
    want = model.predict(pairs, batch_size=32, convert_to_numpy=True,
                         apply_softmax=not one_label)
    want_raw = model.predict(pairs, batch_size=32, convert_to_numpy=True, activation_fn=torch.nn.Identity())
    # The check must be able to fail: scores spread far beyond the tolerance, and
    # some pairs are longer than the model's limit, so the cut is exercised.
    spread = float(np.std(want_raw))
    assert spread > 100 * args.max_diff, f"{name}: raw scores spread only {spread:.2e}"
    cut = sum(len(model.tokenizer(q, d)["input_ids"]) > model.max_seq_length for q, d in pairs)
    assert cut >= 10, f"{name}: only {cut} pairs exceed max_length {model.max_seq_length}"
    for execution in ("packed", "padded"):
        with Serving(args.tokenbatch, ["--model-id", model_dir, "--execution", execution, "--threads", "2",
                                       "--max-batch-tokens", "4096"]) as port:
            label = f"{name} {execution}"
            worst = 0.0
            status, predicted = post_json(port, "/predict", {"inputs": [list(p) for p in pairs]})
            assert status == 200, f"{label} /predict answered {status}: {predicted}"
            if one_label:
                got = [p[0]["score"] for p in predicted]
            else:  # labels in id order, from the answer sorted by score
                ids = {v: int(k) for k, v in model.config.id2label.items()}
                got = [[s for _, s in sorted((ids[x["label"]], x["score"]) for x in p)] for p in predicted]
            worst = max(worst, check_scores(f"{label} /predict", got, want, args.max_diff))
            if one_label:
                start = 0
                for q, docs in rows:
                    n = len(docs)
                    w, w_raw = want[start:start + n], want_raw[start:start + n]
                    for raw in (False, True):
                        status, ranked = post_json(port, "/rerank", {"query": q, "texts": docs, "raw_scores": raw})
                        assert status == 200, f"{label} /rerank answered {status}: {ranked}"
                        got = [0.0] * n
                        for r in ranked:
                            got[r["index"]] = r["score"]
                        worst = max(worst, check_scores(f"{label} /rerank raw={raw}", got, w_raw if raw else w,
                                                        args.max_diff))
                        check_order(f"{label} /rerank raw={raw}", [r["index"] for r in ranked], w)
                    status, cohere = post_json(port, "/v1/rerank", {"model": name, "query": q, "documents": docs,
                                                                     "top_n": 5})
                    assert status == 200, f"{label} /v1/rerank answered {status}: {cohere}"
                    results = cohere["results"]
                    assert len(results) == min(5, n), f"{label} /v1/rerank: {len(results)} results for top_n 5"
                    assert all(r["document"]["text"] == docs[r["index"]] for r in results), label
                    check_order(f"{label} /v1/rerank", [r["index"] for r in results], w)
                    assert set(r["index"] for r in results) <= set(np.argsort(-w)[:5 + 2]), (
                        f"{label} /v1/rerank top 5 {[r['index'] for r in results]} vs {list(np.argsort(-w)[:5])}")
                    worst = max(worst, check_scores(f"{label} /v1/rerank", [r["relevance_score"] for r in results],
                                                    [w[r["index"]] for r in results], args.max_diff))
                    start += n
        print(f"{label}: {len(pairs)} pairs ({len(queries)} queries, {cut} cut to {model.max_seq_length} tokens), "
              f"score spread {spread:.3f}, max |diff| {worst:.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-diff", type=float, default=1e-4)
    parser.add_argument("tokenbatch")
    parser.add_argument("model_dirs", nargs="+")
    args = parser.parse_args()
    texts = corpus()
    for model_dir in args.model_dirs:
        check(args, model_dir, texts)
    print("rerank parity passed")


if __name__ == "__main__":
    main()
