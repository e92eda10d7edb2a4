"""Writes SentencePiece-family tokenizer.json files for the tokenizer tests.

Built the way Hugging Face builds XLM-R's, T5's and Llama's tokenizer.json: a
SentencePiece model is trained (PyPI `sentencepiece`, on the real texts of
testdata/tokenizer/realtext.jsonl and realtext_multilingual.jsonl, one line per
sentence), or taken from a PyPI package (Mistral 7B's tokenizer.model.v1 in
mistral-common), and converted to tokenizer.json by `transformers` (the tokenizer
classes' own path from a SentencePiece model, or the slow-to-fast converters of
transformers.convert_slow_tokenizer). A few variants then edit the JSON to
cover options no converter writes. Every file is loaded back with
`tokenizers.Tokenizer.from_file` and its components are printed.

Deterministic: one thread, no sampling or shuffling of the input, fixed seed;
two runs write byte-identical files. About 20-30 s on two cores.

Usage, from the repository root, after scripts/setup.sh:
    build/venv/bin/python scripts/tokenizer/make_sentencepiece.py [--out DIR]
DIR defaults to build/cache/tokenizers/sentencepiece; one <name>.json per
tokenizer (and the trained <model>.model files under DIR/spm/).
"""

import argparse
import copy
import io
import json
import os
import shutil
import sys
import tempfile
import types
import warnings

import sentencepiece as spm
from tokenizers import AddedToken, Tokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.path.join(ROOT, "testdata", "tokenizer")
TEXTS = ["realtext.jsonl", "realtext_multilingual.jsonl"]
MISTRAL_V1 = os.path.join(ROOT, "build", "cache", "tokenizers", "mistral-common", "tokenizer.model.v1")

# character_coverage below 1 leaves the rarest characters out of the vocabulary,
# so that real texts meet the unknown token (or byte fallback).
COMMON = dict(num_threads=1, input_sentence_size=0, shuffle_input_sentence=False,
              character_coverage=0.995, max_sentence_length=1 << 16, minloglevel=2,
              train_extremely_large_corpus=False)
