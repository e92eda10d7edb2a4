#!/usr/bin/env bash
# Times TorchEncoder::Embed (C++, libtorch) against python3-torch on the same
# TorchScript model and shapes, in one run, and prints the ratio per shape.
# Usage: bench/backend/compare_python.sh [BUILD_DIR] [MODEL] [THREADS]
#   defaults: build-torch, build/cache/models/minilm.pt, 1 (on a shared 2-core machine more
#   threads per forward collapse under contention; see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-torch}
model=${2:-build/cache/models/minilm.pt}
threads=${3:-1}
/usr/bin/python3 scripts/gen_models.py --out build/cache/models >/dev/null 2>&1
cpp_json=$(TOKENBATCH_BENCH_MODEL="$model" TOKENBATCH_BENCH_THREADS="$threads" \
  "$build/bench/backend/encoder_bench" --benchmark_format=json 2>/dev/null)
# python3-torch uses the same OpenBLAS; give it the thread count TorchEncoder sets.
py_json=$(OPENBLAS_NUM_THREADS="$threads" /usr/bin/python3 bench/backend/python_reference.py "$model" "$threads")
/usr/bin/python3 - "$cpp_json" "$py_json" <<'PY'
import json, sys
cpp, py = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"{'B':>4} {'L':>5} {'C++ ms':>10} {'python ms':>10} {'C++/python':>11}")
for b in cpp["benchmarks"]:
    # The median of 3 repetitions; name: BM_Embed/B/L/min_time:1.000/real_time_median
    if b.get("aggregate_name") != "median":
        continue
    parts = b["name"].split("/")
    key = f"{parts[1]},{parts[2]}"
    ms = b["real_time"]  # unit: ms
    print(f"{parts[1]:>4} {parts[2]:>5} {ms:>10.2f} {py[key]:>10.2f} {ms / py[key]:>11.3f}")
PY
