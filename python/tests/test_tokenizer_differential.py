"""tokenbatch.Tokenizer against Hugging Face tokenizers on generated tokenizers:
the differential fuzzer (scripts/tokenizer/differential_fuzz.py) for a short
budget per tokenizer, the regression cases it found (testdata/tokenizer/
fuzz_regressions.jsonl), and over every code point the word class of
single_word added tokens (src/tokenizer/unicode_tables.inc) and the script
classes of UnicodeScripts (src/tokenizer/unicode_scripts.inc)."""

import json
import subprocess
import sys

import pytest
import tokenizers
from tokenizers import AddedToken, models, pre_tokenizers

import tokenbatch
from scripts.tokenizer import differential_fuzz as fuzz
from scripts.tokenizer import gen_script_table
from scripts.tokenizer.fuzz_text import set_unstable
from scripts.tokenizer.fuzz_unicode_versions import unstable_code_points

# Seconds of random text per generated tokenizer (docs/tokenizer-coverage.md has the long run).
SECONDS_PER_TOKENIZER = 1.5


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzz_tokenizers")
    paths = fuzz.build(str(out))
    set_unstable(unstable_code_points(str(out)))
    return {name: fuzz.Pair(name, path) for name, path in paths.items()}


def test_every_converter_and_trainer_is_generated(generated):
    assert len(generated) == 30
    for name in ["t5", "albert", "xlnet", "deberta_v2", "pegasus", "mbart50", "camembert", "llama", "gemma",
                 "bigbird", "funnel", "mpnet", "roberta", "whisper", "spm_generic", "wordlevel_ctc",
                 "unigram_unicode_scripts", "bpe_unicode_scripts_byte_level", "wordpiece_metaspace_unicode_scripts"]:
        assert name in generated


def test_regression_cases_match_the_reference(repo, generated):
    cases = [json.loads(line) for line in (repo / "testdata" / "tokenizer" / "fuzz_regressions.jsonl").open()]
    assert cases
    for case in cases:
        assert generated[case["tokenizer"]].check(case["text"]) == [], case


@pytest.mark.parametrize("seed", [0])
def test_random_unicode_matches_the_reference(generated, seed):
    findings = {}
    for i, (name, pair) in enumerate(sorted(generated.items())):
        checked, found = fuzz.fuzz(pair, SECONDS_PER_TOKENIZER, seed * 1000 + i, max_findings=1)
        assert checked > 50, name
        if found:
            findings[name] = found
    assert findings == {}


def test_single_word_boundary_on_every_code_point(tmp_path):
    theirs = tokenizers.Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    theirs.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    theirs.add_tokens([AddedToken("@", single_word=True, normalized=False)])
    path = tmp_path / "single_word.json"
    theirs.save(str(path))
    ours = tokenbatch.Tokenizer.from_file(str(path))
    code_points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for texts in ([chr(c) + "@" for c in code_points], ["@" + chr(c) for c in code_points]):
        expected = [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)]
        got = [list(e.ids) for e in ours.encode_batch(texts, add_special_tokens=False)]
        wrong = [f"U+{code_points[i]:04X}" for i, (a, b) in enumerate(zip(expected, got)) if a != b]
        assert wrong == [], wrong[:20]


def test_unicode_tables_are_what_the_generator_writes(repo):
    subprocess.run([sys.executable, str(repo / "scripts" / "tokenizer" / "gen_unicode_tables.py"), "--check"],
                   check=True)


def _pieces(text, offsets):
    """text's pieces at `offsets` (UTF-8, from str or bytes), or None when they leave a gap before the end."""
    offsets = [tuple(o) for o in offsets]
    if any(a[1] != b[0] for a, b in zip(offsets, offsets[1:])) or (offsets and offsets[-1][1] != len(text)):
        return None
    return [text[b:e] if isinstance(text, bytes) else text[b:e].encode("utf-8") for b, e in offsets]


def test_unicode_scripts_on_every_code_point(tmp_path):
    """The pieces of UnicodeScripts on gen_script_table.probe_texts, which split
    alike exactly when the classes of every code point are the reference's."""
    theirs = tokenizers.Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    theirs.pre_tokenizer = pre_tokenizers.UnicodeScripts()
    path = tmp_path / "unicode_scripts.json"
    theirs.save(str(path))
    ours = tokenbatch.Tokenizer.from_file(str(path))
    texts = gen_script_table.probe_texts(gen_script_table.read_committed())
    expected = theirs.encode_batch(texts, add_special_tokens=False)
    got = ours.encode_batch(texts, add_special_tokens=False)
    wrong = []
    for i, (text, t, g) in enumerate(zip(texts, expected, got)):
        raw = text.encode("utf-8")
        # Every word is unknown, so a token is a piece; the pieces run without
        # gaps to the end, so equal pieces are equal cuts.
        mine = _pieces(raw, g.offsets)
        if mine is None or mine != _pieces(text, t.offsets):
            wrong.append(i)
    assert wrong == [], [texts[i][:40] for i in wrong[:5]]


def test_script_table_is_what_the_generator_measures(repo):
    subprocess.run([sys.executable, str(repo / "scripts" / "tokenizer" / "gen_script_table.py"), "--check"],
                   check=True)