# Unigram training with one EM sub-iteration: half the time, vocabularies as good for tests.
FAST_UNIGRAM = dict(num_sub_iterations=1)
# SentencePiece models: name -> trainer options.
MODELS = {
    # XLM-R's layout (<unk> 0, <s> 1, </s> 2; the converter shifts by one for fairseq) and normalisation.
    "unigram_nfkc": dict(model_type="unigram", vocab_size=4000, normalization_rule_name="nmt_nfkc", **FAST_UNIGRAM),
    # T5's layout: <pad> 0, </s> 1, <unk> 2, no <s>.
    "unigram_t5": dict(model_type="unigram", vocab_size=3000, normalization_rule_name="nmt_nfkc", **FAST_UNIGRAM,
                       pad_id=0, eos_id=1, unk_id=2, bos_id=-1),
    # Llama's layout (<unk> 0, <s> 1, </s> 2) and options: no normalisation, byte fallback, digits split.
    "unigram_bytes": dict(model_type="unigram", vocab_size=3000, normalization_rule_name="identity",
                          byte_fallback=True, split_digits=True, remove_extra_whitespaces=False, **FAST_UNIGRAM),
    "bpe_bytes": dict(model_type="bpe", vocab_size=3000, normalization_rule_name="identity",
                      byte_fallback=True, split_digits=True, remove_extra_whitespaces=False,
                      allow_whitespace_only_pieces=True),
    # Gemma's layout and names: <pad> 0, <eos> 1, <bos> 2, <unk> 3.
    "bpe_gemma": dict(model_type="bpe", vocab_size=3000, normalization_rule_name="identity",
                      byte_fallback=True, split_digits=True, remove_extra_whitespaces=False,
                      allow_whitespace_only_pieces=True, pad_id=0, eos_id=1, bos_id=2, unk_id=3,
                      pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>"),
}


def sentences():
    lines = []
    for name in TEXTS:
        with open(os.path.join(DATA, name), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    lines.extend(s for s in json.loads(line)["text"].split("\n") if s.strip())
    return lines


def train(spm_dir, name, options, lines):
    prefix = os.path.join(spm_dir, name)
    model = io.BytesIO()
    spm.set_random_generator_seed(1234)
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, **COMMON, **options)
    with open(prefix + ".model", "wb") as f:
        f.write(model.getvalue())
    return prefix + ".model"


def via_class(cls, model_path, file_name, **kwargs):
    """What transformers does for a Hub folder holding only the SentencePiece model."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(model_path, os.path.join(tmp, file_name))
        tok = cls.from_pretrained(tmp, **kwargs)
        tok.save_pretrained(os.path.join(tmp, "out"))
        with open(os.path.join(tmp, "out", "tokenizer.json"), encoding="utf-8") as f:
            return json.load(f)


def via_converter(converter_cls, model_path, special, **attributes):
    """A slow-to-fast converter over a stand-in for the slow tokenizer: the attributes the
    converters read, ids from the converted vocabulary. `special` are added as special
    tokens after conversion, as the fast tokenizer class does when it is built."""
    sp = spm.SentencePieceProcessor(model_file=model_path)
    original = types.SimpleNamespace(vocab_file=model_path, **attributes)
    original.convert_ids_to_tokens = sp.id_to_piece
    converter = converter_cls(original)
    # Ids as in the converted vocabulary (XLM-R shifts the SentencePiece ids).
    vocab = {piece: i for i, (piece, _) in enumerate(converter.vocab(converter.proto))}
    original.convert_tokens_to_ids = lambda t: vocab[t]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = converter.converted()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=t == "<mask>") for t in special])
    return json.loads(tok.to_str())


def bpe_extractor():
    """transformers 5.24's SpmConverter calls its extractor's extract(vocab_scores) for BPE
    models, but SentencePieceExtractor.extract takes a model class there (AttributeError):
    return (vocab, merges) with the merges ranked by piece score, as transformers 4 did."""
    from tokenizers.models import BPE
    from transformers.convert_slow_tokenizer import SentencePieceExtractor, generate_merges

    class Extractor(SentencePieceExtractor):
        def extract(self, vocab_scores=None):
            vocab = super().extract(BPE)["vocab"]
            return vocab, generate_merges(vocab, dict(vocab_scores) if vocab_scores else None)
    return Extractor


def metaspace(pre, **changes):
    """The Metaspace inside a pre-tokenizer or decoder (or a Sequence of them), changed."""
    pre = copy.deepcopy(pre)
    items = pre.get("pretokenizers") or pre.get("decoders") or [pre]
    for item in items:
        if item["type"] == "Metaspace":
            item.update(changes)
    return pre


def build(spm_dir, lines):
    from transformers import GemmaTokenizer, LlamaTokenizer, T5Tokenizer, XLMRobertaTokenizer
    from transformers.convert_slow_tokenizer import LlamaConverter, T5Converter, XLMRobertaConverter

    models = {name: train(spm_dir, name, options, lines) for name, options in MODELS.items()}
    out = {}
    # XLM-R: transformers' XLMRobertaTokenizer from sentencepiece.bpe.model (Precompiled,
    # WhitespaceSplit + Metaspace, TemplateProcessing <s> $A </s>, Metaspace decoder).
    out["xlmr_unigram"] = via_class(XLMRobertaTokenizer, models["unigram_nfkc"], "sentencepiece.bpe.model")
    # The same model through XLMRobertaConverter (normaliser Precompiled + Strip + Replace).
    out["xlmr_unigram_converter"] = via_converter(
        XLMRobertaConverter, models["unigram_nfkc"], ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        add_prefix_space=True)
    # T5: T5Tokenizer from spiece.model (100 <extra_id_N>, $A </s>) and T5Converter.
    out["t5_unigram"] = via_class(T5Tokenizer, models["unigram_t5"], "spiece.model")
    out["t5_unigram_converter"] = via_converter(T5Converter, models["unigram_t5"], ["<pad>", "</s>", "<unk>"],
                                                _extra_ids=100)
    # Llama's converter keeps SentencePiece's byte fallback (Unigram and BPE alike), with
    # the Prepend + Replace normalisers of Llama 2's "legacy" tokenizer.json and the
    # Replace, ByteFallback, Fuse, Strip decoders.
    out["unigram_byte_fallback"] = via_converter(LlamaConverter, models["unigram_bytes"],
                                                 ["<unk>", "<s>", "</s>"], legacy=True, add_prefix_space=True)
    # Llama 2's post-processor (the converter leaves it to the tokenizer class): <s> first.
    llama_template = {"type": "TemplateProcessing",
                      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                 {"Sequence": {"id": "A", "type_id": 0}}],
                      "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                               {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    out["unigram_byte_fallback"]["post_processor"] = llama_template
    legacy_llama = type("LlamaConverter", (LlamaConverter,), {"SpmExtractor": bpe_extractor()})
    out["llama_bpe_legacy"] = via_converter(legacy_llama, models["bpe_bytes"], ["<unk>", "<s>", "</s>"],
                                            legacy=True, add_prefix_space=True)
    out["llama_bpe_legacy"]["post_processor"] = llama_template
    # transformers 5's LlamaTokenizer from tokenizer.model (not legacy: no normaliser,
    # Metaspace prepend_scheme "first", split false).
    out["llama_bpe_byte_fallback"] = via_class(LlamaTokenizer, models["bpe_bytes"], "tokenizer.model",
                                               add_bos_token=True)
    # transformers 5's GemmaTokenizer from tokenizer.model (Replace normaliser, Split on " ",
    # no Strip decoder, <mask> added).
    out["gemma_bpe"] = via_class(GemmaTokenizer, models["bpe_gemma"], "tokenizer.model")

    # A real one: Mistral 7B's tokenizer.model.v1 (from the mistral-common wheel that
    # scripts/fetch_models.sh unpacks), as transformers' LlamaTokenizer converts it.
    if os.path.exists(MISTRAL_V1):
        out["mistral_v1"] = via_class(LlamaTokenizer, MISTRAL_V1, "tokenizer.model", add_bos_token=True)
    else:
        print(f"{MISTRAL_V1} is missing (run scripts/fetch_models.sh): no mistral_v1", file=sys.stderr)

    # Variants for options no converter writes.
    base = out["xlmr_unigram_converter"]
    v = copy.deepcopy(base)
    v["pre_tokenizer"] = metaspace(base["pre_tokenizer"], prepend_scheme="first")
    v["decoder"] = metaspace(base["decoder"], prepend_scheme="first")
    out["unigram_metaspace_first"] = v
    v = copy.deepcopy(base)
    v["pre_tokenizer"] = metaspace(base["pre_tokenizer"], prepend_scheme="never", split=False)
    v["decoder"] = metaspace(base["decoder"], prepend_scheme="never", split=False)
    out["unigram_metaspace_never_nosplit"] = v
    v = copy.deepcopy(base)
    v["pre_tokenizer"] = metaspace(base["pre_tokenizer"], prepend_scheme="always", split=False)
    out["unigram_metaspace_nosplit"] = v
    # Normalisers without the charsmap: NFKD, Strip both sides, Replace by regex, Prepend.
    v = copy.deepcopy(base)
    v["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFKD"},
        {"type": "Strip", "strip_left": True, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        {"type": "Prepend", "prepend": "▁"},
    ]}
    v["pre_tokenizer"] = None
    out["unigram_nfkd_strip_prepend"] = v
    # NFD, left Strip only, digits folded by regex, Metaspace never; Fuse + Strip decoders.
    v = copy.deepcopy(out["unigram_byte_fallback"])
    v["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "NFD"},
        {"type": "Strip", "strip_left": True, "strip_right": False},
        {"type": "Replace", "pattern": {"Regex": "[0-9]{3,}"}, "content": "#"},
    ]}
    v["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True}
    out["unigram_bytes_nfd_metaspace_never"] = v
    # The Metaspace decoder with byte tokens (no ByteFallback: <0xNN> pieces stay as text).
    v = copy.deepcopy(out["unigram_byte_fallback"])
    v["decoder"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    out["unigram_bytes_metaspace_decoder"] = v
    return out


def describe(tok_json):
    def name(c):
        if c is None:
            return "none"
        inner = c.get("normalizers") or c.get("pretokenizers") or c.get("processors") or c.get("decoders")
        if c["type"] == "Sequence" and inner is not None:
            return "Sequence[" + ", ".join(name(i) for i in inner) + "]"
        opts = {k: v for k, v in c.items() if k not in ("type", "precompiled_charsmap", "special_tokens")}
        return c["type"] + (json.dumps(opts, ensure_ascii=False) if opts else "")
    model = tok_json["model"]
    extra = {k: model[k] for k in ("unk_id", "byte_fallback", "fuse_unk", "ignore_merges") if k in model}
    return (f"model {model['type']}{json.dumps(extra)} vocab {len(model['vocab'])}"
            f" added {len(tok_json['added_tokens'])}\n  normalizer {name(tok_json['normalizer'])}"
            f"\n  pre_tokenizer {name(tok_json['pre_tokenizer'])}"
            f"\n  post_processor {name(tok_json['post_processor'])}\n  decoder {name(tok_json['decoder'])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "cache", "tokenizers", "sentencepiece"))
    args = parser.parse_args()
    spm_dir = os.path.join(args.out, "spm")
    os.makedirs(spm_dir, exist_ok=True)
    lines = sentences()
    for name, tok_json in build(spm_dir, lines).items():
        text = json.dumps(tok_json, ensure_ascii=False, indent=2) + "\n"
        Tokenizer.from_str(text)  # loads
        path = os.path.join(args.out, name + ".json")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        Tokenizer.from_file(path)
        print(f"{name}: {describe(tok_json)}")
    print(f"{len(lines)} training sentences; wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
