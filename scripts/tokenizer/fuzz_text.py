"""Random Unicode text for the differential tokenizer fuzzer
(scripts/tokenizer/differential_fuzz.py).

A text is a run of atoms, each drawn from one family: words of the tokenizer's
own vocabulary, ASCII, code points from every plane (assigned or not, private
use, noncharacters), combining sequences, joiners and emoji sequences, bidi
controls, whitespace runs, control characters, and the tokenizer's added tokens
(whole, cut short or doubled) glued to a character of every class that
decides a word boundary.

Left out: code points whose properties changed after Unicode 14.0 (the
version of this Python's unicodedata; tokenbatch reads most properties from
Debian's utf8proc, Unicode 15.0, while some of the reference's tables are
newer), those assigned after Unicode 16.0 (the pinned `regex` module's newer
tables know them: the reference's Rust standard library is newer than 16.0
too, for char::is_numeric and to_lowercase), and those that fuzz_unicode_versions.py measured to be classified by
the reference's older tables differently (set_unstable). Both are the
documented difference of docs/tokenizer-coverage.md, not findings.
"""

import functools
import random
import unicodedata

import regex
import unicodedata2

# Characters whose class decides a single_word boundary or a split: letters,
# digits, marks, letter numbers (Nl), circled letters (So but Alphabetic),
# connector punctuation, joiners, other punctuation, symbols, spaces.
BOUNDARY_CHARS = (
    "aZé9٣_‿\u0301\u200d\u200cⅣ〇Ⓐⓩ🅰.,!?-'\"()[]<>/\\|@#$%^&*+=~`€£¥©®™° \t\n\u00a0\u3000")
WHITESPACE = " \t\n\r\u000b\u000c\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
INVISIBLE = "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u00ad\u034f\u180e"
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
CONTROL = "".join(chr(c) for c in list(range(0x00, 0x20)) + list(range(0x7f, 0xa0)))
MARKS = [(0x0300, 0x036F), (0x0483, 0x0489), (0x0591, 0x05BD), (0x064B, 0x065F), (0x0900, 0x0903),
         (0x093A, 0x094F), (0x1AB0, 0x1ACE), (0x1DC0, 0x1DFF), (0x20D0, 0x20F0), (0xFE00, 0xFE0F),
         (0xFE20, 0xFE2F), (0x1D165, 0x1D169), (0x1D16D, 0x1D172), (0xE0100, 0xE01EF)]
EMOJI = ["👍🏽", "👩\u200d💻", "🏳\ufe0f\u200d🌈", "❤\ufe0f", "🇯🇵", "1\ufe0f\u20e3", "🤖", "😀", "#\ufe0f\u20e3"]
SCRIPTS = ["Hello", "naïve", "straße", "İstanbul", "ǅemal", "ΣΊΣΥΦΟΣ", "Привет", "שָׁלוֹם", "مرحبا", "नमस्ते",
           "ভাষা", "ஆங்கிலம்", "ไทย", "ລາວ", "ქართ", "한국어", "日本語", "ひらがな", "カタカナー", "中文", "Ⅻ",
           "ﬁ", "Ｆｕｌｌ", "①②", "x²", "½", "ｶﾞ", "\u1100\u1161\u11a8", "e\u0301", "Å", "\u0130i\u0307"]
# Planes and blocks drawn from uniformly by their share below (lo, hi, weight).
PLANES = [(0x0000, 0x07FF, 6), (0x0800, 0xFFFF, 8), (0x10000, 0x1FFFF, 4), (0x20000, 0x2FFFF, 2),
          (0x30000, 0x3FFFF, 1), (0xE0000, 0xE01FF, 1), (0xF0000, 0x10FFFF, 1)]


UNSTABLE = set()
UNASSIGNED = regex.compile(r"\p{Cn}")


def set_unstable(code_points):
    """Leaves `code_points` out of every generated text from now on."""
    UNSTABLE.clear()
    UNSTABLE.update(code_points)
    stable.cache_clear()


