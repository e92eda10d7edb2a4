"""Writes full golden encodings and decodings into the build tree (not committed).

The reference is Hugging Face's `tokenizers` (PyPI, pinned in
scripts/requirements.txt), as for scripts/tokenizer/generate_goldens.py, whose
helpers this script imports. Tokenizers: the real XLM-R tokenizer.json
of multilingual-e5-small (scripts/fetch_models.sh), every <name>.json of the
SentencePiece folder (scripts/tokenizer/make_sentencepiece.py), and the
committed ones that generate_goldens.py covers (qwen3, llama3 and bert from the
shared tokenizer data, testdata/tokenizer/variants/*.json,
testdata/tokenizer/synthetic/*.json). Texts: testdata/tokenizer/corpus.jsonl,
realtext.jsonl and realtext_multilingual.jsonl, in that order (the variants and
synthetic tokenizers: corpus.jsonl only).

For each tokenizer it writes, under OUT/golden/:
  <name>.jsonl               one line per text: {"name", "ids", "ids_no_special",
                             "offsets", "decoded", "decoded_with_special"}: the ids
                             with and without special tokens, the UTF-8 byte
                             offsets of the ids (with special tokens), and
                             decode(ids, skip_special_tokens=True / False)
  <name>.decode_cases.jsonl  hand-made id lists for decoding edge cases: {"name",
                             "ids", "decoded", "decoded_with_special"} (byte tokens
                             that are not valid UTF-8, special tokens in the middle,
                             the unknown token, ids outside the vocabulary, an
                             empty list)
  <name>.pairs.jsonl         pairs of consecutive texts as a cross-encoder gets them,
                             encode(first, second): {"name", "max_length", "side",
                             "ids", "type_ids"} in full and cut to max_length with
                             truncation "only_second" from the right or the left, or
                             "error": true where Hugging Face refuses the cut (the
                             first text leaves no room for the second)
Everything in full (no hashes). Deterministic: two runs write the same bytes.

Usage, from the repository root, after make_sentencepiece.py:
    build/venv/bin/python -m scripts.tokenizer.generate_build_goldens
        [--sentencepiece DIR] [--tokenizers DIR] [--out DIR]
--sentencepiece defaults to build/cache/tokenizers/sentencepiece, --out to the
same folder, --tokenizers to ../shared/data/tokenizers.
"""

import argparse
import json
import os
import sys
import time

from tokenizers import Tokenizer

from scripts.tokenizer.generate_goldens import (DATA, REAL, ROOT, byte_offsets, json_files, load_variant,
                                                read_jsonl, tokenizer_path, utf8_prefix, write_jsonl)

TEXTS = ["corpus.jsonl", "realtext.jsonl", "realtext_multilingual.jsonl"]


