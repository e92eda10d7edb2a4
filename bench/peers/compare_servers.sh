#!/usr/bin/env bash
# tokenbatch serve against Infinity's own server, same model directory
# (all-MiniLM-L6-v2, real weights), same workload, same client
# (bench/peers/load_client.py), in one run on this machine. Each server runs
# with its defaults, as a user would start it; both use every core.
#   closed loop: CONNECTIONS (default 1 8 32 128), WARMUP s then DURATION s each;
#   open loop:   Poisson RATES (requests/s, default 4 8 12) for DURATION s each.
# Writes one JSON object per point to OUT (default build/peers-cache/servers.jsonl,
# each tagged with server, mode and load) and prints a table
# (bench/peers/summarize_servers.py).
#
# Usage: bash bench/peers/compare_servers.sh BUILD_DIR [MIX]
#   MIX: a generated mix of `tokenbatch simulate` (seed, all_short, long_tailed;
#   default seed); env CONNECTIONS, RATES, DURATION, WARMUP, OUT, SERVERS
#   ("tokenbatch infinity"; `tokenbatch@DIR` adds the build in DIR, e.g.
#   SERVERS="tokenbatch tokenbatch@build infinity" with BUILD_DIR build-pytorch
#   compares the two libtorch builds and Infinity in one run), TOKENBATCH_FLAGS
#   (more `serve` flags, e.g. "--batch-window fixed"), INFINITY_DTYPE
#   (Infinity's --dtype, default float32).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: compare_servers.sh BUILD_DIR [MIX]}"
MIX="${2:-seed}"
CONNECTIONS="${CONNECTIONS:-1 8 32 128}"
RATES="${RATES:-4 8 12}"
DURATION="${DURATION:-15}"
WARMUP="${WARMUP:-3}"
SERVERS="${SERVERS:-tokenbatch infinity}"
OUT="${OUT:-build/peers-cache/servers.jsonl}"
PORT_TB=18710 PORT_INF=18711

source bench/peers/peers_common.sh
source bench/server/server_processes.sh  # wait_up
mkdir -p "$(dirname "$OUT")"
: >"$OUT"
make_workload "$MIX" 2000 "$CACHE/workload-$MIX.jsonl"

# Every server named is checked before the first is measured.
for server in $SERVERS; do
  case "$server" in
    tokenbatch | infinity) ;;
    tokenbatch@*)
      [ -x "${server#tokenbatch@}/src/cli/tokenbatch" ] ||
        { echo "compare_servers: $server: no ${server#tokenbatch@}/src/cli/tokenbatch" >&2; exit 2; } ;;
    *) echo "compare_servers: unknown server '$server' (tokenbatch, tokenbatch@DIR, infinity)" >&2; exit 2 ;;
  esac
done

server_pid=""
stop_server() {  # Infinity is not our child (setsid): poll until it has gone
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    kill -- -"$server_pid" 2>/dev/null || true  # Infinity's session group: its workers too
    for _ in $(seq 1 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    server_pid=""
  fi
}
trap stop_server EXIT
measure() {  # measure SERVER URL MODE LOAD [client flags...]
  local server=$1 url=$2 mode=$3 load=$4
  shift 4
  "$PY" -m bench.peers.load_client "$WORKLOAD" --url "$url" --model all-MiniLM-L6-v2 --max-tokens "$MAX_TOKENS" \
    --server-pid "$server_pid" --shuffle "$@" |
    "$PY" -c "import json,sys; r=json.load(sys.stdin); r.update(server='$server', mode='$mode', load=$load, mix='$MIX'); print(json.dumps(r))" \
    >>"$OUT"
  tail -1 "$OUT" | "$PY" -c "import json,sys; r=json.load(sys.stdin); print(r['server'], r['mode'], r['load'], 'req/s', round(r['requests_per_s'], 1))"
}

for server in $SERVERS; do
  case "$server" in
    tokenbatch | tokenbatch@*)
      binary="$TB"
      [ "$server" = tokenbatch ] || binary="${server#tokenbatch@}/src/cli/tokenbatch"
      # shellcheck disable=SC2086
      "$binary" serve --model-id "$MODEL_DIR" --served-model-name all-MiniLM-L6-v2 --port "$PORT_TB" --log-level warn \
        ${TOKENBATCH_FLAGS:-} &
      server_pid=$!
      wait_up "$PORT_TB" 120
      url="http://127.0.0.1:$PORT_TB/v1/embeddings"
      ;;
    infinity)
      bash bench/peers/run_infinity.sh --port "$PORT_INF" --dtype "${INFINITY_DTYPE:-float32}" --no-check >/dev/null
      server_pid=$(cat build/peers-cache/infinity.pid)
      url="http://127.0.0.1:$PORT_INF/embeddings"
      ;;
  esac
  for c in $CONNECTIONS; do
    measure "$server" "$url" closed "$c" --connections "$c" --warmup "$WARMUP" --duration "$DURATION"
  done
  for r in $RATES; do
    measure "$server" "$url" open "$r" --rate "$r" --warmup "$WARMUP" --duration "$DURATION" --max-outstanding 512
  done
  stop_server
done
"$PY" bench/peers/summarize_servers.py "$OUT"
