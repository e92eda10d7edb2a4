"""Writes the tokenizer test corpus.

testdata/tokenizer/corpus.jsonl: hand-picked corner cases plus long documents.
testdata/tokenizer/realtext.jsonl: a few thousand texts of real prose and poetry
from Debian's fortunes, fortunes-zh and base-files (common-licenses) packages.
testdata/tokenizer/realtext_multilingual.jsonl: about 2,200 real texts in 25
languages and many scripts (Japanese, Chinese, Korean, Arabic, Persian, Hebrew,
Russian, Ukrainian, Greek, Hindi, Bengali, Tamil, Thai, Georgian, Amharic, and
accented Latin: French, German, Spanish, Portuguese, Polish, Vietnamese,
Turkish, Czech, Romanian): the translations in the gettext message catalogs
(/usr/share/locale/<lang>/LC_MESSAGES/<catalog>.mo) of the Debian packages
libpam-runtime (Linux-PAM), packagekit (PackageKit), apt (apt), libapt-pkg6.0,
at-spi2-common (at-spi2-core), bash, coreutils, dpkg, libgdk-pixbuf2.0-common
(gdk-pixbuf), gettext (gettext-tools), libglib2.0-data (glib20), grep,
libgtk2.0-common (gtk20, gtk20-properties), iso-codes (iso_3166-1, iso_639-3),
libc-l10n (libc), sed, login (shadow), shared-mime-info,
software-properties-common (software-properties), systemd, tar, wget,
xdg-user-dirs and xkb-data (xkeyboard-config); a catalog a language lacks is
skipped. Texts are kept exactly as translated (format directives, newlines,
tabs and runs of spaces included); the header entry, empty and untranslated
(msgstr == msgid) entries and repeats are dropped. Per language the candidates
(catalogs and msgids sorted) are put in length classes and the same number is
taken, evenly spaced, from each, so that lengths spread from single words to
paragraphs. Plus the real texts with emoji found in Debian packages: catalog
entries with emoji in any language (procps's Romanian procps-ng.mo,
libgtk2.0-common's Occitan gtk20.mo) and the lines with emoji of systemd's NEWS
and the changelogs of libfmt9 and nlohmann-json3-dev (/usr/share/doc). Names: <lang>/<catalog>#<n>, n the
entry's position in the catalog sorted by msgid (plural forms as #<n>.<form>),
and emoji/<package>/<file>#<line>.

Deterministic: run it again and the files come out the same. Whitespace is
trimmed and split with ECMAScript's definition of whitespace and documents are
cut in UTF-16 code units, so that the output is byte-identical to the files the
project's earlier JavaScript version of this script wrote.

Usage, from the repository root: python3 scripts/tokenizer/make_corpus.py
"""

import gzip
import json
import os
import re
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "tokenizer")
FORTUNES = "/usr/share/games/fortunes"
LICENSES = "/usr/share/common-licenses"
# ECMAScript's WhiteSpace and LineTerminator code points (String.prototype.trim, \s).
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000\ufeff"
PARAGRAPH_BREAK = re.compile("\n[" + re.escape(JS_SPACE) + "]*\n")
LOCALE = "/usr/share/locale"
LANGUAGES = ["ja", "zh_CN", "zh_TW", "ko", "ar", "fa", "he", "ru", "uk", "el", "hi", "bn", "ta", "th",
             "ka", "am", "fr", "de", "es", "pt", "pl", "vi", "tr", "cs", "ro"]
CATALOGS = ["Linux-PAM", "PackageKit", "apt", "at-spi2-core", "bash", "coreutils", "dpkg", "gdk-pixbuf",
            "gettext-tools", "glib20", "grep", "gtk20", "gtk20-properties", "iso_3166-1", "iso_639-3",
            "libapt-pkg6.0", "libc", "sed", "shadow", "shared-mime-info", "software-properties", "systemd",
            "tar", "wget", "xdg-user-dirs", "xkeyboard-config"]
PER_LANGUAGE = 88
# Length classes in code points (upper bounds); the last one is open.
LENGTH_CLASSES = [12, 30, 70, 160, 400]
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF]")
EMOJI_DOCS = [("systemd", "/usr/share/doc/systemd/NEWS.gz"),
              ("libfmt9", "/usr/share/doc/libfmt9/changelog.gz"),
              ("nlohmann-json3-dev", "/usr/share/doc/nlohmann-json3-dev/changelog.gz")]

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


