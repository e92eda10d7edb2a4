#!/usr/bin/python3
"""Generates synthetic TorchScript encoders for tokenbatch's libtorch backend.

No pretrained weights can be downloaded here, so these models have real
architectures (a BERT-style encoder written in plain torch.nn) and random, seeded
weights. Their embeddings are meaningless; they exist to exercise the backend and
to measure latency and memory at real shapes. To embed for real, export your own
Hugging Face model to TorchScript (see the README section on the backend).

Every model's forward is
    forward(input_ids: int64 [B, L], attention_mask: int64 [B, L],
            token_type_ids: Optional[int64 [B, L]] = None) -> float32 [B, L, H]
(the last hidden state), with right padding and mask 1 = real token, 0 = padding.

Outputs, in --out (default build/cache/models):
  <name>.pt          the scripted module (torch.jit.save)
  <name>.json        sidecar: {"layers", "hidden", "heads", "intermediate", "vocab",
                     "max_positions", "type_vocab", "seed", "output"}
Test-only variants of the tiny model (tiny_dict, tiny_tuple, tiny_bad_shape,
tiny_oom, tiny_raise) and tiny_reference.json (inputs and pooled outputs computed
here in Python, one request at a time, unpadded) come with "tiny".

With --vocab-size N (not the shape's default) the file is <name>-vN.pt.
Idempotent: a model whose .pt exists and whose sidecar records the same config is
skipped. Run with Debian's python3-torch: /usr/bin/python3 scripts/gen_models.py
"""
import argparse
import json
import math
import os
import sys
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor, nn

# name -> (layers, hidden, heads, intermediate, default vocab, max_positions)
SHAPES = {
    "tiny": (2, 64, 4, 256, 1000, 128),
    # sentence-transformers/all-MiniLM-L6-v2 shape (BERT vocabulary by default).
    "minilm": (6, 384, 12, 1536, 30522, 512),
    # bert-base-uncased shape.
    "bert-base": (12, 768, 12, 3072, 30522, 512),
}
FORMAT_VERSION = 1


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, intermediate)
        self.ffn_out = nn.Linear(intermediate, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x: Tensor, additive_mask: Tensor) -> Tensor:
        b, l, h = x.size(0), x.size(1), x.size(2)
        qkv = self.qkv(x).view(b, l, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [B, heads, L, head_dim]
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + additive_mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, l, h)
        x = self.ln1(x + self.attn_out(ctx))
        return self.ln2(x + self.ffn_out(nn.functional.gelu(self.ffn_in(x))))


class Encoder(nn.Module):
    """BERT-style encoder returning the last hidden state [B, L, H]."""

    def __init__(self, layers: int, hidden: int, heads: int, intermediate: int,
                 vocab: int, max_positions: int, type_vocab: int = 2):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.token_type = nn.Embedding(type_vocab, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([Layer(hidden, heads, intermediate) for _ in range(layers)])

    def forward(self, input_ids: Tensor, attention_mask: Tensor,
                token_type_ids: Optional[Tensor] = None) -> Tensor:
        l = input_ids.size(1)
        positions = torch.arange(l, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions)
        if token_type_ids is not None:
            x = x + self.token_type(token_type_ids)
        else:
            x = x + self.token_type(torch.zeros_like(input_ids))
        x = self.ln(x)
        # [B, 1, 1, L]: 0 for real keys, -1e9 for padding keys (exp underflows to 0).
        additive = (1.0 - attention_mask.to(x.dtype)).unsqueeze(1).unsqueeze(2) * -1e9
        for layer in self.layers:
            x = layer(x, additive)
        return x


class DictOutput(nn.Module):
    """Hugging Face style: a dict holding the last hidden state."""

    def __init__(self, inner: Encoder):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Dict[str, Tensor]:
        h = self.inner(input_ids, attention_mask)
        return {"last_hidden_state": h, "pooler_output": h[:, 0]}


class TupleOutput(nn.Module):
    """A tuple (pooler_output, last_hidden_state): the hidden state is index 1."""

    def __init__(self, inner: Encoder):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tuple[Tensor, Tensor]:
        h = self.inner(input_ids, attention_mask)
        return h[:, 0], h


class BadShape(nn.Module):
    """Returns [B, H] instead of [B, L, H]: the backend must refuse it at load."""

    def __init__(self, inner: Encoder):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        return self.inner(input_ids, attention_mask)[:, 0]


class OomOnLargeBatch(nn.Module):
    """Test hook: for B >= 4 allocates 2^42 floats (16 TiB), which the allocator
    refuses at once (nothing is touched), so the backend sees a real allocation
    failure. Smaller batches (the load probe) run normally."""

    def __init__(self, inner: Encoder):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        h = self.inner(input_ids, attention_mask)
        if input_ids.size(0) >= 4:
            h = h + torch.empty([1 << 42]).sum()
        return h


class RaiseOnLargeBatch(nn.Module):
    """Test hook: for B >= 4 raises a plain (non-memory) error."""

    def __init__(self, inner: Encoder):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        if input_ids.size(0) >= 4:
            raise RuntimeError("synthetic failure for tests")
        return self.inner(input_ids, attention_mask)


def build(name: str, vocab: Optional[int], seed: int) -> Tuple[Encoder, dict]:
    layers, hidden, heads, intermediate, default_vocab, max_positions = SHAPES[name]
    config = {
        "format": FORMAT_VERSION, "name": name, "layers": layers, "hidden": hidden,
        "heads": heads, "intermediate": intermediate, "vocab": vocab or default_vocab,
        "max_positions": max_positions, "type_vocab": 2, "seed": seed,
        "output": "last_hidden_state [B, L, H] float32",
        "synthetic": True,
    }
    torch.manual_seed(seed)
    model = Encoder(layers, hidden, heads, intermediate, config["vocab"], max_positions)
    model.eval()
    return model, config


def up_to_date(out: str, name: str, config: dict) -> bool:
    pt, side = os.path.join(out, name + ".pt"), os.path.join(out, name + ".json")
    if not (os.path.exists(pt) and os.path.exists(side)):
        return False
    with open(side) as f:
        return json.load(f) == config


def save(out: str, name: str, module: nn.Module, config: dict) -> None:
    scripted = torch.jit.script(module)
    tmp = os.path.join(out, name + ".pt.tmp")
    scripted.save(tmp)
    os.replace(tmp, os.path.join(out, name + ".pt"))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"gen_models: wrote {os.path.join(out, name + '.pt')}", file=sys.stderr)