def gpt2_byte_chars():
    """ByteLevel's byte -> character table: printable Latin-1 bytes stand for
    themselves, the other bytes take the code points from U+0100 on, in order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


def components(config, key, inner):
    """The component types of a normalizer/pre_tokenizer/decoder, Sequence flattened."""
    c = config.get(key)
    if c is None:
        return []
    if c["type"] == "Sequence":
        return [x["type"] for x in c[inner]]
    return [c["type"]]


# Byte sequences for decoding: a character cut after one or two of its three bytes,
# a whole one, a cut emoji, bytes never valid in UTF-8, an overlong form, a surrogate.
BYTE_CASES = [
    ("cut_cjk_1of3", [0xE4]),
    ("cut_cjk_2of3", [0xE4, 0xB8]),
    ("whole_cjk", [0xE4, 0xB8, 0xAD]),
    ("cut_emoji_3of4", [0xF0, 0x9F, 0x98]),
    ("lone_continuation", [0x80]),
    ("byte_ff", [0xFF]),
    ("overlong_nul", [0xC0, 0x80]),
    ("surrogate", [0xED, 0xA0, 0x80]),
    ("cut_then_ascii", [0xC3, 0x41]),
]


def decode_cases(tok, config):
    """Hand-made id lists for decoding edge cases, as (name, ids)."""
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    words = tok.encode("Hello world", add_special_tokens=False).ids
    more = tok.encode(" again, 中文 and ünïcode", add_special_tokens=False).ids
    special = [t.content for t in sorted(tok.get_added_tokens_decoder().values(), key=lambda t: t.content)
               if t.special]
    special_ids = [tok.token_to_id(t) for t in special]
    cases = [("empty", []), ("words", words), ("words_more", words + more)]
    if special_ids:
        cases += [("specials_only", special_ids),
                  ("special_middle", words + special_ids[:1] + more),
                  ("specials_between", special_ids + words + special_ids + more + special_ids)]
    normal_added = [tok.token_to_id(t.content) for t in tok.get_added_tokens_decoder().values() if not t.special]
    if normal_added:
        cases.append(("added_middle", words + sorted(normal_added)[:2] + more))
    model = config["model"]
    unk = None
    if model["type"] == "Unigram" and model.get("unk_id") is not None:
        unk = model["unk_id"]
    elif model.get("unk_token") is not None:
        unk = tok.token_to_id(model["unk_token"])
    if unk is not None:
        cases += [("unk_alone", [unk]), ("unk_between", words + [unk] + more)]
    cases += [("out_of_range", [vocab_size + 7]), ("out_of_range_between", words + [vocab_size + 7] + more)]

    # Byte tokens: ByteLevel's characters, or SentencePiece's <0xNN> pieces.
    byte_token = None
    if "ByteLevel" in components(config, "decoder", "decoders") or \
            "ByteLevel" in components(config, "pre_tokenizer", "pretokenizers"):
        chars = gpt2_byte_chars()
        byte_token = lambda b: tok.token_to_id(chars[b])  # noqa: E731
    elif tok.token_to_id("<0xE4>") is not None:
        byte_token = lambda b: tok.token_to_id(f"<0x{b:02X}>")  # noqa: E731
    if byte_token is not None:
        for name, seq in BYTE_CASES:
            ids = [byte_token(b) for b in seq]
            if None not in ids:
                cases += [("bytes_" + name, ids), ("bytes_" + name + "_in_words", words + ids + more)]
        split = [byte_token(b) for b in (0xE4, 0xB8, 0xAD)]
        if None not in split:
            cases.append(("bytes_cjk_split_by_word", split[:1] + words + split[1:]))
            if special_ids:
                cases.append(("bytes_cjk_split_by_special", split[:2] + special_ids[:1] + split[2:]))

    # Pieces with the Metaspace replacement or WordPiece's prefix, alone and first.
    for piece in ("▁", "▁▁", "##ing", "##", "Ġ", "ĠĠ"):
        i = tok.token_to_id(piece)
        if i is not None:
            cases += [(f"piece_{piece}", [i]), (f"piece_{piece}_first", [i] + words),
                      (f"piece_{piece}_twice_between", words + [i, i] + more)]
    return cases


def pair_cases(tok, texts):
    """encode(first, second) of consecutive texts, whole and cut to a few limits
    from either side, "only_second" and "longest_first", as dicts (see the
    module doc). Hugging Face also builds every overflowing piece of a cut
    pair, both texts' pieces crossed for longest_first, which grows with the
    product of the lengths: longest_first is asked only of pairs of at most
    LONGEST_FIRST_MAX_TOKENS tokens together."""
    out = []
    limits = ((0, "right", "longest_first"), (64, "right", "only_second"), (64, "left", "only_second"),
              (16, "right", "only_second"), (64, "right", "longest_first"), (64, "left", "longest_first"),
              (32, "right", "longest_first"))
    for k in range(min(len(texts) - 1, 120)):
        first, second = texts[k], texts[k + 1]
        whole = 0
        for max_length, side, strategy in limits:
            if max_length and strategy == "longest_first" and whole > LONGEST_FIRST_MAX_TOKENS:
                continue
            if max_length:
                tok.enable_truncation(max_length, strategy=strategy, direction=side)
            else:
                tok.no_truncation()
            case = {"name": f"{first['name']} + {second['name']}", "max_length": max_length, "side": side,
                    "strategy": strategy}
            try:
                e = tok.encode(first["text"], second["text"])
                case.update(ids=e.ids, type_ids=e.type_ids)
                if not max_length:
                    whole = len(e.ids)
            except Exception as e:  # only_second cannot cut enough: Hugging Face refuses
                if "Truncation error" not in str(e):
                    raise
                case["error"] = True
            out.append(case)
    tok.no_truncation()
    return out


LONGEST_FIRST_MAX_TOKENS = 400


# The real XLM-R tokenizer.json that scripts/fetch_models.sh unpacks (multilingual-e5-small).
XLMR_REAL = os.path.join(ROOT, "build", "cache", "tokenizers", "multilingual-e5-small", "tokenizer.json")


def tokenizers_to_run(args):
    """(name, tokenizer.json path or None, variant path or None, texts) of every tokenizer.
    Real and SentencePiece-family tokenizers get every text; the committed variants and
    synthetic tokenizers, which only change options of those, the corpus alone."""
    every, corpus = TEXTS, TEXTS[:1]
    out = []
    if os.path.exists(XLMR_REAL):
        out.append(("multilingual_e5_small", XLMR_REAL, None, every))
    else:
        print(f"{XLMR_REAL} is missing (run scripts/fetch_models.sh)", file=sys.stderr)
    if os.path.isdir(args.sentencepiece):
        for f in json_files(args.sentencepiece):
            out.append((f[:-5], os.path.join(args.sentencepiece, f), None, every))
    if all(os.path.exists(tokenizer_path(args.tokenizers, n)) for n in REAL):
        for n in REAL:
            out.append((n, tokenizer_path(args.tokenizers, n), None, every))
        for f in json_files(os.path.join(DATA, "variants")):
            out.append((f[:-5], None, os.path.join(DATA, "variants", f), corpus))
    else:
        print(f"no shared tokenizers in {args.tokenizers}: skipping {', '.join(REAL)} and the variants",
              file=sys.stderr)
    for f in json_files(os.path.join(DATA, "synthetic")):
        out.append((f[:-5], os.path.join(DATA, "synthetic", f), None, corpus))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_sp = os.path.join(ROOT, "build", "cache", "tokenizers", "sentencepiece")
    parser.add_argument("--sentencepiece", default=default_sp,
                        help="folder of SentencePiece-family <name>.json (make_sentencepiece.py)")
    parser.add_argument("--tokenizers", default=os.path.join(ROOT, "..", "shared", "data", "tokenizers"),
                        help="folder holding qwen3/, llama3/ and bert-base-uncased/")
    parser.add_argument("--out", default=None, help="goldens go to OUT/golden (default: --sentencepiece)")
    args = parser.parse_args()
    golden = os.path.join(args.out or args.sentencepiece, "golden")
    os.makedirs(golden, exist_ok=True)

    by_file = {f: read_jsonl(os.path.join(DATA, f)) for f in TEXTS}
    for name, path, variant, files in tokenizers_to_run(args):
        started = time.monotonic()
        texts = [t for f in files for t in by_file[f]]
        names = [t["name"] for t in texts]
        strings = [t["text"] for t in texts]
        prefixes = [utf8_prefix(s) for s in strings]
        assert len(set(names)) == len(names), "text names must be unique"
        if variant is not None:
            tok = load_variant(args.tokenizers, variant)
        else:
            tok = Tokenizer.from_file(path)
        config = json.loads(tok.to_str())
        with_special = tok.encode_batch(strings, add_special_tokens=True)
        without = tok.encode_batch(strings, add_special_tokens=False)
        ids = [e.ids for e in with_special]
        decoded = tok.decode_batch(ids, skip_special_tokens=True)
        decoded_with_special = tok.decode_batch(ids, skip_special_tokens=False)
        lines = [{"name": n, "ids": i, "ids_no_special": w.ids, "offsets": byte_offsets(s, e.offsets, p),
                  "decoded": d, "decoded_with_special": ds}
                 for n, s, p, e, i, w, d, ds in zip(names, strings, prefixes, with_special, ids, without, decoded,
                                                    decoded_with_special)]
        write_jsonl(os.path.join(golden, f"{name}.jsonl"), lines)
        cases = [{"name": n, "ids": i, "decoded": tok.decode(i, skip_special_tokens=True),
                  "decoded_with_special": tok.decode(i, skip_special_tokens=False)}
                 for n, i in decode_cases(tok, config)]
        write_jsonl(os.path.join(golden, f"{name}.decode_cases.jsonl"), cases)
        pairs = pair_cases(tok, texts)
        write_jsonl(os.path.join(golden, f"{name}.pairs.jsonl"), pairs)
        print(f"{name}: {len(lines)} texts, {len(cases)} decode cases, {len(pairs)} pair cases, "
              f"{time.monotonic() - started:.1f} s")
    print(f"wrote {golden}", file=sys.stderr)


if __name__ == "__main__":
    main()
