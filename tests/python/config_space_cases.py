"""The cases of config_space.py: each a family (bert, xlm-roberta, qwen3), the
transformers config fields it varies ("config", before the weights are made),
the sentence-transformers modules it writes, and the JSON edits it makes to
the saved files afterwards ("edit": file -> {key: value, None deletes}, or
"modules.json" -> modules to append). Refused cases list what the error must
name ("expect")."""
import torch

# Mixed case, accents, CJK, emoji, and texts longer than every limit below, so
# that lowercasing, truncation and its side all change the ids.
TEXTS = [
    "Hello World",
    "The Quick Brown Fox Jumps Over The Lazy Dog",
    "ÉCOLE Normale Supérieure, Île-de-France",
    "東京タワーと富士山 TOKYO",
    "Emoji 😀 and Symbols ∑ ∞ ≠",
    "UPPER lower MiXeD CaSe 12345",
    " ".join(f"Word{i} Alpha Beta Gamma" for i in range(40)),
    "Start of a long document. " + "Many Different Tokens Follow Here, " * 30 + "And The End.",
    "a",
    "Short Query?",
]

DOCS = [
    "Paris Is The Capital Of France.",
    "A long passage about many things " * 12,
    "東京は日本の首都です。",
    "Short.",
]
LONG_QUERY = "What Is The Capital City Of France And Why Did It Become So Important " * 3
PAIRS = [("What is the capital of France?", d) for d in DOCS] + [(LONG_QUERY, d) for d in DOCS]

# One BERT directory per hidden_act value transformers' ACT2FN has and
# tokenbatch implements (gelu and relu are in the families below).
ACTIVATION_CASES = {
    f"bert-hidden-act-{act}": dict(family="bert", config=dict(hidden_act=act))
    for act in ("gelu_python", "gelu_new", "gelu_pytorch_tanh", "gelu_python_tanh", "gelu_fast", "gelu_10",
                "quick_gelu", "relu2", "relu6", "leaky_relu", "silu", "swish", "mish", "hardswish", "sigmoid",
                "tanh", "linear")
}

EMBEDDING_CASES = {
    **ACTIVATION_CASES,
    "bert-cls-dense-identity-normalize": dict(family="bert", config=dict(hidden_act="relu", layer_norm_eps=1e-5),
                                              pooling="cls", dense=torch.nn.Identity, normalize=True),
    "bert-one-token-type-dense-tanh": dict(family="bert", config=dict(type_vocab_size=1), dense=torch.nn.Tanh),
    "bert-lasttoken-truncated-left": dict(family="bert", pooling="lasttoken", max_seq_length=20,
                                          edit={"tokenizer_config.json": {"truncation_side": "left"}}),
    "bert-model-max-length-only": dict(family="bert", edit={"sentence_bert_config.json": {"max_seq_length": None},
                                                            "tokenizer_config.json": {"model_max_length": 24}}),
    # transformers 5 keeps tokenizer.json's post-processor ([CLS] .. [SEP])
    # whatever add_bos_token / add_eos_token say.
    "bert-add-bos-token-false": dict(family="bert", edit={"tokenizer_config.json": {"add_bos_token": False}}),
    "xlm-roberta-mean-positions-offset": dict(family="xlm-roberta", config=dict(layer_norm_eps=1e-6),
                                              pooling="mean", normalize=True),
    "xlm-roberta-cls-gelu-new-padded-left": dict(family="xlm-roberta", config=dict(hidden_act="gelu_new"),
                                                 pooling="cls",
                                                 edit={"tokenizer_config.json": {"padding_side": "left"}}),
    "qwen3-lasttoken-do-lower-case": dict(family="qwen3", pooling="lasttoken", normalize=True,
                                          edit={"sentence_bert_config.json": {"do_lower_case": True}}),
    "qwen3-gqa-bias-rope-gelu": dict(family="qwen3", pooling="mean",
                                     config=dict(num_key_value_heads=1, attention_bias=True, rope_theta=50000.0,
                                                 rms_norm_eps=1e-5, hidden_act="gelu")),
    "qwen3-add-eos-token-padded-left": dict(family="qwen3", pooling="lasttoken",
                                            edit={"tokenizer_config.json": {"add_eos_token": True,
                                                                            "padding_side": "left"}}),
    "qwen3-cls-dense-do-lower-case-left": dict(
        family="qwen3", pooling="cls", dense=torch.nn.Tanh, max_seq_length=16,
        edit={"sentence_bert_config.json": {"do_lower_case": True},
              "tokenizer_config.json": {"truncation_side": "left"}}),
}

