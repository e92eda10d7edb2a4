#!/usr/bin/env bash
# Builds TARGETs in build-pytorch: the project's sources against the libtorch of
# build/venv's torch (the PyPI wheel scripts/requirements.txt pins, from
# scripts/setup_python.sh). That libtorch is torch 2.x with MKL and oneDNN; the
# main job serves on it (scripts/main.sh) because Debian's libtorch 1.13 was
# slower on every precision on the CPU measured (docs/benchmarks.md, "Which
# libtorch the main job runs on"). The GPU bundle is built here too (scripts/gpu_bundle.sh).
# The configuration is the main build's (scripts/test.sh's MAIN_CONFIG), so that
# every object that does not see libtorch's headers comes from ccache.
# Fails, naming the fix, when build/venv's torch is not the pinned version.
# Usage: bash scripts/build_pytorch.sh TARGET...   (JOBS=N for build parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
BUILD=build-pytorch
PY=build/venv/bin/python
(($#)) || { echo "usage: build_pytorch.sh TARGET..." >&2; exit 2; }
mkdir -p build

[ -x "$PY" ] || { echo "build_pytorch: no $PY: run scripts/setup.sh" >&2; exit 1; }
torch_version="$("$PY" -c 'import torch; print(torch.__version__)')"
torch_cmake="$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
pinned="$(sed -n 's/^torch==//p' scripts/requirements.txt)"
if [ "${torch_version%%+*}" != "$pinned" ]; then
  echo "build_pytorch: build/venv has torch $torch_version, scripts/requirements.txt pins $pinned: run scripts/setup.sh" >&2
  exit 1
fi

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON \
  -DTOKENBATCH_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$torch_cmake" > build/pytorch-configure.log 2>&1 ||
  { cat build/pytorch-configure.log >&2; exit 1; }
cmake --build "$BUILD" -j "$JOBS" --target "$@"
