#!/usr/bin/env bash
# Load test of `tokenbatch serve` with wrk on loopback, in one run:
#   1. a bare Boost.Beast server (bare_beast_server) answering a fixed body of the
#      same size as ours: the ceiling for an HTTP server on this machine;
#   2. tokenbatch serve --backend noop --max-wait-ms 0: the whole HTTP path
#      (parse, tokenise, Batcher, format) without a model; the target is >= 0.5x
#      the bare server. max_wait 0 because a no-op batch costs nothing to wait
#      for; also run with the default 4 ms to show the batching window's cost;
#   3. tokenbatch serve with the tiny TorchScript model (token-id inputs, since its
#      vocabulary is 1000 ids).
# Prints one RESULT line per configuration and the noop/bare ratio. With
# ROUNDS > 1, bare and noop (max_wait 0) run ROUNDS times alternately, each
# pair giving a ratio, and the median ratio is printed too (the bare server's
# own figure moves by +-10% between runs on a shared VM).
#
# Usage: bench/server/run_server_bench.sh BUILD_DIR [DURATION_S] [CONNECTIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: run_server_bench.sh BUILD_DIR [DURATION_S] [CONNECTIONS] [ROUNDS]}"
DURATION="${2:-5}"
CONNS="${3:-32}"
ROUNDS="${4:-1}"
TB="$BUILD/src/cli/tokenbatch"
BARE="$BUILD/bench/server/bare_beast_server"
LUA="bench/server/embeddings.lua"
PORT_BARE=18601 PORT_NOOP=18602 PORT_TINY=18603 PORT_NOOP_WAIT=18604
source bench/server/server_processes.sh
run_wrk() {  # run_wrk LABEL PORT
  local line
  line=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$LUA" "http://127.0.0.1:$2" | grep '^RESULT')
  echo "$1 ${line#RESULT }"
}

TEXT_BODY='{"input": "The quick brown fox jumps over the lazy dog", "model": "bench"}'
# Size of our noop reply to that body, for the bare server's body.
"$TB" serve --backend noop --port "$PORT_NOOP" --io-threads 1 --tokenization-workers 1 --max-wait-ms 0 \
  --log-level warn &
pids+=($!)
wait_up "$PORT_NOOP"
REPLY_BYTES=$(curl -s -X POST -H 'Content-Type: application/json' -d "$TEXT_BODY" \
  "http://127.0.0.1:$PORT_NOOP/v1/embeddings" | wc -c)

"$BARE" "$PORT_BARE" 1 "$REPLY_BYTES" &
pids+=($!)
sleep 0.3
echo "machine: $(nproc) cores; wrk -t1 -c$CONNS -d${DURATION}s; servers on 1 I/O thread; reply $REPLY_BYTES bytes"
rps() { sed -E 's/.*requests_per_s=([0-9.]+).*/\1/' <<<"$1"; }
ratios=()
for round in $(seq 1 "$ROUNDS"); do
  bare=$(BODY="$TEXT_BODY" run_wrk "bare_beast" "$PORT_BARE")
  echo "$bare"
  noop=$(BODY="$TEXT_BODY" run_wrk "tokenbatch_noop_wait0" "$PORT_NOOP")
  echo "$noop"
  ratios+=("$(awk -v n="$(rps "$noop")" -v b="$(rps "$bare")" 'BEGIN { printf "%.3f", n / b }')")
  if ((ROUNDS > 1)); then echo "round $round: ratio noop/bare = ${ratios[-1]}"; fi
done
"$TB" serve --backend noop --port "$PORT_NOOP_WAIT" --io-threads 1 --tokenization-workers 1 --log-level warn &
pids+=($!)
wait_up "$PORT_NOOP_WAIT"
BODY="$TEXT_BODY" run_wrk "tokenbatch_noop_wait4ms" "$PORT_NOOP_WAIT"

if [ -f build/cache/models/tiny.pt ]; then
  "$TB" serve --model build/cache/models/tiny.pt --port "$PORT_TINY" --io-threads 1 --threads 1 \
    --log-level error &
  pids+=($!)
  wait_up "$PORT_TINY"
  IDS_BODY='{"input": [[11, 42, 7, 300, 5, 99, 250, 18, 64, 3, 77, 512, 8, 1, 900, 23]], "model": "bench"}'
  BODY="$IDS_BODY" run_wrk "tokenbatch_tiny_model" "$PORT_TINY"
fi

if ((ROUNDS > 1)); then
  printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END {
    m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "median ratio noop/bare over %d rounds = %.2f (min %.2f, max %.2f)\n", NR, m, r[1], r[NR] }'
else
  printf 'ratio noop/bare = %.2f\n' "${ratios[0]}"
fi
