#!/usr/bin/env bash
# Creates the project-local Python virtual environment build/venv from Debian's
# python3 (python3-venv, installed by scripts/setup.sh) and installs exactly the
# pinned packages of scripts/requirements.txt into it from PyPI (wheels only:
# nothing is compiled). Never touches the system Python.
# The wheels are downloaded once into a wheelhouse shared by every environment
# and clone of the project (TOKENBATCH_WHEELHOUSE, default
# ~/.cache/tokenbatch/wheels; pip keeps a file already there), then installed
# from it with no index: the test and peer environments share torch's CUDA wheel
# and its nvidia-* libraries, and a new clone downloads nothing. (pip's own
# cache is not enough: it keeps nothing of what this machine's package index
# serves.)
# Idempotent: when build/venv/requirements.installed holds the interpreter's
# version and the requirements file it only compares them (a few milliseconds).
# Otherwise (first run, a changed file, a Python upgrade, an interrupted install)
# it builds the environment afresh, installs with --no-deps (nothing unpinned
# comes in), checks the dependencies are consistent, and writes the stamp last.
# Usage: bash scripts/setup_python.sh [VENV REQUIREMENTS]
#   (default build/venv from scripts/requirements.txt; the peer benchmarks pass
#   their own, bench/peers/setup_peers.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${1:-build/venv}"
REQUIREMENTS="${2:-scripts/requirements.txt}"
STAMP="$VENV/requirements.installed"
PYTHON=/usr/bin/python3

want="$("$PYTHON" -c 'import sys; print("python", sys.version.split()[0])')
$(cat "$REQUIREMENTS")"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi
echo "setup_python: installing $REQUIREMENTS into $VENV"
"$PYTHON" -m venv --clear "$VENV"
WHEELHOUSE="${TOKENBATCH_WHEELHOUSE:-$HOME/.cache/tokenbatch/wheels}"
mkdir -p "$WHEELHOUSE"
install_from_wheelhouse() {
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --no-index --find-links "$WHEELHOUSE" -r "$REQUIREMENTS"
}
# Offline first; only what the wheelhouse lacks is downloaded.
if ! install_from_wheelhouse 2>/dev/null; then
  # Into a folder of this run's own, each wheel then renamed into the wheelhouse:
  # an interrupted or concurrent download never leaves a partial wheel there.
  partial="$(mktemp -d "$WHEELHOUSE/.partial.XXXXXX")"
  "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --find-links "$WHEELHOUSE" -d "$partial" -r "$REQUIREMENTS"
  find "$partial" -maxdepth 1 -name '*.whl' -exec mv -n -t "$WHEELHOUSE" {} +
  rm -rf "$partial"
  install_from_wheelhouse
fi
"$VENV/bin/python" -m pip check --disable-pip-version-check
printf '%s' "$want" > "$STAMP"
