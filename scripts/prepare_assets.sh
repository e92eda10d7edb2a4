#!/usr/bin/env bash
# Generates the synthetic TorchScript encoders the backend tests, benchmarks and
# `tokenbatch serve` use (random weights, real architectures; see README). Runs
# with Debian's python3-torch at /usr/bin/python3 (the python3 first on PATH may
# have no torch). Idempotent: about 1 s when the models are up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 scripts/gen_models.py --out build/cache/models
