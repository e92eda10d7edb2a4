#!/usr/bin/env bash
# Offline embedding of the same real texts, in one run:
#   1. sentence-transformers' encode (batch size 32, its length sorting),
#      bench/peers/offline_st.py;
#   2. tokenbatch's own path on the same model directory, all texts submitted at
#      once (`tokenbatch bench --policies ours-length-aware`), which also writes
#      its batches (--save-batches) for bench/peers/onnx_compute.py.
# Both truncate to the model's max_seq_length and use THREADS intra-op threads.
# Prints each one's JSON and the tokens/s ratio.
#
# Usage: bash bench/peers/compare_offline.sh BUILD_DIR [TEXTS] [MIX]
#   (defaults 10000 texts of the seed mix); env THREADS (default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: compare_offline.sh BUILD_DIR [TEXTS] [MIX]}"
TEXTS="${2:-10000}"
MIX="${3:-seed}"
THREADS="${THREADS:-2}"
source bench/peers/peers_common.sh
make_workload "$MIX" "$TEXTS" "$CACHE/offline-$MIX-$TEXTS.jsonl"

st=$("$PY" bench/peers/offline_st.py "$WORKLOAD" --model-dir "$MODEL_DIR" --texts "$TEXTS" --threads "$THREADS" \
  --batch-size 32)
echo "sentence-transformers: $st"
"$TB" bench --model-id "$MODEL_DIR" --workload "$WORKLOAD" --policies ours-length-aware --threads "$THREADS" \
  --max-positions "$MAX_TOKENS" --json --no-progress --save-batches "$CACHE/offline-batches.jsonl" \
  >"$CACHE/offline-tokenbatch.json"
echo "tokenbatch: $(cat "$CACHE/offline-tokenbatch.json")"
"$PY" - "$CACHE/offline-tokenbatch.json" "$st" <<'PYEOF'
import json, sys
st = json.loads(sys.argv[2])
tb = json.load(open(sys.argv[1]))[0]
print(f"tokens/s: tokenbatch {tb['tokens_per_s']:.1f}, sentence-transformers {st['tokens_per_s']:.1f}, "
      f"ratio {tb['tokens_per_s'] / st['tokens_per_s']:.3f}")
PYEOF
