#!/usr/bin/env bash
# Generates the synthetic TorchScript encoders the backend tests, benchmarks and
# `tokenbatch serve` use (random weights, real architectures; see README). Runs
# with Debian's python3-torch at /usr/bin/python3 (the python3 first on PATH may
# have no torch). Idempotent: about 1 s when the models are up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 scripts/gen_models.py --out build/cache/models
# The server's default model: MiniLM-L6 shape with Qwen3's 151,669-id vocabulary,
# so it pairs with the default Qwen3 tokenizer.
/usr/bin/python3 scripts/gen_models.py --out build/cache/models --models minilm --vocab-size 151669