@functools.lru_cache(maxsize=None)
def stable(c):
    """False for a code point whose properties differ between Unicode 14.0 and 16.0,
    that was assigned after 16.0, or that set_unstable named."""
    ch = chr(c)
    return (c not in UNSTABLE and unicodedata.category(ch) == unicodedata2.category(ch)
            and (unicodedata2.category(ch) != "Cn" or UNASSIGNED.match(ch) is not None)
            and unicodedata.decomposition(ch) == unicodedata2.decomposition(ch)
            and unicodedata.combining(ch) == unicodedata2.combining(ch))


def any_code_point(rng):
    lo, hi, _ = rng.choices(PLANES, weights=[w for _, _, w in PLANES])[0]
    while True:
        c = rng.randint(lo, hi)
        if not 0xD800 <= c <= 0xDFFF and stable(c):
            return chr(c)


def mark(rng):
    lo, hi = rng.choice(MARKS)
    c = rng.randint(lo, hi)
    return chr(c) if stable(c) else "\u0301"


class TextGenerator:
    """Draws texts for one tokenizer. `vocab` are its token strings, `added`
    its added tokens' contents (both may be empty)."""

    def __init__(self, rng, vocab, added):
        self.rng = rng
        self.vocab = [t for t in vocab if t and len(t) < 24 and all(stable(ord(ch)) for ch in t)]
        self.added = [t for t in added if t]
        self.families = [
            (self.vocab_word, 6), (self.ascii, 5), (self.script_word, 4), (self.code_points, 4),
            (self.combining, 3), (self.emoji, 2), (self.whitespace, 4), (self.invisible, 2), (self.bidi, 1),
            (self.control, 1), (self.added_token, 5 if self.added else 0), (self.boundary, 3),
        ]
        self.weights = [w for _, w in self.families]

    def text(self, max_atoms=12):
        rng = self.rng
        parts = [rng.choices(self.families, weights=self.weights)[0][0]() for _ in range(rng.randint(0, max_atoms))]
        return "".join(parts)

    def vocab_word(self):
        if not self.vocab:
            return self.ascii()
        word = self.rng.choice(self.vocab)
        # Byte-level and Metaspace vocabularies write spaces as Ġ or ▁.
        return word.replace("\u0120", " ").replace("\u2581", " ") if self.rng.random() < 0.7 else word

    def ascii(self):
        rng = self.rng
        return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(1, 8)))

    def script_word(self):
        return self.rng.choice(SCRIPTS)

    def code_points(self):
        return "".join(any_code_point(self.rng) for _ in range(self.rng.randint(1, 4)))

    def combining(self):
        base = self.rng.choice(["a", "e", "o", " ", "", "ß", "ы", "क", "字", "1", "_", any_code_point(self.rng)])
        return base + "".join(mark(self.rng) for _ in range(self.rng.randint(1, 4)))

    def emoji(self):
        return self.rng.choice(EMOJI)

    def whitespace(self):
        return "".join(self.rng.choice(WHITESPACE) for _ in range(self.rng.randint(1, 5)))

    def invisible(self):
        return self.rng.choice(INVISIBLE)

    def bidi(self):
        return self.rng.choice(BIDI)

    def control(self):
        return self.rng.choice(CONTROL)

    def boundary(self):
        return self.rng.choice(BOUNDARY_CHARS)

    def added_token(self):
        rng = self.rng
        token = rng.choice(self.added)
        roll = rng.random()
        if roll < 0.15 and len(token) > 1:
            token = token[:rng.randint(1, len(token) - 1)]  # a look-alike cut short
        elif roll < 0.25:
            token = token * 2
        before = rng.choice(BOUNDARY_CHARS) if rng.random() < 0.6 else ""
        after = rng.choice(BOUNDARY_CHARS) if rng.random() < 0.6 else ""
        return before + token + after


def make_generator(seed, vocab, added):
    return TextGenerator(random.Random(seed), vocab, added)
