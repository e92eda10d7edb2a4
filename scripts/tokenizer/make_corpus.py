"""Writes the tokenizer test corpus.

testdata/tokenizer/corpus.jsonl: hand-picked corner cases plus long documents.
testdata/tokenizer/realtext.jsonl: a few thousand texts of real prose and poetry
from Debian's fortunes, fortunes-zh and base-files (common-licenses) packages.

Deterministic: run it again and the files come out the same. Whitespace is
trimmed and split with ECMAScript's definition of whitespace and documents are
cut in UTF-16 code units, so that the output is byte-identical to the files the
project's earlier JavaScript version of this script wrote.

Usage, from the repository root: python3 scripts/tokenizer/make_corpus.py
"""

import json
import os
import re

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "tokenizer")
FORTUNES = "/usr/share/games/fortunes"
LICENSES = "/usr/share/common-licenses"
# ECMAScript's WhiteSpace and LineTerminator code points (String.prototype.trim, \s).
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000\ufeff"
PARAGRAPH_BREAK = re.compile("\n[" + re.escape(JS_SPACE) + "]*\n")

CASES = [
    ('empty', ''),
    ('space', ' '),
    ('whitespace_only', '   \t\n  '),
    ('newlines_only', '\n\n\n'),
    ('hello', 'Hello, world!'),
    ('upper_contractions', "HELLO WORLD I'M HERE. YOU'RE, WE'VE, THEY'LL, SHE'D, IT'S DON'T"),
    ('lower_contractions', "don't can't won't I'm you're we've they'll she'd it's"),
    ('crlf', 'line one\r\nline two\r\n\r\nline three\r\n'),
    ('whitespace_runs', 'a    b\t\t\tc     \n   d  \u00a0 e\u3000f'),
    ('trailing_spaces', 'end   '),
    ('leading_spaces', '    start'),
    ('long_digits', '1234567890123456789012345 and 007 and 3.14159 2,000,000 10^9'),
    ('chinese', '我爱北京天安门。今天天气很好，我们去公园吧！'),
    ('japanese', '東京は日本の首都です。カタカナとひらがな、漢字。'),
    ('korean', '안녕하세요 세계. 한국어 텍스트입니다.'),
    ('cjk_ext', '\U00020000\U00020001\U0002A700\U0002B740\U0002B820\U0002B920\U0002CEA0\U0002F800\U00030000'),
    ('cjk_compat', '\uF900\uF901\uFA0E 豈 更'),
    ('mixed_scripts', 'Привет мир, γειά σου κόσμε, مرحبا بالعالم, שלום עולם, नमस्ते दुनिया, สวัสดีชาวโลก'),
    ('mixed_inline', 'GPU显存16GB，batch_size=32时throughput达到1200 tokens/s。'),
    ('emoji', '👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇯🇵 😀😃😄 #️⃣'),
    ('combining', 'e\u0301 a\u0308 o\u0302\u0323 Z\u0351\u0352a\u0353l\u0354g\u0355o'),
    ('precomposed_accents', 'café naïve résumé Ångström Ærøskøbing Crème Brûlée'),
    ('decomposed_accents', 'cafe\u0301 nai\u0308ve re\u0301sume\u0301'),
    ('full_width', 'ＡＢＣ１２３！？ｈｅｌｌｏ　ｗｏｒｌｄ（テスト）'),
    ('ligatures_compat', 'ﬁne ﬂow ① ² ½ ™ Ⅻ ㎏ ｶﾀｶﾅ'),
    ('long_word_150', 'a' * 150),
    ('long_word_mixed', 'supercalifragilistic' * 8),
    ('long_url', 'see https://example.com/' + 'x' * 120 + '?q=1&r=2 now'),
    ('long_cjk_run', '的' * 120),
    ('qwen_special_inline', 'foo<|im_start|>bar<|im_end|>baz<|endoftext|>'),
    ('chat', '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n'),
    ('partial_special', '<|im_start <|im_end| <|endoftext|'),
    ('bert_special_inline', '[CLS] hello [SEP] world [MASK]. [UNK][PAD]'),
    ('llama_special_inline', '<|begin_of_text|>hi<|eot_id|><|start_header_id|>user<|end_header_id|>'),
    ('control_chars', 'a\u0000b\u0007c\u001bd\u200be\ufefff\u00adg'),
    ('replacement_char', 'bad\ufffdchar'),
    ('code', 'def foo(x):\n    return x**2  # comment\n\n\tif (a && b) { c++; }\n'),
    ('json', '{"a": [1, 2, 3], "b": {"c": null}}'),
    ('turkish', 'İstanbul DİYARBAKIR ıi İi'),
    ('german', 'Straße STRASSE Grüße'),
    ('greek_sigma', 'ΟΔΥΣΣΕΥΣ Σίσυφος'),
    ('punctuation_runs', '!!!??? ... --- *** ___ ~~~ ``` \'\'\' """'),
    ('apostrophes', "rock 'n' roll, the '90s, O'Neil's 'quoted'"),
    ('newline_mix', 'a\n\nb\r\rc\u2028d\u2029e\u0085f'),
    ('tabs', '\tindented\n\t\tdouble\n'),
    ('numbers_mixed', 'v1.2.3 0x1F 1e-5 ١٢٣ ४५६ ¾'),
    ('math', '∀x∈ℝ: x²≥0 ∑ ∫ √2 ≈ 1.414'),
    ('private_use', 'a\uE000b\U000F0000c'),
    ('new_emoji_u15', 'shaking \U0001FAE8 face'),
    ('unicode_15_1_and_16', 'ext-I \U0002EBF0\U0002EBF1 bags \U0001FAE9 garay \U00010D50\U00010D51 legacy \U0001CC00'),
    ('added_token_forms', 'Tokenbatch tokenbatch xTokenbatch Tokenbatchy TOKENBATCH! a  <sep>  b<sep>c STRASSE Straße'),
    ('hangul_jamo', '\u1100\u1161\u11A8 \u1112\u1161\u11AB'),
    ('bom_and_zero_width', '\ufeffstart\u200c\u200d end\u2060'),
]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def utf16_prefix(text, units):
    """The first `units` UTF-16 code units of text (never splitting a surrogate pair)."""
    used = 0
    for i, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            return text[:i]
    return text


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def fortunes(name, n):
    entries = (s.strip(JS_SPACE) for s in read(os.path.join(FORTUNES, name)).split("\n%\n"))
    return [s for s in entries if s][:n]


