"""The code points on which tokenbatch and the reference wheel read different
Unicode versions, measured rather than assumed, for the differential fuzzer.

Hugging Face tokenizers classifies characters with tables of several ages:
the unicode_categories and unicode-normalization-alignments crates (general
categories: Unicode 8.0; combining classes and decompositions) for
BertNormalizer, BertPreTokenizer, Punctuation, StripAccents and NFC/NFD/NFKC/
NFKD, and Rust's standard library (Unicode 16.0) elsewhere. tokenbatch reads
Debian's utf8proc (Unicode 15.0) for those, and generated Unicode 16.0 tables
where the reference uses the standard library or the regex crate
(src/tokenizer/unicode_tables.inc).

unstable_code_points() probes every assigned code point through small
tokenizers of those components, in both implementations, and returns those
where a single character is classified differently. Each must have been
assigned after Unicode 8.0 (DerivedAge.txt of Debian's unicode-data package)
or be one of the older characters whose General_Category changed since
(CATEGORY_CHANGED); any other is a defect and raises. The fuzzer leaves the rest out of its
random text: docs/tokenizer-coverage.md lists this as the known difference.
"""

import os
import pathlib

import tokenizers
import unicodedata2
from tokenizers import decoders, models, normalizers, pre_tokenizers

import tokenbatch

DERIVED_AGE = pathlib.Path("/usr/share/unicode/DerivedAge.txt")
# Unicode 8.0: the version of the reference's oldest table (unicode_categories).
OLDEST_TABLE = (8, 0)
# Characters of Unicode 8.0 or before whose General_Category later versions
# changed, so that the reference's 8.0 table and utf8proc's 15.0 one disagree.
CATEGORY_CHANGED = {
    0x166D: "CANADIAN SYLLABICS CHI SIGN, Po to So",
    0x1734: "HANUNOO SIGN PAMUDPOD, Mn to Mc",
    0x1885: "MONGOLIAN LETTER ALI GALI BALUDA, Lo to Mn",
    0x1886: "MONGOLIAN LETTER ALI GALI THREE BALUDA, Lo to Mn",
    0x1CF2: "VEDIC SIGN ARDHAVISARGA, Mc to Lo",
    0x1CF3: "VEDIC SIGN ROTATED ARDHAVISARGA, Mc to Lo",
    0xA9BD: "JAVANESE CONSONANT SIGN KERET, Mc to Mn",
    0x111C9: "SHARADA SANDHI MARK, Po to Mn",
}


def ages():
    """{code point: (major, minor)} for every code point assigned up to the
    unicode-data package's version."""
    out = {}
    for line in DERIVED_AGE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        cps, age = (f.strip() for f in line.split(";"))
        lo, _, hi = cps.partition("..")
        version = tuple(int(x) for x in age.split("."))
        for c in range(int(lo, 16), int(hi or lo, 16) + 1):
            out[c] = version
    return out


def char_offsets(text, byte_offsets):
    """tokenbatch's byte offsets into `text` as character offsets."""
    index = []
    for i, ch in enumerate(text):
        index.extend([i] * len(ch.encode("utf-8")))
    index.append(len(text))
    return [(index[b], index[e]) for b, e in byte_offsets]


def probes():
    """(name, tokenizer, text of a code point): one per table-dependent component."""
    def make(normalizer=None, pre=None):
        tok = tokenizers.Tokenizer(models.WordLevel({"<unk>": 0, "a": 1}, unk_token="<unk>"))
        tok.normalizer = normalizer
        tok.pre_tokenizer = pre or pre_tokenizers.FixedLength(length=1)
        tok.decoder = decoders.Fuse()
        return tok
    marks = lambda c: "a\u0301" + c + "\u0316"  # noqa: E731 - reordering and composition around c
    return [
        ("StripAccents", make(normalizers.StripAccents()), lambda c: "a" + c),
        ("NFD", make(normalizers.NFD()), marks),
        ("NFC", make(normalizers.NFC()), marks),
        ("NFKD", make(normalizers.NFKD()), marks),
        ("NFKC", make(normalizers.NFKC()), marks),
        ("BertNormalizer", make(normalizers.BertNormalizer(lowercase=True)), lambda c: "a" + c),
        ("BertNormalizer-cased", make(normalizers.BertNormalizer(lowercase=False, strip_accents=True)),
         lambda c: "a" + c),
        ("Punctuation", make(pre=pre_tokenizers.Punctuation()), lambda c: "a" + c + "a"),
        ("BertPreTokenizer", make(pre=pre_tokenizers.BertPreTokenizer()), lambda c: "a" + c + "a"),
    ]


def unstable_code_points(tmp_dir):
    """The assigned code points (Unicode 16.0, private use excluded) that some probe
    classifies differently in tokenbatch and the reference; raises ValueError for
    one assigned in Unicode 8.0 or before, unless CATEGORY_CHANGED names it."""
    candidates = [c for c in range(0x110000)
                  if not 0xD800 <= c <= 0xDFFF and unicodedata2.category(chr(c)) not in ("Cn", "Co")]
    unstable = {}
    for name, theirs, text_of in probes():
        path = os.path.join(tmp_dir, f"probe_{name}.json")
        theirs.save(path)
        ours = tokenbatch.Tokenizer.from_file(path)
        texts = [text_of(chr(c)) for c in candidates]
        for c, text, t, o in zip(candidates, texts, theirs.encode_batch(texts, add_special_tokens=False),
                                 ours.encode_batch(texts, add_special_tokens=False)):
            if t.ids != list(o.ids) or [tuple(x) for x in t.offsets] != char_offsets(text, o.offsets):
                unstable.setdefault(c, name)
    age = ages()
    # A decomposition that the reference's normalization tables do not have yet
    # is invisible to the probes' one-piece vocabulary: left out by age.
    for c in candidates:
        if age.get(c, (99, 0)) > OLDEST_TABLE and unicodedata2.decomposition(chr(c)):
            unstable.setdefault(c, "decomposition")
    old = sorted(c for c in unstable if age.get(c, (99, 0)) <= OLDEST_TABLE and c not in CATEGORY_CHANGED)
    if old:
        raise ValueError("code points of Unicode 8.0 or older classified differently from the reference: " +
                         ", ".join(f"U+{c:04X} ({unstable[c]})" for c in old[:20]))
    return unstable
