"""Differential fuzzer: tokenbatch's tokenizer against Hugging Face `tokenizers`
(the reference) on the generated tokenizers of fuzz_tokenizers.py and
fuzz_converted.py, fed random Unicode from fuzz_text.py.

For every text, with and without special tokens, it compares the ids, the
offsets (tokenbatch reports bytes, tokenizers characters: converted here), the
count, and the decoding of those ids with and without skipping special tokens.
A mismatch is shrunk (characters removed while it still mismatches) and
reported; with --record it is appended to the regression file, which
python/tests/test_tokenizer_differential.py replays on every run.

Usage, from the repository root, with the package installed in build/venv
(scripts/test.sh does that):
    build/venv/bin/python -m scripts.tokenizer.differential_fuzz --seconds 2
    build/venv/bin/python -m scripts.tokenizer.differential_fuzz --seconds 300 --seed 7 --record
--seconds is the budget per tokenizer; --only NAME[,NAME] restricts the set.
Exit status 1 when anything mismatched.
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import tokenizers

import tokenbatch
from scripts.tokenizer.fuzz_text import make_generator, set_unstable
from scripts.tokenizer.fuzz_unicode_versions import unstable_code_points

REPO = pathlib.Path(__file__).resolve().parents[2]
REGRESSIONS = REPO / "testdata" / "tokenizer" / "fuzz_regressions.jsonl"
CORPORA = [REPO / "testdata" / "tokenizer" / "realtext.jsonl", REPO / "testdata" / "tokenizer" / "realtext_multilingual.jsonl"]


def training_lines(seed=0, generated=150):
    """The real texts, a line per sentence, plus generated ones so that vocabularies
    hold some rare characters."""
    lines = []
    for path in CORPORA:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                lines.extend(s for s in json.loads(line)["text"].split("\n") if s.strip())
    gen = make_generator(seed, [], [])
    lines.extend(gen.text(30) for _ in range(generated))
    return lines


def byte_to_char_offsets(text):
    """index[b] = number of characters before byte b of text's UTF-8, for every b."""
    index = []
    for i, ch in enumerate(text):
        index.extend([i] * len(ch.encode("utf-8")))
    index.append(len(text))
    return index


def outcome(call):
    try:
        return call()
    except Exception as error:  # both sides raise their own types; only raising at all is compared
        return ("error", type(error).__name__ if not isinstance(error, ValueError) else "error")


def observe(ours, theirs, text):
    """Every compared observable of `text`, as (ours, theirs) dicts."""
    out_ours, out_theirs = {}, {}
    index = byte_to_char_offsets(text)
    for special in (True, False):
        t = outcome(lambda: theirs.encode(text, add_special_tokens=special))
        o = outcome(lambda: ours.encode(text, add_special_tokens=special))
        key = "special" if special else "plain"
        if isinstance(t, tuple) or isinstance(o, tuple):
            out_theirs[key] = "error" if isinstance(t, tuple) else t.ids
            out_ours[key] = "error" if isinstance(o, tuple) else o.ids
            continue
        out_theirs[key + ".ids"], out_ours[key + ".ids"] = t.ids, list(o.ids)
        out_theirs[key + ".offsets"] = [tuple(x) for x in t.offsets]
        out_ours[key + ".offsets"] = [(index[b], index[e]) for b, e in o.offsets]
        out_ours[key + ".count"], out_theirs[key + ".count"] = ours.count(text, add_special_tokens=special), len(t.ids)
        for skip in (True, False):
            dkey = f"{key}.decode.skip={skip}"
            out_theirs[dkey] = outcome(lambda: theirs.decode(t.ids, skip_special_tokens=skip))
            out_ours[dkey] = outcome(lambda: ours.decode(list(t.ids), skip_special_tokens=skip))
    return out_ours, out_theirs


def differences(ours, theirs, text):
    o, t = observe(ours, theirs, text)
    return sorted(k for k in set(o) | set(t) if o.get(k) != t.get(k))


def shrink(ours, theirs, text):
    """A shorter text that still mismatches (greedy removal of chunks, then characters)."""
    chunk = max(1, len(text) // 2)
    while chunk >= 1:
        i = 0
        while i < len(text):
            candidate = text[:i] + text[i + chunk:]
            if candidate != text and differences(ours, theirs, candidate):
                text = candidate
            else:
                i += chunk
        chunk //= 2
    return text


class Pair:
    """One generated tokenizer loaded by both implementations."""

    def __init__(self, name, path):
        self.name = name
        self.path = path
        self.theirs = tokenizers.Tokenizer.from_file(path)
        self.ours = tokenbatch.Tokenizer.from_file(path)
        data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        self.added = [t["content"] for t in data.get("added_tokens") or []]
        self.vocab = list(self.theirs.get_vocab(with_added_tokens=False))

    def check(self, text):
        return differences(self.ours, self.theirs, text)

    def report(self, text):
        text = shrink(self.ours, self.theirs, text)
        o, t = observe(self.ours, self.theirs, text)
        keys = sorted(k for k in set(o) | set(t) if o.get(k) != t.get(k))
        return {"tokenizer": self.name, "text": text, "fields": keys,
                "ours": {k: o.get(k) for k in keys}, "theirs": {k: t.get(k) for k in keys}}


def build(out_dir, only=None):
    from scripts.tokenizer.fuzz_tokenizers import build_all
    paths = build_all(out_dir, training_lines(), os.path.join(out_dir, "spm"))
    return {n: p for n, p in paths.items() if not only or n in only}


def fuzz(pair, seconds, seed, max_findings=5):
    """Random texts for `seconds`; returns (texts checked, shrunk findings)."""
    gen = make_generator(seed, pair.vocab, pair.added)
    findings, seen, checked = [], set(), 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(findings) < max_findings:
        text = gen.text()
        checked += 1
        if pair.check(text):
            finding = pair.report(text)
            key = (finding["tokenizer"], tuple(finding["fields"]), finding["text"])
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    return checked, findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="fuzzing budget per tokenizer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated tokenizer names")
    parser.add_argument("--out", default="", help="folder for the generated tokenizers (default: a temporary one)")
    parser.add_argument("--record", action="store_true", help=f"append findings to {REGRESSIONS.relative_to(REPO)}")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        paths = build(args.out or tmp, only)
        unstable = unstable_code_points(tmp)
        set_unstable(unstable)
        print(f"{len(unstable)} code points left out: assigned after Unicode 8.0 (or recategorised since) and "
              "classified by the reference's older tables differently", flush=True)
        total, all_findings = 0, []
        for i, (name, path) in enumerate(sorted(paths.items())):
            checked, findings = fuzz(Pair(name, path), args.seconds, args.seed * 1000 + i)
            total += checked
            print(f"{name}: {checked} texts, {len(findings)} mismatches", flush=True)
            for f in findings:
                print("  " + json.dumps(f, ensure_ascii=True), flush=True)
            all_findings.extend(findings)
    print(f"{len(paths)} tokenizers, {total} texts, {len(all_findings)} mismatches")
    if args.record and all_findings:
        with REGRESSIONS.open("a", encoding="utf-8") as f:
            for finding in all_findings:
                f.write(json.dumps({"tokenizer": finding["tokenizer"], "text": finding["text"],
                                    "found": "differential_fuzz: " + ", ".join(finding["fields"])},
                                   ensure_ascii=True) + "\n")
    sys.exit(1 if all_findings else 0)


if __name__ == "__main__":
    main()
