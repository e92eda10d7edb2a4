#!/usr/bin/env bash
# Model compute alone, in one run at THREADS intra-op threads (default 1):
#   1. `tokenbatch bench` on TEXTS texts of the seed mix (all at once,
#      ours-length-aware), packed and padded execution, each writing the batches
#      it ran with their measured run time (--save-batches);
#   2. ONNX Runtime and PyTorch eager (bench/peers/onnx_compute.py) on exactly the
#      padded batches' shapes [B, Lmax];
#   3. this CPU's GEMM rate (bench/peers/gemm_ceiling.py) and the fraction of it
#      each tokenbatch run reached (bench/peers/ceiling_fraction.py).
# Prints the summed batch times: ours (padded) against ONNX Runtime and eager on
# the same shapes, and ours (packed) for the same texts.
#
# Usage: bash bench/peers/compare_compute.sh BUILD_DIR [TEXTS]   (default 500; env THREADS, REPEATS
#   timed passes per shape after the warm-up pass, default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: compare_compute.sh BUILD_DIR [TEXTS]}"
TEXTS="${2:-500}"
THREADS="${THREADS:-1}"
source bench/peers/peers_common.sh
make_workload seed "$TEXTS" "$CACHE/compute-seed-$TEXTS.jsonl"

for execution in packed padded; do
  "$TB" bench --model-id "$MODEL_DIR" --workload "$WORKLOAD" --policies ours-length-aware --threads "$THREADS" \
    --max-positions "$MAX_TOKENS" --execution "$execution" --json --no-progress \
    --save-batches "$CACHE/compute-batches-$execution.jsonl" >"$CACHE/compute-bench-$execution.json"
done
"$PY" -c "
import json, sys
shapes = [[b['size'], b['max_tokens']] for b in map(json.loads, open(sys.argv[1]))]
json.dump(shapes, open(sys.argv[2], 'w'))" "$CACHE/compute-batches-padded.jsonl" "$CACHE/compute-shapes.json"
"$PY" bench/peers/onnx_compute.py "$CACHE/compute-shapes.json" --model-dir "$MODEL_DIR" --threads "$THREADS" \
  --repeats "${REPEATS:-1}" --backend both >"$CACHE/compute-onnx.json"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PY" bench/peers/gemm_ceiling.py --model-dir "$MODEL_DIR" \
  --threads "$THREADS" --json-only >"$CACHE/compute-gemm.json"

"$PY" - "$CACHE" <<'PYEOF'
import json, sys
cache = sys.argv[1]
ours = {e: sum(b["latency_us"] for b in map(json.loads, open(f"{cache}/compute-batches-{e}.jsonl"))) / 1e3
        for e in ("packed", "padded")}
onnx = json.load(open(f"{cache}/compute-onnx.json"))
ort_ms, eager_ms = onnx["ort"]["total_ms"], onnx["torch"]["total_ms"]
print(f"batches: {len(json.load(open(f'{cache}/compute-shapes.json')))} (padded run's shapes)")
print(f"summed batch time, ms: tokenbatch padded {ours['padded']:.0f}, packed {ours['packed']:.0f}; "
      f"ONNX Runtime on the padded shapes {ort_ms:.0f}; PyTorch eager {eager_ms:.0f}")
print(f"ONNX Runtime time / tokenbatch time (>= 0.9 is the target): padded {ort_ms / ours['padded']:.3f}, "
      f"packed {ort_ms / ours['packed']:.3f}")
PYEOF
for execution in packed padded; do
  echo "GEMM ceiling, $execution:"
  "$PY" bench/peers/ceiling_fraction.py --workload "$WORKLOAD" --bench-json "$CACHE/compute-bench-$execution.json" \
    --gemm-json "$CACHE/compute-gemm.json" --threads "$THREADS" --max-tokens "$MAX_TOKENS" --model-dir "$MODEL_DIR"
done