def reference(model: Encoder, vocab: int, seed: int) -> dict:
    """Inputs of several lengths and their pooled outputs, each computed on the
    request alone (batch of one, no padding), independently of the C++ padding
    and pooling code."""
    g = torch.Generator().manual_seed(seed + 1)
    lengths = [1, 3, 7, 16, 33]
    inputs: List[List[int]] = [torch.randint(0, vocab, (n,), generator=g).tolist() for n in lengths]
    out = {"inputs": inputs, "cls": [], "mean": [], "last": [],
           "mean_normalized": [], "cls_normalized_dims_16": []}
    with torch.no_grad():
        for ids in inputs:
            t = torch.tensor([ids], dtype=torch.int64)
            h = model(t, torch.ones_like(t))[0].double()  # [L, H]
            cls, mean, last = h[0], h.mean(dim=0), h[-1]
            out["cls"].append(cls.tolist())
            out["mean"].append(mean.tolist())
            out["last"].append(last.tolist())
            out["mean_normalized"].append((mean / mean.norm()).tolist())
            # Matryoshka: truncate to the first 16 values, then L2-normalise.
            c16 = cls[:16]
            out["cls_normalized_dims_16"].append((c16 / c16.norm()).tolist())
    return out


def gen_tiny(out: str, vocab: Optional[int], seed: int, force: bool) -> None:
    model, config = build("tiny", vocab, seed)
    variants = {
        "tiny": model,
        "tiny_dict": DictOutput(model),
        "tiny_tuple": TupleOutput(model),
        "tiny_bad_shape": BadShape(model),
        "tiny_oom": OomOnLargeBatch(model),
        "tiny_raise": RaiseOnLargeBatch(model),
    }
    ref_path = os.path.join(out, "tiny_reference.json")
    fresh = all(up_to_date(out, n, dict(config, variant=n)) for n in variants)
    if fresh and os.path.exists(ref_path) and not force:
        print("gen_models: tiny models up to date", file=sys.stderr)
        return
    for n, module in variants.items():
        save(out, n, module, dict(config, variant=n))
    with open(ref_path + ".tmp", "w") as f:
        json.dump(reference(model, config["vocab"], seed), f)
    os.replace(ref_path + ".tmp", ref_path)


def gen_shape(out: str, name: str, vocab: Optional[int], seed: int, force: bool) -> None:
    model, config = build(name, vocab, seed)
    if vocab is not None and vocab != SHAPES[name][4]:
        name = f"{name}-v{vocab}"  # e.g. minilm-v151669 for Qwen3's vocabulary
    config = dict(config, variant=name)
    if up_to_date(out, name, config) and not force:
        print(f"gen_models: {name} up to date", file=sys.stderr)
        return
    save(out, name, model, config)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="build/cache/models", help="output folder (relative to the cwd)")
    p.add_argument("--models", default="tiny,minilm",
                   help="comma-separated subset of: " + ",".join(SHAPES))
    p.add_argument("--vocab-size", type=int, default=None,
                   help="embedding rows for the non-tiny models (e.g. 151669 for Qwen3's "
                        "tokenizer); a non-default size is saved as <name>-v<size>.pt")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    for name in filter(None, args.models.split(",")):
        if name not in SHAPES:
            p.error(f"unknown model {name!r}; choose from {', '.join(SHAPES)}")
        if name == "tiny":
            gen_tiny(args.out, None, args.seed, args.force)
        else:
            gen_shape(args.out, name, args.vocab_size, args.seed, args.force)


if __name__ == "__main__":
    main()
