#!/usr/bin/env bash
# Low precision offline, in one run on the same texts: sentence-transformers'
# encode in float32 (bench/peers/offline_st.py, the reference) against
# tokenbatch's own path (`tokenbatch bench --policies ours-length-aware`, all
# texts at once) in float32, `--dtype bfloat16` and `--quantize int8`, each
# with THREADS intra-op threads, each both with every forward on THREADS threads
# (`--intra-op fixed`) and with THREADS one-thread workers whose lone batch gets
# all of them (`--intra-op adaptive`, serve's flag). Prints one JSON line per run
# and a table of tokens/s and the ratio to sentence-transformers' float32. The quality of each
# mode against float32 is the tests' (hf_encoder_test's LowPrecision tests).
#
# Usage: bash bench/peers/compare_precision.sh BUILD_DIR[,BUILD_DIR...] [TEXTS] [MIX]
#   (defaults 2000 texts of the seed mix; several builds, e.g.
#   build-pytorch,build for the two libtorch builds, run in turn against the one
#   reference run, each row named by its build); env THREADS (default 2),
#   INTRA_OP (default "fixed adaptive").
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILDS="${1:?usage: compare_precision.sh BUILD_DIR[,BUILD_DIR...] [TEXTS] [MIX]}"
IFS=, read -r -a build_dirs <<<"${BUILDS// /}"
for build in "${build_dirs[@]}"; do
  [ -x "$build/src/cli/tokenbatch" ] || { echo "compare_precision: no $build/src/cli/tokenbatch" >&2; exit 2; }
done
BUILD="${build_dirs[0]}"  # its tokenbatch writes the workload
TEXTS="${2:-2000}"
MIX="${3:-seed}"
THREADS="${THREADS:-2}"
INTRA_OP="${INTRA_OP:-fixed adaptive}"
source bench/peers/peers_common.sh
make_workload "$MIX" "$TEXTS" "$CACHE/precision-$MIX-$TEXTS.jsonl"

st=$("$PY" bench/peers/offline_st.py "$WORKLOAD" --model-dir "$MODEL_DIR" --texts "$TEXTS" --threads "$THREADS" \
  --batch-size 32)
echo "sentence-transformers float32: $st"
results=()
for build in "${build_dirs[@]}"; do
  label=""
  ((${#build_dirs[@]} == 1)) || label="($build) "
  for intra_op in $INTRA_OP; do
    for mode in "float32:--dtype float32" "bfloat16:--dtype bfloat16" "int8:--quantize int8"; do
      name="$label${mode%%:*}, intra-op $intra_op"
      file="$CACHE/precision-${build//\//_}-${mode%%:*}-$intra_op.json"
      # shellcheck disable=SC2086  # the mode's flags are words
      "$build/src/cli/tokenbatch" bench --model-id "$MODEL_DIR" --workload "$WORKLOAD" --policies ours-length-aware \
        --threads "$THREADS" --intra-op "$intra_op" --max-positions "$MAX_TOKENS" --json --no-progress ${mode#*:} >"$file"
      echo "tokenbatch $name: $(cat "$file")"
      results+=("$name=$file")
    done
  done
done
"$PY" - "$st" "${results[@]}" <<'PYEOF'
import json, sys
st = json.loads(sys.argv[1])
print(f"\n| run | tokens/s | / sentence-transformers float32 |\n|---|---:|---:|")
print(f"| sentence-transformers float32 | {st['tokens_per_s']:.0f} | 1.000 |")
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    tb = json.load(open(path))[0]
    print(f"| tokenbatch {name} | {tb['tokens_per_s']:.0f} | {tb['tokens_per_s'] / st['tokens_per_s']:.3f} |")
PYEOF
