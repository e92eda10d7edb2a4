"""Tokenizers for the differential fuzzer written by transformers' slow-to-fast
converters (transformers.convert_slow_tokenizer), the path that produced the
tokenizer.json of most Hugging Face models: SentencePiece models trained here
(PyPI `sentencepiece`) through the T5, ALBERT, XLNet, DeBERTa-v2, Pegasus,
mBART-50, CamemBERT, BigBird, Llama, Gemma and generic SentencePiece
converters, and vocabularies trained with `tokenizers` through the Funnel,
MPNet, RoBERTa and Whisper converters.

A converter reads a handful of attributes of the slow tokenizer it converts;
each builder passes a stand-in carrying exactly those (as
scripts/tokenizer/make_sentencepiece.py does), with the options real models
use. CONVERTED maps a name to a builder(spm_dir, lines) returning the
tokenizer.json as a dict.
"""

import functools
import json
import os
import types
import warnings

from tokenizers import AddedToken

from scripts.tokenizer.make_sentencepiece import COMMON, bpe_extractor, train, via_converter

# SentencePiece models (small: the fuzzer needs coverage of every code path, not quality).
# The special pieces the converters' post-processors name, as control symbols.
CONTROL = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "<cls>", "<sep>", "<mask>", "<eod>", "<eop>"]
SPM_MODELS = {
    "unigram": dict(model_type="unigram", vocab_size=4000, normalization_rule_name="nmt_nfkc",
                    num_sub_iterations=1, control_symbols=CONTROL),
    "unigram_cased_identity": dict(model_type="unigram", vocab_size=4000, normalization_rule_name="identity",
                                   remove_extra_whitespaces=False, num_sub_iterations=1,
                                   control_symbols=CONTROL),
    "bpe_bytes": dict(model_type="bpe", vocab_size=4000, normalization_rule_name="identity", byte_fallback=True,
                      split_digits=True, remove_extra_whitespaces=False, allow_whitespace_only_pieces=True),
    "bpe_gemma": dict(model_type="bpe", vocab_size=4000, normalization_rule_name="identity", byte_fallback=True,
                      split_digits=True, remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
                      pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>",
                      bos_piece="<bos>"),
}
assert COMMON["num_threads"] == 1


@functools.lru_cache(maxsize=None)
def _spm(spm_dir, name, lines):
    os.makedirs(spm_dir, exist_ok=True)
    return train(spm_dir, name, SPM_MODELS[name], list(lines))


def _converter(name):
    import transformers.convert_slow_tokenizer as convert
    return getattr(convert, name)


def spm_converter(converter, model, special, **attributes):
    def build(spm_dir, lines):
        return via_converter(_converter(converter), _spm(spm_dir, model, tuple(lines)), special, **attributes)
    return build


def pegasus(spm_dir, lines):
    path = _spm(spm_dir, "unigram", tuple(lines))
    attributes = dict(offset=103, pad_token="<pad>", eos_token="</s>", mask_token="<mask_2>",
                      mask_token_sent="<mask_1>", eos_token_id=1, mask_token_id=2)
    return via_converter(_converter("PegasusConverter"), path, ["<pad>", "</s>", "<mask_1>", "<mask_2>"], **attributes)


def llama(spm_dir, lines):
    converter = type("LlamaConverter", (_converter("LlamaConverter"),), {"SpmExtractor": bpe_extractor()})
    return via_converter(converter, _spm(spm_dir, "bpe_bytes", tuple(lines)), ["<unk>", "<s>", "</s>"],
                         legacy=False, add_prefix_space=None)


def gemma(spm_dir, lines):
    converter = type("GemmaConverter", (_converter("GemmaConverter"),), {"SpmExtractor": bpe_extractor()})
    return via_converter(converter, _spm(spm_dir, "bpe_gemma", tuple(lines)), ["<pad>", "<eos>", "<bos>", "<unk>"],
                         bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


def _wordpiece_vocab(lines):
    from scripts.tokenizer.fuzz_tokenizers import wordpiece_bert
    return wordpiece_bert(lines).get_vocab(with_added_tokens=False)


def bert_like(converter):
    def build(spm_dir, lines):
        vocab = _wordpiece_vocab(lines)
        original = types.SimpleNamespace(
            vocab=vocab, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", cls_token_id=vocab["[CLS]"],
            sep_token_id=vocab["[SEP]"],
            basic_tokenizer=types.SimpleNamespace(tokenize_chinese_chars=True, strip_accents=None, do_lower_case=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = _converter(converter)(original).converted()
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=t == "<mask>")
                                for t in ["[CLS]", "[SEP]", "[UNK]", "<mask>"]])
        return json.loads(tok.to_str())
    return build


def gpt2_like(converter, **extra):
    def build(spm_dir, lines):
        from scripts.tokenizer.fuzz_tokenizers import bpe_byte_level
        trained = json.loads(bpe_byte_level(lines).to_str())["model"]
        vocab = trained["vocab"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
        original = types.SimpleNamespace(
            encoder=vocab, bpe_ranks={m: i for i, m in enumerate(merges)}, add_prefix_space=True,
            sep_token="</s>", cls_token="<s>", sep_token_id=vocab["</s>"], cls_token_id=vocab["<s>"],
            eos_token="</s>", eos_token_id=vocab["</s>"], prefix_tokens=[vocab["<s>"]],
            convert_ids_to_tokens=lambda ids: [{i: t for t, i in vocab.items()}[i] for i in ids], **extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = _converter(converter)(original).converted()
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=t == "<mask>")
                                for t in ["<s>", "</s>", "<pad>", "<mask>", "<|endoftext|>"]])
        return json.loads(tok.to_str())
    return build


XLNET_SPECIAL = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]

CONVERTED = {
    "t5": spm_converter("T5Converter", "unigram", ["<pad>", "</s>", "<unk>"], _extra_ids=100),
    "albert": spm_converter("AlbertConverter", "unigram_cased_identity", ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"],
                            do_lower_case=True, keep_accents=False),
    "albert_keep_accents": spm_converter("AlbertConverter", "unigram", ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"],
                                         do_lower_case=False, keep_accents=True),
    "xlnet": spm_converter("XLNetConverter", "unigram_cased_identity", XLNET_SPECIAL, do_lower_case=False,
                           keep_accents=False),
    "deberta_v2": spm_converter("DebertaV2Converter", "unigram", ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"],
                                do_lower_case=False, split_by_punct=True),
    "pegasus": pegasus,
    "mbart50": spm_converter("MBart50Converter", "unigram", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]),
    "camembert": spm_converter("CamembertConverter", "unigram", ["<s>NOTUSED", "<pad>", "</s>NOTUSED", "<unk>",
                                                                "<s>", "</s>", "<mask>"]),
    "bigbird": spm_converter("BigBirdConverter", "unigram", ["<pad>", "<s>", "</s>", "<unk>", "[SEP]", "[CLS]",
                                                            "[MASK]"]),
    "spm_generic": spm_converter("SpmConverter", "unigram_cased_identity", ["<unk>", "<s>", "</s>"]),
    "llama": llama,
    "gemma": gemma,
    "funnel": bert_like("FunnelConverter"),
    "mpnet": bert_like("MPNetConverter"),
    "roberta": gpt2_like("RobertaConverter"),
    "whisper": gpt2_like("WhisperConverter"),
}
