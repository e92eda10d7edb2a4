"""The tokenizers that the differential fuzzer (scripts/tokenizer/differential_fuzz.py)
checks: trained with Hugging Face `tokenizers`' trainers, so that every
component of docs/tokenizer-coverage.md appears in at least one, and trained
with `sentencepiece` then converted by transformers' slow-to-fast converters
(fuzz_converted.py), the path that writes the tokenizer.json of most models.

Each builder returns a tokenizers.Tokenizer; build_all() writes every one to
DIR/<name>.json. Deterministic for a given corpus: one thread, fixed seeds.
"""

import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import trainers

# Added tokens with every option: single_word, lstrip, rstrip, normalized, special.
ADDED = [
    AddedToken("<s>", special=True, normalized=False),
    AddedToken("</s>", special=True, normalized=False, single_word=True),
    AddedToken("<mask>", special=True, normalized=False, lstrip=True),
    AddedToken("[SEP]", special=True, normalized=False, rstrip=True),
    AddedToken("<tab>", special=False, normalized=False, single_word=True, lstrip=True, rstrip=True),
    AddedToken("Äbc", special=False, normalized=True),
    AddedToken("yes", special=False, normalized=True, single_word=True),
    AddedToken("<|im_start|>", special=True, normalized=False),
    AddedToken("<|im_end|>", special=False, normalized=False, rstrip=True),
]
SPECIAL = ["<unk>", "<pad>", "<s>", "</s>", "<mask>", "[SEP]", "[CLS]", "[UNK]"]


def _train(tok, trainer, lines):
    tok.train_from_iterator(lines, trainer=trainer)
    tok.add_tokens(ADDED)
    return tok


def bpe_byte_level(lines):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tok.decoder = decoders.ByteLevel()
    return _train(tok, trainers.BpeTrainer(vocab_size=900, special_tokens=SPECIAL, show_progress=False,
                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()), lines)


def bpe_clip_style(lines):
    """CLIP's shape: byte-level BPE with an end-of-word suffix, lowercased, split first."""
    tok = Tokenizer(models.BPE(end_of_word_suffix="</w>", unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "),
                                           normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"), "removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    tok.post_processor = processors.RobertaProcessing(("</s>", 3), ("<s>", 2), trim_offsets=False)
    return _train(tok, trainers.BpeTrainer(vocab_size=900, special_tokens=SPECIAL, end_of_word_suffix="</w>",
                                           show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
                  lines)


def bpe_subword_prefix(lines):
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(),
                                                 pre_tokenizers.Digits(individual_digits=True)])
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.post_processor = processors.BertProcessing(("[SEP]", 5), ("[CLS]", 6))
    return _train(tok, trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIAL, continuing_subword_prefix="##",
                                           limit_alphabet=150, show_progress=False), lines)


def bpe_ignore_merges_nmt(lines):
    tok = Tokenizer(models.BPE(unk_token="<unk>", ignore_merges=True))
    tok.normalizer = normalizers.Sequence([normalizers.Nmt(), normalizers.NFKC(), normalizers.Strip(),
                                           normalizers.Prepend("\u2581")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Punctuation("contiguous"),
                                                 pre_tokenizers.Digits(individual_digits=False),
                                                 pre_tokenizers.Whitespace()])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.Strip(" ", 1, 0), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                       special_tokens=[("<s>", 2), ("</s>", 3)])
    return _train(tok, trainers.BpeTrainer(vocab_size=800, special_tokens=SPECIAL, limit_alphabet=200,
                                           show_progress=False), lines)


