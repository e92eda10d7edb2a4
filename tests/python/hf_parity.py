"""`tokenbatch serve --model-id DIR` against sentence-transformers on the same
directory: the embeddings must match within cosine >= 0.99999 and max |diff| <=
1e-4 per embedding (float32; the defaults).

    hf_parity.py [--device cuda:0] [--dtype bfloat16] [--min-cosine C] [--max-diff D] TOKENBATCH MODEL_DIR...

--device and --dtype apply to both sides (sentence-transformers loads the model
in that dtype on that device); lower precisions need looser bounds.

For each directory, sentence-transformers (PyPI, pinned in
scripts/requirements.txt) embeds a few hundred real texts (the repository's
tokenizer corpus: English, Chinese, emoji, accents, code, and long documents that
both truncate at the model's max_seq_length). Then the server embeds them, in
both execution layouts (packed and padded), batched through /v1/embeddings and
one at a time through TEI's /embed, and with a prompt (`prompt_name`) through
both routes. Each layout runs with the default attention (`--attn-implementation
auto`); where /info says that is a fused kernel (libtorch >= 2: sdpa, or the
CUDA varlen kernels), it runs again with the eager one, and the two must also
agree with each other (--min-kernel-cosine, --max-kernel-diff).
--expect-packed-attention / --expect-padded-attention assert the kernel /info
names. Prints one line per directory and layout with the worst figures.
"""
import argparse
import json
import os
import urllib.request

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from serving import Serving, post_json

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def texts():
    """Non-blank corpus texts: every corner case and every 10th real text, less the
    documented tokenizer exceptions (testdata/tokenizer/exceptions.json: code points
    newer than Debian's Unicode tables), which are a tokenizer matter, not a model one."""
    data = os.path.join(ROOT, "testdata", "tokenizer")
    with open(os.path.join(data, "exceptions.json"), encoding="utf-8") as f:
        excluded = {e["text"] for e in json.load(f)}
    out = []
    for name, step in (("corpus.jsonl", 1), ("realtext.jsonl", 10)):
        with open(os.path.join(data, name), encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        out += [r["text"] for r in rows[::step] if r["text"].strip() and r["name"] not in excluded]
    return out


def compare(label, got, want, bounds):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    diff = np.abs(got - want).max(1)
    worst = int(np.argmin(cos))
    assert cos.min() >= bounds.min_cosine and diff.max() <= bounds.max_diff, (
        f"{label}: min cosine {cos.min():.8f} (text {worst}), max |diff| {diff.max():.2e} (text {int(np.argmax(diff))})")
    return cos.min(), diff.max()


def embed_openai(port, inputs, **extra):
    out = []
    for i in range(0, len(inputs), 64):
        status, body = post_json(port, "/v1/embeddings", {"input": inputs[i:i + 64], **extra})
        assert status == 200, f"/v1/embeddings answered {status}: {body}"
        out += [d["embedding"] for d in sorted(body["data"], key=lambda d: d["index"])]
    return out


def embed_tei(port, inputs, **extra):
    out = []
    for text in inputs:
        status, body = post_json(port, "/embed", {"inputs": text, **extra})
        assert status == 200, f"/embed answered {status}: {body}"
        out += body
    return out


def check(args, model_dir, corpus):
    model = SentenceTransformer(model_dir, device=args.device,
                                model_kwargs={"dtype": getattr(torch, args.dtype)})
    want = model.encode(corpus, batch_size=32, convert_to_numpy=True)
    # A prompt with text (sentence-transformers adds empty "query"/"document" ones
    # to models whose configuration has none).
    prompt = "query" if (model.prompts or {}).get("query") else None
    few = corpus[:24]
    want_prompted = model.encode(few, prompt_name=prompt, convert_to_numpy=True) if prompt else None
    name = os.path.basename(os.path.normpath(model_dir))
    for execution in ("packed", "padded"):
        # The default kernel first; where that is a fused one (libtorch >= 2), the
        # eager path too, and the two against each other.
        runs = {}
        for attention in ("auto", "eager"):
            if attention == "eager" and runs["auto"][0] == "eager":
                break
            runs[attention] = serve_and_compare(args, model_dir, name, execution, attention, corpus, few, want,
                                                prompt, want_prompted)
        kernel, got, cos, diff = runs["auto"]
        expected = getattr(args, f"expect_{execution}_attention")
        assert expected is None or kernel == expected, (
            f"{name} {execution}: /info attention {kernel!r}, expected {expected!r}")
        line = f"{name} {execution} {args.device} {args.dtype}, attention {kernel}: {len(corpus)} texts, " \
               f"min cosine {cos:.8f}, max |diff| {diff:.2e}{', prompt ' + prompt if prompt else ''}"
        if "eager" in runs:
            fused_cos, fused_diff = compare(f"{name} {execution} {kernel} against eager", got, runs["eager"][1],
                                            argparse.Namespace(min_cosine=args.min_kernel_cosine,
                                                               max_diff=args.max_kernel_diff))
            line += f"; eager: min cosine {runs['eager'][2]:.8f}; {kernel} against eager: min cosine " \
                    f"{fused_cos:.8f}, max |diff| {fused_diff:.2e}"
        print(line)


def serve_and_compare(args, model_dir, name, execution, attention, corpus, few, want, prompt, want_prompted):
    """One server with this layout and attention implementation, checked against
    sentence-transformers. Returns (kernel from /info, corpus embeddings, worst
    cosine, worst |diff|)."""
    with Serving(args.tokenbatch, ["--model-id", model_dir, "--execution", execution, "--oversize", "truncate",
                                   "--threads", "2", "--max-batch-tokens", "16384", "--device", args.device,
                                   "--dtype", args.dtype, "--attn-implementation", attention]) as port:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/info", timeout=10) as r:
            info = json.loads(r.read())
        kernel = info["attention"]
        label = f"{name} {execution} {args.device} {args.dtype} attention {kernel}"
        # Each layout is budgeted by what it computes unless flags say otherwise.
        want_cost = ("sum", 0.0) if execution == "packed" else ("padded", 0.85)
        got_cost = (info["scheduler"]["cost_model"], info["scheduler"]["min_padding_efficiency"])
        assert got_cost == want_cost, f"{label}: /info scheduler {got_cost}, expected {want_cost}"
        got = embed_openai(port, corpus)
        figures = [compare(f"{label} /v1/embeddings", got, want, args),
                   compare(f"{label} /embed", embed_tei(port, few), want[:len(few)], args)]
        if prompt:
            figures.append(compare(f"{label} prompt_name /v1/embeddings",
                                   embed_openai(port, few, prompt_name=prompt), want_prompted, args))
            figures.append(compare(f"{label} prompt_name /embed",
                                   embed_tei(port, few, prompt_name=prompt), want_prompted, args))
    return kernel, got, min(f[0] for f in figures), max(f[1] for f in figures)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--min-cosine", type=float, default=0.99999)
    parser.add_argument("--max-diff", type=float, default=1e-4)
    parser.add_argument("--min-kernel-cosine", type=float, default=0.999999,
                        help="the fused attention kernel against the eager one, same server otherwise")
    parser.add_argument("--max-kernel-diff", type=float, default=2e-5)
    parser.add_argument("--expect-packed-attention", help="the kernel /info must name for packed (e.g. flash_varlen)")
    parser.add_argument("--expect-padded-attention", help="the kernel /info must name for padded (e.g. sdpa)")
    parser.add_argument("tokenbatch")
    parser.add_argument("model_dirs", nargs="+")
    args = parser.parse_args()
    corpus = texts()
    for model_dir in args.model_dirs:
        check(args, model_dir, corpus)
    print("hf parity passed")


if __name__ == "__main__":
    main()
