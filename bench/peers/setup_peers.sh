#!/usr/bin/env bash
# Creates the project-local virtual environment build/peers-venv for the peer
# benchmarks (Infinity, sentence-transformers, ONNX Runtime, PyTorch eager) with
# exactly the pinned packages of bench/peers/requirements.txt: the test
# environment's installer (scripts/setup_python.sh: wheels only, --no-deps,
# idempotent, rebuilt afresh when the file or the interpreter changes) pointed at
# the peers' own environment, which cannot share build/venv (infinity-emb needs
# numpy < 2 and sentence-transformers < 4). Never touches build/venv or the
# system Python.
# Usage: bash bench/peers/setup_peers.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec bash scripts/setup_python.sh build/peers-venv bench/peers/requirements.txt
