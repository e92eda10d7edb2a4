#!/usr/bin/env bash
# Runs our tokenizer and Hugging Face's (PyPI `tokenizers` 0.23.2, in build/venv:
# scripts/setup.sh) on the same texts
# (testdata/tokenizer/realtext.jsonl, 2,043 texts, 1.1 MB; for XLM-R's Unigram also
# realtext_multilingual.jsonl), alternating ours and theirs REPS times in one run,
# single thread, for Qwen3 (byte-level BPE), BERT (WordPiece) and XLM-R (SentencePiece
# Unigram, Precompiled charsmap, Metaspace); prints the best
# figure of each (impl, mode) over the repetitions and the ratios ours / best
# Hugging Face mode. Best-of-REPS damps noise from other processes on the machine.
# Usage: bench/tokenizer/run_tokenizer_bench.sh BUILD_DIR [ROUNDS] [REPS]
#   BUILD_DIR holds the built tokenizer_bench (found anywhere below it).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: run_tokenizer_bench.sh BUILD_DIR [ROUNDS]}"
ROUNDS="${2:-5}"
REPS="${3:-2}"
BIN="$(find "$BUILD" -name tokenizer_bench -type f -perm -u+x | head -1)"
[ -n "$BIN" ] || { echo "tokenizer_bench not found under $BUILD" >&2; exit 2; }
TEXTS=testdata/tokenizer/realtext.jsonl
PY=build/venv/bin/python
[ -x "$PY" ] || { echo "$PY missing: run scripts/setup.sh" >&2; exit 2; }
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
# model name, tokenizer.json, texts. The XLM-R Unigram tokenizer (multilingual-e5-small,
# unpacked by scripts/fetch_models.sh) runs on both real-text files: the English and
# Chinese one, and the 25-language one.
runs=(
  "qwen3 data/tokenizers/qwen3/tokenizer.json $TEXTS"
  "bert-base-uncased data/tokenizers/bert-base-uncased/tokenizer.json $TEXTS"
  "xlmr-unigram build/cache/tokenizers/multilingual-e5-small/tokenizer.json $TEXTS"
  "xlmr-unigram-multilingual build/cache/tokenizers/multilingual-e5-small/tokenizer.json testdata/tokenizer/realtext_multilingual.jsonl"
)
for run in "${runs[@]}"; do
  read -r model TOK texts <<< "$run"
  [ -f "$TOK" ] || { echo "$TOK missing: run scripts/prepare_assets.sh" >&2; exit 2; }
  ours=""; ref=""
  for _ in $(seq "$REPS"); do
    ours+="$("$BIN" "$TOK" "$texts" "$ROUNDS")"$'\n'
    ref+="$("$PY" bench/tokenizer/reference_bench.py "$TOK" "$texts" "$ROUNDS")"$'\n'
  done
  "$PY" bench/tokenizer/summarize.py "$model" "$ours" "$ref"
done
