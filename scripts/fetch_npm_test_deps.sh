#!/usr/bin/env bash
# Installs the npm packages the test suite uses as independent clients into
# build/cache (never committed, never fetched at test time):
#   build/cache/npm-openai/node_modules/openai   the official OpenAI Node client,
#                                               used by tests/node/openai_embeddings.mjs
# Pinned version. Idempotent: when the package is present it only runs `test -f`.
set -euo pipefail
cd "$(dirname "$0")/.."

OPENAI_PKG="openai@4.77.0"
DEST="build/cache/npm-openai"

if [ ! -f "$DEST/node_modules/openai/package.json" ]; then
  echo "fetch_npm_test_deps: $OPENAI_PKG"
  mkdir -p "$DEST"
  npm install --silent --no-audit --no-fund --prefix "$DEST" "$OPENAI_PKG"
fi