def paragraphs(name, n):
    entries = (s.strip(JS_SPACE) for s in PARAGRAPH_BREAK.split(read(os.path.join(LICENSES, name))))
    return [s for s in entries if s][:n]


def main():
    docs = [
        ("long_doc_gpl3", utf16_prefix(read(os.path.join(LICENSES, "GPL-3")), 20000)),
        ("long_doc_tang300", "\n".join(read(os.path.join(FORTUNES, "tang300")).split("\n%\n")[:60])),
        ("long_doc_mixed", utf16_prefix(read(os.path.join(LICENSES, "Apache-2.0")), 6000) + "\n\n"
         + "\n".join(read(os.path.join(FORTUNES, "song100")).split("\n%\n")[:30])),
    ]
    lines = [dumps({"name": name, "text": text}) for name, text in CASES + docs]
    with open(os.path.join(OUT, "corpus.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")

    # Real text: fortune entries (split on "%" lines) and license paragraphs.
    real = []
    sources = [("fortunes/fortunes", fortunes("fortunes", 400)),
               ("fortunes/literature", fortunes("literature", 300)),
               ("fortunes/computers", fortunes("computers", 300)),
               ("fortunes/science", fortunes("science", 200)),
               ("fortunes/chinese", fortunes("chinese", 250)),
               ("fortunes/tang300", fortunes("tang300", 300)),
               ("fortunes/song100", fortunes("song100", 100)),
               ("licenses/GPL-3", paragraphs("GPL-3", 300)),
               ("licenses/Apache-2.0", paragraphs("Apache-2.0", 200)),
               ("licenses/MPL-2.0", paragraphs("MPL-2.0", 200))]
    for source, texts in sources:
        real.extend({"name": f"{source}#{i}", "text": text} for i, text in enumerate(texts))
    with open(os.path.join(OUT, "realtext.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(dumps(r) for r in real) + "\n")
    print(f"corpus: {len(lines)} texts; realtext: {len(real)} texts")


if __name__ == "__main__":
    main()
