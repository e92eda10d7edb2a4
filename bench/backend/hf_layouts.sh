#!/usr/bin/env bash
# Packed against padded execution of a Hugging Face model directory, on every
# given build (e.g. `build` on Debian's libtorch and `build-pytorch` on the PyPI
# wheel's), one run after another in one command (docs/benchmarks.md).
# Usage: bash bench/backend/hf_layouts.sh [MODEL_DIR] BUILD_DIR...
set -euo pipefail
cd "$(dirname "$0")/../.."
model="${1:-build/cache/models/all-MiniLM-L6-v2}"
shift || true
[ $# -gt 0 ] || set -- build
for build in "$@"; do
  for execution in padded packed; do
    echo "### $build --execution $execution"
    "$build/src/cli/tokenbatch" bench --model-id "$model" --execution "$execution" \
      --policies fixed-32,ours-length-aware --no-progress
  done
done
