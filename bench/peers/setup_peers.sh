#!/usr/bin/env bash
# Creates the project-local virtual environment build/peers-venv for the peer
# benchmarks (Infinity, sentence-transformers, ONNX Runtime, PyTorch eager) and
# installs exactly the pinned packages of bench/peers/requirements.txt from PyPI
# (wheels only, --no-deps: nothing unpinned comes in). Never touches build/venv
# or the system Python.
# Idempotent: when build/peers-venv/requirements.installed holds the
# interpreter's version and a hash of the requirements file, it only compares
# them and exits. Otherwise (first run, a changed file, a Python upgrade, an
# interrupted install) it rebuilds the environment afresh, so that no package
# dropped from the file lingers, checks the dependencies are consistent, and
# writes the stamp last.
# Usage: bash bench/peers/setup_peers.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV="build/peers-venv"
REQUIREMENTS="bench/peers/requirements.txt"
STAMP="$VENV/requirements.installed"
PYTHON=/usr/bin/python3

want="$("$PYTHON" -c 'import sys; print("python", sys.version.split()[0])') $(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi
echo "setup_peers: installing $REQUIREMENTS into $VENV"
"$PYTHON" -m venv --clear "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  -r "$REQUIREMENTS"
"$VENV/bin/python" -m pip check --disable-pip-version-check
printf '%s' "$want" > "$STAMP"
