"""The model-directory fields of docs/model-coverage.md, varied one at a time
and together on random-weight directories, served by `tokenbatch serve
--model-id DIR` and compared with the references on the same directory:

  - embedding directories against sentence-transformers' encode (cosine >=
    0.99999, |diff| <= 1e-4, float32) and the usage count against its
    tokenizer (after its truncation);
  - cross-encoders against CrossEncoder.predict (/rerank) and transformers'
    text-classification pipeline (/predict: labels and scores, |diff| <= 1e-4);
  - every refused field: serve must exit non-zero naming the field and value.

    config_space.py TOKENBATCH TOKENIZERS_DIR XLMR_TOKENIZER_DIR WORK_DIR [CASE...]

TOKENIZERS_DIR is the repository's data/tokenizers (bert-base-uncased, qwen3);
XLMR_TOKENIZER_DIR holds XLM-R's tokenizer.json (multilingual-e5-small's).
The directories go under WORK_DIR (rewritten each run). Prints one line per case.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import transformers
from sentence_transformers import CrossEncoder, SentenceTransformer
from sentence_transformers.sentence_transformer import modules

from config_space_cases import CROSS_ENCODER_CASES, EMBEDDING_CASES, REFUSED_CASES, TEXTS
from serving import Serving, post_json


def edit_json(path, changes):
    """Applies `changes` to the JSON file at `path`: None deletes a key."""
    data = json.load(open(path)) if os.path.exists(path) else {}
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    with open(path, "w") as f:
        json.dump(data, f)


def tokenizer_dir(args, family):
    return {"bert": os.path.join(args.tokenizers, "bert-base-uncased"), "qwen3": os.path.join(args.tokenizers, "qwen3"),
            "xlm-roberta": args.xlmr}[family]


SPECIAL = {
    "bert": dict(pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]", mask_token="[MASK]"),
    "xlm-roberta": dict(pad_token="<pad>", cls_token="<s>", sep_token="</s>", bos_token="<s>", eos_token="</s>",
                        unk_token="<unk>", mask_token="<mask>"),
    "qwen3": dict(pad_token="<|endoftext|>", eos_token="<|endoftext|>"),
}

BASE = {
    "bert": lambda **kw: transformers.BertConfig(**{**dict(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=128), **kw}),
    "xlm-roberta": lambda **kw: transformers.XLMRobertaConfig(**{**dict(
        vocab_size=250002, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=130, pad_token_id=1, type_vocab_size=1), **kw}),
    "qwen3": lambda **kw: transformers.Qwen3Config(**{**dict(
        vocab_size=151669, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=48, max_position_embeddings=256, tie_word_embeddings=False), **kw}),
}


def randomize(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.1)


def write_transformer(args, case, out, task_model):
    """config.json, weights and the tokenizer files of `case` in `out`."""
    family = case["family"]
    config = BASE[family](**case.get("config", {}))
    if task_model:
        model = transformers.AutoModelForSequenceClassification.from_config(config)
    elif family == "qwen3":
        model = transformers.Qwen3Model(config)
    else:
        model = transformers.AutoModel.from_config(config, add_pooling_layer=False)
    randomize(model, 1234)
    model.save_pretrained(out, safe_serialization=True)
    shutil.copy(os.path.join(tokenizer_dir(args, family), "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(dict(tokenizer_class=case.get("tokenizer_class", "PreTrainedTokenizerFast"), model_max_length=96,
                       **SPECIAL[family]), f)
    return config


def write_embedding_case(args, case, out):
    tmp = out + ".transformer"
    shutil.rmtree(tmp, ignore_errors=True)
    config = write_transformer(args, case, tmp, task_model=False)
    parts = [modules.Transformer(tmp, max_seq_length=case.get("max_seq_length", 64)),
             modules.Pooling(config.hidden_size, pooling_mode=case.get("pooling", "mean"),
                             include_prompt=case.get("include_prompt", True))]
    if case.get("dense"):
        torch.manual_seed(7)
        parts.append(modules.Dense(config.hidden_size, 24, activation_function=case["dense"]()))
    if case.get("normalize"):
        parts.append(modules.Normalize())
    SentenceTransformer(modules=parts, device="cpu", prompts={"query": "Query: "}).save(out, safe_serialization=True)
    shutil.rmtree(tmp)


def write_cross_encoder_case(args, case, out):
    write_transformer(args, case, out, task_model=True)


def apply_edits(case, out):
    for name, changes in case.get("edit", {}).items():
        edit_json(os.path.join(out, name), changes)
    if case.get("append_modules"):
        path = os.path.join(out, "modules.json")
        listed = json.load(open(path)) + case["append_modules"]
        with open(path, "w") as f:
            json.dump(listed, f)


def usage(port, texts):
    status, body = post_json(port, "/v1/embeddings", {"input": texts})
    assert status == 200, f"/v1/embeddings answered {status}: {body}"
    return [d["embedding"] for d in sorted(body["data"], key=lambda d: d["index"])], body["usage"]["prompt_tokens"]


def check_embedding(args, name, case, out):
    model = SentenceTransformer(out, device="cpu")
    want = model.encode(TEXTS, batch_size=16, convert_to_numpy=True)
    features = model.preprocess(TEXTS)
    want_tokens = int(features["attention_mask"].sum())
    with Serving(args.tokenbatch, ["--model-id", out, "--threads", "2", "--log-level", "warn"]) as port:
        got, tokens = usage(port, TEXTS)
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    diff = np.abs(got - want).max()
    assert cos.min() >= 0.99999 and diff <= 1e-4, f"{name}: min cosine {cos.min():.8f}, max |diff| {diff:.2e}"
    assert tokens == want_tokens, f"{name}: usage {tokens} tokens, sentence-transformers tokenizes {want_tokens}"
    spread = float(np.std(want))
    assert spread > 1e-3, f"{name}: embeddings spread only {spread:.2e}"
    print(f"{name}: {len(TEXTS)} texts, {tokens} tokens, min cosine {cos.min():.8f}, max |diff| {diff:.2e}")


def check_cross_encoder(args, name, case, out):
    pairs = case["pairs"]
    model = CrossEncoder(out, device="cpu")
    pipe = transformers.pipeline("text-classification", model=out, device="cpu", top_k=None)
    num_labels = model.config.num_labels
    with Serving(args.tokenbatch, ["--model-id", out, "--threads", "2", "--log-level", "warn"]) as port:
        status, predicted = post_json(port, "/predict", {"inputs": [list(p) for p in pairs]})
        assert status == 200, f"{name} /predict answered {status}: {predicted}"
        reranked = None
        if num_labels == 1:
            status, reranked = post_json(port, "/rerank", {"query": pairs[0][0], "texts": [d for _, d in pairs]})
            assert status == 200, f"{name} /rerank answered {status}: {reranked}"
    worst = 0.0
    if num_labels == 1:  # /rerank against CrossEncoder.predict (its activation), one query
        want = model.predict([(pairs[0][0], d) for _, d in pairs], convert_to_numpy=True)
        got = [0.0] * len(pairs)
        for r in reranked:
            got[r["index"]] = r["score"]
        worst = max(worst, float(np.abs(np.asarray(got) - want).max()))
    # /predict against the pipeline: the same labels, the same scores.
    want = pipe([{"text": q, "text_pair": d} for q, d in pairs], truncation=True)
    for k, (g, w) in enumerate(zip(predicted, want)):
        g = g if isinstance(g, list) else [g]
        gl, wl = {x["label"]: x["score"] for x in g}, {x["label"]: x["score"] for x in w}
        assert set(gl) == set(wl), f"{name} pair {k}: labels {sorted(gl)} != {sorted(wl)}"
        worst = max(worst, max(abs(gl[label] - wl[label]) for label in gl))
    assert worst <= 1e-4, f"{name}: max |diff| {worst:.2e}"
    if case.get("not_a_softmax"):  # the check can tell a softmax from what the problem_type asks
        sums = [sum(x["score"] for x in p) for p in predicted]
        assert max(abs(s - 1.0) for s in sums) > 1e-3, f"{name}: the scores sum to 1, a softmax: {sums}"
    print(f"{name}: {len(pairs)} pairs, {num_labels} label(s), max |diff| {worst:.2e}")


def check_refused(args, name, case, out):
    result = subprocess.run([args.tokenbatch, "serve", "--model-id", out, "--port", "0"], capture_output=True,
                            text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode != 0, f"{name}: serve started on a directory it must refuse"
    for needle in case["expect"]:
        assert needle in result.stderr, f"{name}: the error does not name {needle!r}: {result.stderr.strip()}"
    print(f"{name}: refused: {result.stderr.strip().splitlines()[-1][:160]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokenbatch")
    parser.add_argument("tokenizers")
    parser.add_argument("xlmr")
    parser.add_argument("work")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    every = {**{k: ("embedding", v) for k, v in EMBEDDING_CASES.items()},
             **{k: ("cross-encoder", v) for k, v in CROSS_ENCODER_CASES.items()},
             **{k: ("refused", v) for k, v in REFUSED_CASES.items()}}
    names = args.cases or list(every)
    unknown = [n for n in names if n not in every]
    if unknown:
        sys.exit(f"config_space: unknown case(s) {', '.join(unknown)} (known: {', '.join(every)})")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    transformers.logging.set_verbosity_error()
    for name in names:
        kind, case = every[name]
        out = os.path.join(args.work, name)
        if kind == "cross-encoder" or case.get("cross_encoder"):
            write_cross_encoder_case(args, case, out)
        else:
            write_embedding_case(args, case, out)
        apply_edits(case, out)
        {"embedding": check_embedding, "cross-encoder": check_cross_encoder, "refused": check_refused}[kind](
            args, name, case, out)
    print(f"config space: {len(names)} cases passed")


if __name__ == "__main__":
    main()