def bpe_byte_normalizer(lines):
    """A ByteLevel normalizer (not pre-tokenizer): the model sees GPT-2's byte alphabet."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.ByteLevel()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split("\u0120", "merged_with_next"), pre_tokenizers.Digits(individual_digits=True)])
    tok.decoder = decoders.ByteLevel()
    return _train(tok, trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIAL, show_progress=False,
                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()), lines)


def wordpiece_bert(lines):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=20))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 6), ("[SEP]", 5)])
    return _train(tok, trainers.WordPieceTrainer(vocab_size=800, special_tokens=SPECIAL, limit_alphabet=300,
                                                 show_progress=False), lines)


def wordpiece_split_behaviors(lines):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(),
                                           normalizers.Replace("``", '"')])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), "removed"),
        pre_tokenizers.Split(Regex(r"\p{P}"), "merged_with_previous"),
        pre_tokenizers.Split(Regex(r"[0-9]+"), "merged_with_next", invert=False),
        pre_tokenizers.Split(Regex(r"[aeiou]"), "contiguous", invert=True),
        pre_tokenizers.FixedLength(length=6)])
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    return _train(tok, trainers.WordPieceTrainer(vocab_size=700, special_tokens=SPECIAL, limit_alphabet=300,
                                                 show_progress=False), lines)


def wordlevel_ctc(lines):
    """wav2vec2's shape: one character per token, | between words, a CTC decoder."""
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Nmt(), normalizers.NFKC(), normalizers.Lowercase(),
                                           normalizers.Replace(" ", "|")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.CharDelimiterSplit("\u00a0"),
                                                 pre_tokenizers.FixedLength(length=1)])
    tok.decoder = decoders.CTC(pad_token="<pad>", word_delimiter_token="|", cleanup=True)
    return _train(tok, trainers.WordLevelTrainer(vocab_size=400, special_tokens=SPECIAL, show_progress=False), lines)


def wordlevel_words(lines):
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.StripAccents(), normalizers.NFC()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.CharDelimiterSplit(" "),
                                                 pre_tokenizers.Punctuation("merged_with_next")])
    tok.decoder = decoders.Sequence([decoders.Strip(" ", 0, 1), decoders.Fuse()])
    return _train(tok, trainers.WordLevelTrainer(vocab_size=1500, special_tokens=SPECIAL, show_progress=False), lines)


def unigram_metaspace(lines):
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Nmt(), normalizers.NFKC(),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", 3)])
    return _train(tok, trainers.UnigramTrainer(vocab_size=7000, special_tokens=SPECIAL, unk_token="<unk>",
                                               show_progress=False), lines)


def unigram_metaspace_never(lines):
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Metaspace(prepend_scheme="never", split=False)])
    tok.decoder = decoders.Sequence([decoders.Metaspace(prepend_scheme="never"), decoders.ByteFallback()])
    return _train(tok, trainers.UnigramTrainer(vocab_size=7000, special_tokens=SPECIAL, unk_token="<unk>",
                                               show_progress=False), lines)


def unigram_unicode_scripts(lines):
    """UnicodeScripts alone, on text no normaliser touched: every script change
    cuts, spaces and unlisted characters join the word before them."""
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.UnicodeScripts()
    return _train(tok, trainers.UnigramTrainer(vocab_size=7000, special_tokens=SPECIAL, unk_token="<unk>",
                                               show_progress=False), lines)


def bpe_unicode_scripts_byte_level(lines):
    """UnicodeScripts in a Sequence, its words then given prefix spaces and bytes."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.UnicodeScripts(),
                                                 pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return _train(tok, trainers.BpeTrainer(vocab_size=900, special_tokens=SPECIAL, show_progress=False,
                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()), lines)


def wordpiece_metaspace_unicode_scripts(lines):
    """UnicodeScripts after Metaspace rewrote the spaces (U+2581 is Common)."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False),
        pre_tokenizers.UnicodeScripts(), pre_tokenizers.Punctuation("isolated")])
    tok.decoder = decoders.Sequence([decoders.WordPiece(prefix="##", cleanup=False),
                                     decoders.Metaspace(replacement="\u2581", prepend_scheme="first")])
    return _train(tok, trainers.WordPieceTrainer(vocab_size=800, special_tokens=SPECIAL, limit_alphabet=300,
                                                 show_progress=False), lines)


TRAINED = [bpe_byte_level, bpe_clip_style, bpe_subword_prefix, bpe_ignore_merges_nmt, bpe_byte_normalizer,
           wordpiece_bert, wordpiece_split_behaviors, wordlevel_ctc, wordlevel_words, unigram_metaspace,
           unigram_metaspace_never, unigram_unicode_scripts, bpe_unicode_scripts_byte_level,
           wordpiece_metaspace_unicode_scripts]


def build_all(out_dir, lines, spm_dir):
    """Writes every fuzzed tokenizer to out_dir/<name>.json; returns {name: path}."""
    from scripts.tokenizer.fuzz_converted import CONVERTED
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for build in TRAINED:
        paths[build.__name__] = _write(out_dir, build.__name__, build(lines).to_str())
    for name, build in CONVERTED.items():
        paths[name] = _write(out_dir, name, json.dumps(build(spm_dir, lines)))
    return paths


def _write(out_dir, name, text):
    path = os.path.join(out_dir, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path