def read_mo(path):
    """(msgid, msgstr) byte strings of a GNU .mo file, in file order."""
    with open(path, "rb") as f:
        data = f.read()
    order = "<" if struct.unpack("<I", data[:4])[0] == 0x950412DE else ">"
    count, ids_at, strs_at = struct.unpack(order + "3I", data[8:20])
    entries = []
    for i in range(count):
        id_len, id_pos = struct.unpack(order + "2I", data[ids_at + 8 * i:ids_at + 8 * i + 8])
        str_len, str_pos = struct.unpack(order + "2I", data[strs_at + 8 * i:strs_at + 8 * i + 8])
        entries.append((data[id_pos:id_pos + id_len], data[str_pos:str_pos + str_len]))
    return entries


def catalog_texts(path):
    """(name suffix, text) of a catalog's translations, msgids sorted; plural forms apart."""
    entries = read_mo(path)
    charset = "utf-8"
    for msgid, msgstr in entries:
        if msgid == b"":
            m = re.search(rb"charset=([-\w]+)", msgstr)
            if m and m.group(1).lower() not in (b"charset", b"utf-8"):
                charset = m.group(1).decode("ascii")
    out = []
    for n, (msgid, msgstr) in enumerate(sorted(e for e in entries if e[0] != b"")):
        forms = msgstr.decode(charset).split("\0")
        english = msgid.split(b"\x04")[-1].decode(charset, "replace").split("\0")
        for k, text in enumerate(forms):
            if text and text not in english:
                out.append((f"#{n}" if len(forms) == 1 else f"#{n}.{k}", text))
    return out


def spread(texts, n):
    """n texts taken evenly from each length class (leftover quota passed on)."""
    classes = [[] for _ in range(len(LENGTH_CLASSES) + 1)]
    for position, (_, text) in enumerate(texts):
        length = len(text)
        classes[next((i for i, b in enumerate(LENGTH_CLASSES) if length <= b), len(LENGTH_CLASSES))].append(position)
    picked = []
    left = n
    for i, cls in enumerate(sorted(classes, key=len)):
        k = min(left // (len(classes) - i), len(cls))
        picked.extend(cls[j * len(cls) // k] for j in range(k))
        left -= k
    return [texts[position] for position in sorted(picked)]


def multilingual():
    real = []
    seen = set()
    for lang in LANGUAGES:
        candidates = []
        for catalog in CATALOGS:
            path = os.path.join(LOCALE, lang, "LC_MESSAGES", catalog + ".mo")
            if not os.path.exists(path):
                continue
            for suffix, text in catalog_texts(path):
                if text not in seen:
                    seen.add(text)
                    candidates.append((f"{lang}/{catalog}{suffix}", text))
        real.extend({"name": name, "text": text} for name, text in spread(candidates, PER_LANGUAGE))
    # Real text with emoji: catalog entries in any language, and lines of changelogs.
    for lang in sorted(os.listdir(LOCALE)):
        folder = os.path.join(LOCALE, lang, "LC_MESSAGES")
        if not os.path.isdir(folder):
            continue
        for f in sorted(os.listdir(folder)):
            if f.endswith(".mo"):
                for suffix, text in catalog_texts(os.path.join(folder, f)):
                    if EMOJI.search(text) and text not in seen:
                        seen.add(text)
                        real.append({"name": f"{lang}/{f[:-3]}{suffix}", "text": text})
    for package, path in EMOJI_DOCS:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for number, line in enumerate(f.read().split("\n"), 1):
                if EMOJI.search(line) and line not in seen:
                    seen.add(line)
                    real.append({"name": f"emoji/{package}/{os.path.basename(path)}#{number}", "text": line})
    return real


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
    multi = multilingual()
    with open(os.path.join(OUT, "realtext_multilingual.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(dumps(r) for r in multi) + "\n")
    print(f"corpus: {len(lines)} texts; realtext: {len(real)} texts; "
          f"realtext_multilingual: {len(multi)} texts")


if __name__ == "__main__":
    main()
