#!/usr/bin/env python3
"""Pure model compute on CPU for padded batch shapes: ONNX Runtime and PyTorch eager.

Exports the model directory's encoder (transformers AutoModel, e.g. BertModel;
output last_hidden_state, batch and sequence axes dynamic) to ONNX once, cached
under build/peers-cache/, then times ONNX Runtime (CPUExecutionProvider,
intra_op_num_threads=--threads, sequential execution, all graph optimisations)
on each [B, L] of a JSON list. Inputs are random valid token ids, an all-ones
attention mask and zero token_type_ids: every position is real work, so the
numbers are the compute of a batch already padded to L. A warm-up pass over all
the shapes runs first (ORT and torch allocate per new shape), then each shape is
run --repeats times and its median kept. --backend torch (or both) times the same
shapes with PyTorch eager (torch.set_num_threads), for comparison.
Pooling and normalisation are left out: they are negligible next to the encoder.
Prints JSON: per shape the median ms, the total over the list, and tokens/s
(sum of B*L over that total).
Usage:
  build/peers-venv/bin/python bench/peers/onnx_compute.py bench/peers/shapes_example.json \\
      --model-dir build/cache/models/all-MiniLM-L6-v2 --threads 2 [--backend both]
"""
import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = pathlib.Path(__file__).resolve().parents[2]
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def load_encoder(model_dir):
    import torch
    from transformers import AutoModel

    class LastHidden(torch.nn.Module):
        """Returns a plain tensor: what the exporter and ORT take most simply."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    model = AutoModel.from_pretrained(model_dir).eval()
    return model, LastHidden(model).eval()


def export(model_dir, out_path, opset):
    import torch

    model, wrapper = load_encoder(model_dir)
    dummy = tuple(torch.ones(2, 16, dtype=torch.long) for _ in INPUTS)
    batch, seq = torch.export.Dim("batch", min=1, max=4096), torch.export.Dim("seq", min=2, max=512)
    shapes = {name: {0: batch, 1: seq} for name in INPUTS}
    tmp = out_path.with_suffix(".tmp.onnx")
    # dynamo=True is torch's current exporter (needs onnxscript); external data
    # is folded back into one file so the cache is a single path.
    # The exporter reports progress on stdout, which must carry only the JSON.
    with contextlib.redirect_stdout(sys.stderr):
        program = torch.onnx.export(wrapper, dummy, input_names=list(INPUTS),
                                    output_names=["last_hidden_state"], dynamic_shapes=shapes,
                                    opset_version=opset, dynamo=True)
        program.save(str(tmp), external_data=False)
    diff = check_export(wrapper, tmp)
    tmp.rename(out_path)
    return diff


def check_export(wrapper, onnx_path):
    """The exported graph must compute what the torch module does, at a shape
    other than the export's dummy one (proves the axes really are dynamic)."""
    import numpy as np
    import onnxruntime as ort
    import torch

    feed = random_inputs(wrapper.model.config.vocab_size, 3, 37, 0)
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in sess.get_inputs()}
    got = sess.run(None, {k: v for k, v in feed.items() if k in wanted})[0]
    with torch.inference_mode():
        ref = wrapper(*(torch.from_numpy(feed[k]) for k in INPUTS)).numpy()
    diff = float(np.abs(got - ref).max())
    if diff > 1e-3:
        onnx_path.unlink()
        raise SystemExit(f"onnx_compute: exported graph differs from torch (max abs diff {diff})")
    return diff


def random_inputs(vocab, b, l, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocab, size=(b, l), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP], as the tokenizer frames a text
    return {"input_ids": ids, "attention_mask": np.ones((b, l), np.int64),
            "token_type_ids": np.zeros((b, l), np.int64)}


def time_shapes(run, shapes, vocab, repeats):
    feeds = [random_inputs(vocab, b, l, i) for i, (b, l) in enumerate(shapes)]
    for f in feeds:  # warm-up pass
        run(f)
    rows = []
    for (b, l), f in zip(shapes, feeds):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run(f)
            times.append(time.perf_counter() - t0)
        rows.append({"batch": b, "len": l, "median_ms": round(statistics.median(times) * 1e3, 3)})
    total_ms = sum(r["median_ms"] for r in rows)
    tokens = sum(b * l for b, l in shapes)
    return {"shapes": rows, "total_ms": round(total_ms, 3), "tokens": tokens,
            "tokens_per_s": round(tokens / (total_ms / 1e3), 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", help='JSON file: [[B, L], ...]')
    ap.add_argument("--model-dir", default=str(ROOT / "build/cache/models/all-MiniLM-L6-v2"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--backend", choices=["ort", "torch", "both"], default="ort")
    ap.add_argument("--opset", type=int, default=18)
    ap.add_argument("--cache-dir", default=str(ROOT / "build/peers-cache"))
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                    help="torch backend: transformers' attention implementation")
    args = ap.parse_args()

    with open(args.shapes) as f:
        shapes = [tuple(int(x) for x in s) for s in json.load(f)]
    model_dir = pathlib.Path(args.model_dir).resolve()
    with open(model_dir / "config.json") as f:
        vocab = json.load(f)["vocab_size"]
    report = {"model_dir": str(model_dir), "threads": args.threads, "repeats": args.repeats}

    if args.backend in ("ort", "both"):
        import onnxruntime as ort
        import torch

        cache = pathlib.Path(args.cache_dir)
        cache.mkdir(parents=True, exist_ok=True)
        onnx_path = cache / f"{model_dir.name}.torch{torch.__version__.split('+')[0]}.opset{args.opset}.onnx"
        if not onnx_path.exists():
            t0 = time.perf_counter()
            report["export_max_abs_diff"] = export(str(model_dir), onnx_path, args.opset)
            report["export_s"] = round(time.perf_counter() - t0, 1)
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
        wanted = {i.name for i in sess.get_inputs()}
        report["ort"] = time_shapes(
            lambda feed: sess.run(None, {k: v for k, v in feed.items() if k in wanted}),
            shapes, vocab, args.repeats)
        report["ort"]["onnxruntime"] = ort.__version__
        report["ort"]["onnx_file"] = str(onnx_path)

    if args.backend in ("torch", "both"):
        import torch
        from transformers import AutoModel

        torch.set_num_threads(args.threads)
        model = AutoModel.from_pretrained(str(model_dir), attn_implementation=args.attn).eval()

        def run(feed):
            with torch.inference_mode():
                model(**{k: torch.from_numpy(v) for k, v in feed.items()})

        report["torch"] = time_shapes(run, shapes, vocab, args.repeats)
        report["torch"]["torch"] = torch.__version__
        report["torch"]["attn"] = args.attn

    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
