#!/usr/bin/env bash
# One 1.5 MB text cut to 256 tokens: tokenbatch's EncodeTruncated (tokenises
# only what it keeps), tokenbatch's whole-text Encode then the cut, and Hugging
# Face's tokenizers with truncation (PyPI, build/venv), in one run, single
# thread, for Qwen3 (byte-level BPE), BERT (WordPiece) and XLM-R (Unigram). Prints
# each mode's median milliseconds and the ratios to EncodeTruncated.
# Usage: bench/tokenizer/run_truncation_bench.sh BUILD_DIR [TEXT_BYTES] [MAX_TOKENS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: run_truncation_bench.sh BUILD_DIR [TEXT_BYTES] [MAX_TOKENS] [ROUNDS]}"
BYTES="${2:-1500000}"
MAX="${3:-256}"
ROUNDS="${4:-7}"
BIN="$(find "$BUILD" -name truncation_bench -type f -perm -u+x | head -1)"
[ -n "$BIN" ] || { echo "truncation_bench not found under $BUILD" >&2; exit 2; }
PY=build/venv/bin/python
[ -x "$PY" ] || { echo "$PY missing: run scripts/setup.sh" >&2; exit 2; }
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
TEXTS=testdata/tokenizer/realtext.jsonl
for run in "qwen3 data/tokenizers/qwen3/tokenizer.json" \
           "bert-base-uncased data/tokenizers/bert-base-uncased/tokenizer.json" \
           "xlmr-unigram build/cache/tokenizers/multilingual-e5-small/tokenizer.json"; do
  read -r model tok <<< "$run"
  [ -f "$tok" ] || { echo "$tok missing: run scripts/prepare_assets.sh" >&2; exit 2; }
  { "$BIN" "$tok" "$TEXTS" "$BYTES" "$MAX" "$ROUNDS"; "$PY" bench/tokenizer/truncation_reference.py "$tok" "$TEXTS" "$BYTES" "$MAX" "$ROUNDS"; } |
    "$PY" bench/tokenizer/summarize_truncation.py "$model"
done