# The BERT cross-encoders declare a BertTokenizer, as the ms-marco ones do, so
# that token_type_ids reach the model.
CROSS_ENCODER_CASES = {
    # Saved as most public rerankers are: num_labels 1 and no id2label.
    "bert-num-labels-1-no-id2label": dict(
        family="bert", tokenizer_class="BertTokenizer", config=dict(num_labels=1), pairs=PAIRS,
        edit={"config.json": {"id2label": None, "label2id": None, "num_labels": 1},
              "tokenizer_config.json": {"model_max_length": 40}}),
    "bert-multi-label": dict(
        family="bert", tokenizer_class="BertTokenizer", pairs=PAIRS, not_a_softmax=True,
        config=dict(num_labels=3, problem_type="multi_label_classification",
                    id2label={0: "toxic", 1: "insult", 2: "threat"}, label2id={"toxic": 0, "insult": 1, "threat": 2})),
    "xlm-roberta-regression": dict(
        family="xlm-roberta", pairs=PAIRS, not_a_softmax=True,
        config=dict(num_labels=2, problem_type="regression")),
    "xlm-roberta-single-label-pairs-cut": dict(
        family="xlm-roberta", pairs=PAIRS,
        config=dict(num_labels=3, problem_type="single_label_classification"),
        edit={"tokenizer_config.json": {"model_max_length": 32}}),
    "bert-one-label-longest-first": dict(
        family="bert", tokenizer_class="BertTokenizer", config=dict(num_labels=1), pairs=PAIRS,
        edit={"tokenizer_config.json": {"model_max_length": 33}}),
}


def module(idx, kind):
    return {"idx": idx, "name": str(idx), "path": f"{idx}_{kind}",
            "type": f"sentence_transformers.sentence_transformer.modules.{kind}"}


REFUSED_CASES = {
    "refuse-relative-positions": dict(family="bert", edit={"config.json": {"position_embedding_type": "relative_key"}},
                                      expect=["position_embedding_type", "relative_key"]),
    "refuse-hidden-act-laplace": dict(family="bert", edit={"config.json": {"hidden_act": "laplace"}},
                                      expect=["hidden_act", "laplace"]),
    "refuse-hidden-act-prelu": dict(family="qwen3", edit={"config.json": {"hidden_act": "prelu"}},
                                    expect=["hidden_act", "prelu"]),
    "refuse-rope-scaling": dict(family="qwen3", edit={"config.json": {"rope_scaling": {"rope_type": "yarn",
                                                                                      "factor": 4.0}}},
                                expect=["rope_scaling", "yarn"]),
    "refuse-rope-parameters-yarn": dict(family="qwen3", edit={"config.json": {"rope_parameters": {
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}}}, expect=["rope_parameters.rope_type", "yarn"]),
    "refuse-sliding-window": dict(family="qwen3", edit={"config.json": {"use_sliding_window": True}},
                                  expect=["use_sliding_window"]),
    "refuse-model-type": dict(family="bert", edit={"config.json": {"model_type": "deberta-v2"}},
                              expect=["model_type", "deberta-v2"]),
    "refuse-problem-type": dict(family="bert", cross_encoder=True,
                                edit={"config.json": {"problem_type": "ranking"}}, expect=["problem_type", "ranking"]),
    "refuse-pooling-max": dict(family="bert", edit={"1_Pooling/config.json": {"pooling_mode": "max"}},
                               expect=["pooling_mode", "max"]),
    "refuse-pooling-weightedmean": dict(family="bert", edit={"1_Pooling/config.json": {"pooling_mode": "weightedmean"}},
                                        expect=["pooling_mode", "weightedmean"]),
    "refuse-pooling-mean-sqrt-len": dict(
        family="bert", edit={"1_Pooling/config.json": {"pooling_mode": "mean_sqrt_len_tokens"}},
        expect=["pooling_mode", "mean_sqrt_len_tokens"]),
    "refuse-dense-relu": dict(family="bert", dense=torch.nn.Tanh,
                              edit={"2_Dense/config.json": {"activation_function": "torch.nn.modules.activation.ReLU"}},
                              expect=["activation_function", "torch.nn.modules.activation.ReLU"]),
    "refuse-bert-padding-left": dict(family="bert", edit={"tokenizer_config.json": {"padding_side": "left"}},
                                     expect=["padding_side", "left"]),
    "refuse-truncation-side": dict(family="bert", edit={"tokenizer_config.json": {"truncation_side": "middle"}},
                                   expect=["truncation_side", "middle"]),
    **{f"refuse-module-{kind.lower()}": dict(family="bert", append_modules=[module(5, kind)], expect=[kind])
       for kind in ("LayerNorm", "WordWeights", "CNN", "LSTM")},
}
