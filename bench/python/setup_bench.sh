#!/usr/bin/env bash
# Creates build/bench-venv for the Python package's benchmarks (bench/python):
# scripts/requirements.txt and bench/python/requirements.txt, every package
# pinned (scripts/setup_python.sh: wheels only, --no-deps, the shared
# wheelhouse, idempotent), then the package itself built against that torch.
# Never touches build/venv or the system Python.
# Usage: bash bench/python/setup_bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build
cat scripts/requirements.txt bench/python/requirements.txt > build/bench-requirements.txt
bash scripts/setup_python.sh build/bench-venv build/bench-requirements.txt
build/bench-venv/bin/pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  --config-settings=build-dir=build/python-bench .
