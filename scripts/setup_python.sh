#!/usr/bin/env bash
# Creates the project-local Python virtual environment build/venv from Debian's
# python3 (python3-venv, installed by scripts/setup.sh) and installs exactly the
# pinned packages of scripts/requirements.txt into it from PyPI. Never touches the
# system Python.
# Idempotent: when build/venv/requirements.installed equals the requirements file
# it only compares the two files (a few milliseconds); after any change to the
# file it installs again (pip --no-deps, so nothing unpinned comes in) and then
# checks that the environment's dependencies are consistent.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="build/venv"
REQUIREMENTS="scripts/requirements.txt"
STAMP="$VENV/requirements.installed"

if [ -x "$VENV/bin/python" ] && cmp -s "$REQUIREMENTS" "$STAMP"; then
  exit 0
fi
echo "setup_python: installing $REQUIREMENTS into $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv "$VENV"
fi
rm -f "$STAMP"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$REQUIREMENTS"
"$VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null
cp "$REQUIREMENTS" "$STAMP"
