#!/usr/bin/env bash
# Two builds of `tokenbatch serve` side by side, in one run: for each backend
# setting, A and B are started together and loaded alternately with wrk (A, B,
# A, B, ...), so that drift on a shared machine hits both alike. Prints one
# RESULT line per run and, per setting, the median requests/s and p99 of each
# build and their ratio B/A.
#   noop:    --backend noop --max-wait-ms 0: the serving path alone (parse,
#            tokenise, Batcher, format), where the CPU is the bottleneck;
#   delay2ms: --backend noop --noop-delay-us 2000 --max-wait-ms 0: every batch
#            takes 2 ms without using a CPU, as a GPU would; the Batcher's
#            worker is the bottleneck.
# Both on 1 I/O thread and 1 tokenizer thread, wrk -t1 -cCONNECTIONS.
# Usage: bench/server/ab_server_builds.sh A_BUILD B_BUILD [DURATION_S] [CONNECTIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
A="${1:?usage: ab_server_builds.sh A_BUILD B_BUILD [DURATION_S] [CONNECTIONS] [ROUNDS]}"
B="${2:?usage: ab_server_builds.sh A_BUILD B_BUILD [DURATION_S] [CONNECTIONS] [ROUNDS]}"
DURATION="${3:-5}"
CONNS="${4:-32}"
ROUNDS="${5:-3}"
LUA="bench/server/embeddings.lua"
export BODY='{"input": "The quick brown fox jumps over the lazy dog", "model": "bench"}'
source bench/server/server_processes.sh
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -E "s/.*$1=([0-9.]+).*/\1/"; }

echo "machine: $(nproc) cores; wrk -t1 -c$CONNS -d${DURATION}s; A=$A B=$B"
port=18700
for setting in "noop:" "delay2ms:--noop-delay-us 2000"; do
  name="${setting%%:*}"
  extra="${setting#*:}"
  declare -A port_of=()
  for build in A B; do
    dir="${!build}"
    # shellcheck disable=SC2086
    "$dir/src/cli/tokenbatch" serve --backend noop --port "$port" --io-threads 1 --tokenization-workers 1 \
      --max-wait-ms 0 --log-level warn $extra &
    pids+=($!)
    wait_up "$port"
    port_of[$build]=$port
    port=$((port + 1))
  done
  : > "/tmp/ab_$name.A" && : > "/tmp/ab_$name.B"
  for round in $(seq 1 "$ROUNDS"); do
    for build in A B; do
      line=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$LUA" "http://127.0.0.1:${port_of[$build]}" |
        grep '^RESULT')
      echo "$name $build round $round ${line#RESULT }"
      echo "$line" >> "/tmp/ab_$name.$build"
    done
  done
  a_rps=$(field requests_per_s < "/tmp/ab_$name.A" | median)
  b_rps=$(field requests_per_s < "/tmp/ab_$name.B" | median)
  a_p99=$(field p99_ms < "/tmp/ab_$name.A" | median)
  b_p99=$(field p99_ms < "/tmp/ab_$name.B" | median)
  awk -v n="$name" -v ar="$a_rps" -v br="$b_rps" -v ap="$a_p99" -v bp="$b_p99" 'BEGIN {
    printf "%s: median requests/s A %.0f, B %.0f (B/A %.3f); median p99 ms A %.2f, B %.2f\n", n, ar, br, br / ar, ap, bp }'
  cleanup
  pids=()
done
