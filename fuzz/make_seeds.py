#!/usr/bin/env python3
"""Writes the raw seed inputs of each fuzz target from the project's test inputs.

Usage: python3 fuzz/make_seeds.py OUT_DIR [HF_MODELS_DIR]

OUT_DIR/<target>/ receives one file per seed. scripts/fuzz.sh --update-corpus
then minimises them (libFuzzer -merge=1) into fuzz/corpus/<target>, which is
what the repository keeps. Sources:
  request_body_fuzz     every JSON body literal in src/{api,service,http}/*_test.cc, once per parser
  http_fuzz             raw requests: each route, keep-alive and pipelining, chunked
                        and gzip bodies, Expect: 100-continue, bad framing
  tokenizer_encode_fuzz the texts of testdata/tokenizer/corpus.jsonl, per tokenizer
  tokenizer_json_fuzz   testdata/tokenizer/synthetic, and small WordPiece, BPE and
                        Unigram files covering each normalizer and pre-tokenizer kind
  model_files_fuzz      config.json files of HF_MODELS_DIR (the random models the tests
                        write) and a small safetensors file
  batcher_ops_fuzz      operation sequences exercising each operation
"""
import gzip
import json
import pathlib
import re
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PARSERS = 7  # request_body_fuzz: data[0] % 7 picks the parser


def write(out: pathlib.Path, target: str, name: str, data: bytes) -> None:
    folder = out / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def request_bodies(out):
    bodies = set()
    for path in sorted(p for d in ("api", "service", "http") for p in (ROOT / "src" / d).glob("*_test.cc")):
        for literal in re.findall(r'R"\((.*?)\)"', path.read_text(), flags=re.S):
            if literal.lstrip().startswith(("{", "[")):
                bodies.add(literal)
    for i, body in enumerate(sorted(bodies)):
        for parser in range(PARSERS):
            write(out, "request_body_fuzz", f"{i:04d}_{parser}", bytes([parser]) + body.encode())


def http_requests(out):
    def request(method, target, body=b"", headers=()):
        head = [f"{method} {target} HTTP/1.1", "Host: localhost"]
        head += list(headers)
        if body and not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
            head.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + body

    embed = b'{"inputs": ["hello world", "a second text"]}'
    openai = b'{"input": ["hello", [101, 7592, 102]], "model": "m", "encoding_format": "base64"}'
    chunked = b"5\r\n{\"inp\r\n" + b"%x\r\n" % (len(embed) - 5) + embed[5:] + b"\r\n0\r\n\r\n"
    seeds = {
        "health": request("GET", "/health"),
        "head_health": request("HEAD", "/health"),
        "metrics": request("GET", "/metrics"),
        "info": request("GET", "/info"),
        "models": request("GET", "/v1/models"),
        "embed": request("POST", "/embed", embed, ["Content-Type: application/json"]),
        "openai": request("POST", "/v1/embeddings", openai, ["Content-Type: application/json"]),
        "tokenize": request("POST", "/tokenize", b'{"inputs": "Hello, world!"}'),
        "decode": request("POST", "/decode", b'{"ids": [101, 7592, 102]}'),
        "rerank": request("POST", "/rerank", b'{"query": "q", "texts": ["a", "b"]}'),
        "chunked": request("POST", "/embed", chunked, ["Transfer-Encoding: chunked"]),
        "gzip": request("POST", "/embed", gzip.compress(embed), ["Content-Encoding: gzip"]),
        "expect": request("POST", "/embed", embed, ["Expect: 100-continue"]),
        "pipelined": request("GET", "/health") + request("POST", "/embed", embed) + request("GET", "/info"),
        "close": request("POST", "/embed", embed, ["Connection: close"]),
        "timeout": request("POST", "/embed", embed, ["X-Request-Timeout-Ms: 1", "X-Request-Id: abc"]),
        "auth": request("GET", "/info", headers=["Authorization: Bearer k"]),
        "cors": request("OPTIONS", "/embed", headers=["Origin: http://a.example",
                                                       "Access-Control-Request-Method: POST"]),
        "http10": b"GET /health HTTP/1.0\r\n\r\n",
        "bad_length": b"POST /embed HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{}",
        "two_lengths": b"POST /embed HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        "no_host": b"POST /embed HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
        "long_header": request("GET", "/health", headers=["X-Long: " + "a" * 2000]),
    }
    for name, data in seeds.items():
        write(out, "http_fuzz", name, data)


def texts(out):
    lines = [l for l in (ROOT / "testdata/tokenizer/corpus.jsonl").read_text().split("\n") if l]
    for i, line in enumerate(lines):
        text = json.loads(line)["text"].encode()
        for tokenizer in range(2):
            second = b"\0a second text" if i % 4 == 0 else b""
            write(out, "tokenizer_encode_fuzz", f"{i:03d}_{tokenizer}", bytes([tokenizer]) + text + second)


