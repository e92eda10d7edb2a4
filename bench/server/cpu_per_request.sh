#!/usr/bin/env bash
# Server CPU per request under wrk: reads a running server's CPU ticks
# (/proc/PID/stat utime + stime) before and after a wrk run against it and
# divides by the requests wrk completed. Also prints wrk's requests/s.
#
# Usage: bench/server/cpu_per_request.sh PORT PID [DURATION_S] [CONNECTIONS]
#   e.g. build/src/cli/tokenbatch serve --backend noop --port 18711 --io-threads 1 \
#          --tokenization-workers 1 --max-wait-ms 0 --log-level warn &
#        bench/server/cpu_per_request.sh 18711 $!
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT="${1:?usage: cpu_per_request.sh PORT PID [DURATION_S] [CONNECTIONS]}"
PID="${2:?usage: cpu_per_request.sh PORT PID [DURATION_S] [CONNECTIONS]}"
DURATION="${3:-3}"
CONNS="${4:-32}"
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
line=$(BODY='{"input": "The quick brown fox jumps over the lazy dog", "model": "bench"}' \
  wrk -t1 -c"$CONNS" -d"${DURATION}s" -s bench/server/embeddings.lua "http://127.0.0.1:$PORT" | grep '^RESULT')
after=$(ticks)
requests=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$line")
rps=$(sed -E 's/.*requests_per_s=([0-9.]+).*/\1/' <<<"$line")
awk -v a="$before" -v b="$after" -v n="$requests" -v hz="$hz" -v rps="$rps" \
  'BEGIN { printf "requests_per_s=%s server_cpu_us_per_request=%.1f\n", rps, (b - a) * 1e6 / hz / n }'
