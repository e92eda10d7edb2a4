"""The attention kernels on the CPU: scaled_dot_product_attention (the fused
path, `--attn-implementation sdpa`, what `auto` picks with libtorch >= 2) against
the explicit matmuls (`eager`), on long inputs, in both execution layouts.

    build/venv/bin/python bench/backend/attention_kernels.py [--tokenbatch build-pytorch/src/cli/tokenbatch]

The model is BERT-base's shape with 2,048 positions (random weights, written
once with transformers into build/cache/bench-models; the kernels' cost does not
depend on the values). Each (layout, kernel) runs `tokenbatch calibrate` on the
same grid, B in {1, 4} x L in {512, 2048} (B x L <= 8,192), 2 threads, the
median of 3 timed runs per shape, eager then sdpa in each layout. It prints a
Markdown table of forward latency (ms) and peak memory above the loaded model
(MiB, the process's RSS high-water mark) per shape, and the ratio eager / sdpa.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
GRID = "1,4:512,2048"


def model_dir():
    out = ROOT / "build" / "cache" / "bench-models" / "bert-base-2048"
    if (out / "modules.json").exists():
        return out
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules
    torch.manual_seed(1)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                     intermediate_size=3072, max_position_embeddings=2048)
    tmp = out.with_suffix(".tmp")
    transformers.BertModel(config, add_pooling_layer=False).save_pretrained(tmp)
    tokenizer = ROOT / "data" / "tokenizers" / "bert-base-uncased" / "tokenizer.json"
    (tmp / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    (tmp / "tokenizer_config.json").write_text(json.dumps(
        dict(tokenizer_class="PreTrainedTokenizerFast", model_max_length=2048, pad_token="[PAD]", cls_token="[CLS]",
             sep_token="[SEP]", unk_token="[UNK]", mask_token="[MASK]")))
    transformer = modules.Transformer(str(tmp), max_seq_length=2048)
    SentenceTransformer(modules=[transformer, modules.Pooling(768, pooling_mode="mean")], device="cpu").save(str(out))
    shutil.rmtree(tmp)
    return out


def calibrate(tokenbatch, model, execution, kernel):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "calibration.json")
        subprocess.run([tokenbatch, "calibrate", "--model-id", str(model), "--execution", execution,
                        "--attn-implementation", kernel, "--grid", GRID, "--max-shape-tokens", "8192",
                        "--threads", "2", "--repeats", "3", "--memory-limit", "16GB", "--json", path],
                       stdout=subprocess.DEVNULL)
        # calibrate exits non-zero when it cannot fit a budget to so few shapes;
        # the measured grid is in the file all the same.
        if not os.path.exists(path):
            raise SystemExit(f"attention_kernels: calibrate wrote no {path}")
        with open(path) as f:
            return {(p["batch_size"], p["seq_len"]): p for p in json.load(f)["grid"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenbatch", default=str(ROOT / "build-pytorch" / "src" / "cli" / "tokenbatch"))
    args = parser.parse_args()
    model = model_dir()
    print("| layout | B x L | eager ms | sdpa ms | eager / sdpa | eager peak MiB | sdpa peak MiB |")
    print("|---|---|---|---|---|---|---|")
    for execution in ("packed", "padded"):
        runs = {kernel: calibrate(args.tokenbatch, model, execution, kernel) for kernel in ("eager", "sdpa")}
        for shape in sorted(runs["eager"]):
            e, s = runs["eager"][shape], runs["sdpa"][shape]
            print(f"| {execution} | {shape[0]} x {shape[1]} | {e['latency_us'] / 1000:.1f} | "
                  f"{s['latency_us'] / 1000:.1f} | {e['latency_us'] / s['latency_us']:.2f} | "
                  f"{e['peak_bytes'] / 2**20:.0f} | {s['peak_bytes'] / 2**20:.0f} |")


if __name__ == "__main__":
    main()