def tokenizer_files(out):
    def tok(model, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None, added=()):
        return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": list(added),
                "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
                "post_processor": post_processor, "decoder": decoder, "model": model}

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hello": 3, "world": 4, "he": 5, "##llo": 6, "wor": 7, "##ld": 8}
    special = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, c in [(0, "[UNK]"), (1, "[CLS]"), (2, "[SEP]")]]
    bert_post = {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]}
    files = {
        "wordpiece": tok({"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                          "max_input_chars_per_word": 100, "vocab": vocab},
                         {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                          "strip_accents": None, "lowercase": True},
                         {"type": "BertPreTokenizer"}, bert_post, {"type": "WordPiece", "prefix": "##",
                                                                  "cleanup": True}, special),
        "bpe_bytelevel": tok({"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                              "ignore_merges": False, "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "he": 4, "ll": 5,
                                                                "Ġ": 6, "hell": 7},
                              "merges": ["h e", "l l", "he ll"]},
                             {"type": "NFC"},
                             {"type": "Sequence", "pretokenizers": [
                                 {"type": "Split", "pattern": {"Regex": "\\s+|\\w+|[^\\s\\w]+"},
                                  "behavior": "Isolated", "invert": False},
                                 {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                  "use_regex": False}]},
                             {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                              "use_regex": False},
                             {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                              "use_regex": False}),
        "unigram": tok({"type": "Unigram", "unk_id": 0, "byte_fallback": False,
                        "vocab": [["<unk>", 0.0], ["▁hello", -1.0], ["▁world", -1.5], ["▁", -2.0], ["h", -3.0],
                                  ["e", -3.0], ["l", -3.0], ["o", -3.0]]},
                       {"type": "Sequence", "normalizers": [{"type": "NFKC"},
                                                            {"type": "Replace", "pattern": {"String": "  "},
                                                             "content": " "}]},
                       {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
                       {"type": "TemplateProcessing",
                        "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>",
                                                                                              "type_id": 0}}],
                        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                        "special_tokens": {"</s>": {"id": "</s>", "ids": [0], "tokens": ["</s>"]}}},
                       {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}),
    }
    for path in sorted((ROOT / "testdata/tokenizer/synthetic").glob("*.json")):
        files[path.stem] = json.loads(path.read_text())
    for name, value in files.items():
        text = json.dumps(value, ensure_ascii=False).encode()
        write(out, "tokenizer_json_fuzz", name, text + "\0Hello, world! Héllo wörld.".encode())


def model_files(out, models):
    header = {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
              "b": {"dtype": "BF16", "shape": [2], "data_offsets": [16, 20]},
              "__metadata__": {"format": "pt"}}
    raw = json.dumps(header).encode()
    write(out, "model_files_fuzz", "safetensors", b"\0" + struct.pack("<Q", len(raw)) + raw + bytes(20))
    if models and models.is_dir():
        for directory in sorted(p for p in models.iterdir() if p.is_dir()):
            config = (directory / "config.json").read_bytes()
            write(out, "model_files_fuzz", f"{directory.name}_config", b"\1" + config)
            st = directory / "config_sentence_transformers.json"
            write(out, "model_files_fuzz", f"{directory.name}_head",
                  b"\2" + config + b"\0" + (st.read_bytes() if st.exists() else b"null"))
            parts = [config]
            for name in ["modules.json", "1_Pooling/config.json", "2_Dense/config.json",
                         "sentence_bert_config.json", "tokenizer_config.json", "config_sentence_transformers.json"]:
                path = directory / name
                parts.append(path.read_bytes() if path.exists() else b"")
            write(out, "model_files_fuzz", f"{directory.name}_dir", b"\3" + b"\0".join(parts))


def batcher_ops(out):
    seeds = {
        "submits": bytes([0, 5, 0, 40, 0, 47, 5, 0, 3]),
        "poison": bytes([0, 10, 1, 10, 0, 10, 1, 30, 5]),
        "deadline": bytes([2, 20, 0, 2, 20, 200, 5, 5]),
        "priority": bytes([3, 10, 4, 3, 30, 0, 0, 8]),
        "cancel": bytes([0, 20, 0, 20, 4, 0, 4, 1, 5]),
        "drain": bytes([0, 20, 0, 30, 6, 0, 0, 5]),
        "cancel_queued": bytes([0, 40, 0, 40, 0, 40, 6, 1, 0, 5]),
        "too_long": bytes([7, 10, 0, 5]),
    }
    for name, data in seeds.items():
        write(out, "batcher_ops_fuzz", name, data)


def main():
    out = pathlib.Path(sys.argv[1])
    models = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else None
    request_bodies(out)
    http_requests(out)
    texts(out)
    tokenizer_files(out)
    model_files(out, models)
    batcher_ops(out)


if __name__ == "__main__":
    main()
