#!/usr/bin/env bash
# The batching window under closed-loop load: `tokenbatch serve` with the
# default adaptive window against the fixed window at --max-wait-ms 0 and 4, at
# several connection counts, in one run (wrk on loopback, one short text per
# request). Prints one RESULT line per (backend, window, connections) and, per
# connection count, adaptive / best-fixed ratios of requests/s and p50.
#
# Backends: noop (no model), noop with a fixed per-batch delay standing in for a
# GPU (--noop-delay-us), and the real all-MiniLM-L6-v2 (--model-id) on CPU.
#
# Usage: bench/server/batch_window_bench.sh BUILD_DIR [DURATION_S] [CONNECTIONS...]
#   BACKENDS="noop gpu2ms minilm" selects backends (default all three);
#   MODEL_DIR overrides the model directory (default build/cache/models/all-MiniLM-L6-v2).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: batch_window_bench.sh BUILD_DIR [DURATION_S] [CONNECTIONS...]}"
DURATION="${2:-5}"
shift $(($# >= 2 ? 2 : $#))
CONNECTIONS=("$@")
((${#CONNECTIONS[@]})) || CONNECTIONS=(1 8 32 128)
BACKENDS="${BACKENDS:-noop gpu2ms minilm}"
MODEL_DIR="${MODEL_DIR:-build/cache/models/all-MiniLM-L6-v2}"
TB="$BUILD/src/cli/tokenbatch"
LUA="bench/server/embeddings.lua"
PORT=18650
source bench/server/server_processes.sh

backend_flags() {
  case "$1" in
    noop) echo "--backend noop" ;;
    gpu2ms) echo "--backend noop --noop-delay-us 2000" ;;
    minilm) echo "--model-id $MODEL_DIR --threads 1" ;;
  esac
}
window_flags() {
  case "$1" in
    adaptive) echo "" ;;
    fixed0) echo "--batch-window fixed --max-wait-ms 0" ;;
    fixed4) echo "--batch-window fixed --max-wait-ms 4" ;;
  esac
}

RESULTS="$(mktemp)"
echo "machine: $(nproc) cores; wrk -t1 -d${DURATION}s; servers on 1 I/O thread, 1 worker"
# The loop runs in this shell (its output is teed line by line), so the servers
# it starts are in `pids` for server_processes.sh's cleanup on any exit.
for backend in $BACKENDS; do
  for window in adaptive fixed0 fixed4; do
    # shellcheck disable=SC2046
    "$TB" serve $(backend_flags "$backend") $(window_flags "$window") --port "$PORT" --io-threads 1 \
      --tokenization-workers 1 --log-level warn &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.1; done
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" || { echo "$backend $window: server did not come up" >&2; exit 1; }
    wrk -t1 -c4 -d1s -s "$LUA" "http://127.0.0.1:$PORT" >/dev/null  # warm-up: the latency fit learns
    for c in "${CONNECTIONS[@]}"; do
      line=$(wrk -t1 -c"$c" -d"${DURATION}s" --latency -s "$LUA" "http://127.0.0.1:$PORT" | grep '^RESULT')
      echo "$backend $window c=$c ${line#RESULT }" | tee -a "$RESULTS"
    done
    curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^tokenbatch_learned_batch|^tokenbatch_batch_dispatch_total|^tokenbatch_batch_size_(sum|count)' |
      sed "s/^/$backend $window metric /" | tee -a "$RESULTS"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
done
# Ratios: adaptive against the better fixed window (higher requests/s; lower p50).
awk '
  /requests_per_s=/ {
    split($3, c, "="); key = $1 " " c[2]
    for (i = 4; i <= NF; ++i) { split($i, kv, "="); v[$2, key, kv[1]] = kv[2] }
    keys[key] = 1
  }
  END {
    for (k in keys) {
      best_rps = v["fixed0", k, "requests_per_s"]; r4 = v["fixed4", k, "requests_per_s"]
      if (r4 > best_rps) best_rps = r4
      best_p50 = v["fixed0", k, "p50_ms"]; p4 = v["fixed4", k, "p50_ms"]
      if (p4 < best_p50) best_p50 = p4
      if (best_rps <= 0 || best_p50 <= 0) { printf "RATIO %s: a fixed window served nothing\n", k; continue }
      printf "RATIO %s c=%s adaptive/best requests_per_s=%.3f p50=%.3f\n", substr(k, 1, index(k, " ") - 1),
             substr(k, index(k, " ") + 1), v["adaptive", k, "requests_per_s"] / best_rps,
             v["adaptive", k, "p50_ms"] / best_p50
    }
  }' "$RESULTS" | sort -t= -k2 -n
