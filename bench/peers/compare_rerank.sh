#!/usr/bin/env bash
# tokenbatch serve against Infinity's own server on reranking, same cross-encoder
# directory (bench/peers/make_reranker.py: all-MiniLM-L6-v2's encoder under a
# one-label classification head, the ms-marco-MiniLM-L-6-v2 shape), same client
# (bench/peers/load_client.py --rerank-documents), in one run on this machine.
# Every request reranks DOCUMENTS (default 100) documents of mixed length, drawn
# from a generated mix, against one short query, in the Cohere/Jina shape both
# servers take (tokenbatch's /v1/rerank, Infinity's /rerank). Closed loop at
# CONNECTIONS (default 1 2 4), each after a warm-up of WARMUP s plus
# WARMUP_PER_CONNECTION s per connection, then DURATION s measured: a rerank takes
# seconds here, and the first wave of N requests, started together, finishes
# together, so the window must open after it and last several request times,
# else it counts a wave or two and the ratio is noise. Before measuring,
# one request goes to both servers and their scores must agree (both run the
# same model, so a mismatch means one is not computing what it should).
# Each server runs with its defaults, as a user would start it.
# Writes one JSON object per point to OUT (default build/peers-cache/rerank.jsonl)
# and prints a table (bench/peers/summarize_servers.py).
#
# Usage: bash bench/peers/compare_rerank.sh BUILD_DIR [MIX]
#   MIX: a generated mix of `tokenbatch simulate` (default seed); env DOCUMENTS,
#   CONNECTIONS, DURATION, WARMUP, WARMUP_PER_CONNECTION, OUT, SERVERS
#   ("tokenbatch infinity").
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: compare_rerank.sh BUILD_DIR [MIX]}"
MIX="${2:-seed}"
DOCUMENTS="${DOCUMENTS:-100}"
CONNECTIONS="${CONNECTIONS:-1 2 4}"
DURATION="${DURATION:-90}"
WARMUP="${WARMUP:-5}"
WARMUP_PER_CONNECTION="${WARMUP_PER_CONNECTION:-8}"
SERVERS="${SERVERS:-tokenbatch infinity}"
OUT="${OUT:-build/peers-cache/rerank.jsonl}"
PORT_TB=18720 PORT_INF=18721
NAME=minilm-reranker

source bench/peers/peers_common.sh
source bench/server/server_processes.sh  # wait_up
RERANKER="$CACHE/$NAME"
"$PY" bench/peers/make_reranker.py "$MODEL_DIR" "$RERANKER"
mkdir -p "$(dirname "$OUT")"
: >"$OUT"
make_workload "$MIX" 2000 "$CACHE/workload-$MIX.jsonl"
MAX_TOKENS=512  # the reranker's limit (tokenizer_config.json model_max_length); both servers cut the document there

server_pid=""
stop_server() {  # Infinity is not our child (setsid): poll until it has gone
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    kill -- -"$server_pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    server_pid=""
  fi
}
trap stop_server EXIT
start_server() {  # start_server SERVER: sets server_pid and url
  case "$1" in
    tokenbatch)
      "$TB" serve --model-id "$RERANKER" --served-model-name "$NAME" --port "$PORT_TB" --log-level warn &
      server_pid=$!
      wait_up "$PORT_TB" 120
      url="http://127.0.0.1:$PORT_TB/v1/rerank"
      ;;
    infinity)
      bash bench/peers/run_infinity.sh --port "$PORT_INF" --model-dir "$RERANKER" --served-model-name "$NAME" \
        --no-check >/dev/null
      server_pid=$(cat "$CACHE/infinity.pid")
      url="http://127.0.0.1:$PORT_INF/rerank"
      ;;
  esac
}
scores() {  # scores URL FILE: the relevance scores of one fixed request, by document index
  "$PY" - "$1" "$WORKLOAD" "$2" "$NAME" <<'PYEOF'
import json, sys, urllib.request
url, workload, out, name = sys.argv[1:5]
texts = [json.loads(l)["text"] for l in open(workload, encoding="utf-8") if l.strip()]
body = {"model": name, "query": "what does the design note say about padding", "documents": texts[:50],
        "return_documents": False}
req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
results = json.loads(urllib.request.urlopen(req, timeout=600).read())["results"]
json.dump({r["index"]: r["relevance_score"] for r in results}, open(out, "w"))
PYEOF
}

for server in $SERVERS; do
  start_server "$server"
  scores "$url" "$CACHE/rerank-scores-$server.json"
  for c in $CONNECTIONS; do
    "$PY" -m bench.peers.load_client "$WORKLOAD" --url "$url" --model "$NAME" --max-tokens "$MAX_TOKENS" \
      --server-pid "$server_pid" --rerank-documents "$DOCUMENTS" --connections "$c" \
      --warmup "$((WARMUP + WARMUP_PER_CONNECTION * c))" \
      --duration "$DURATION" |
      "$PY" -c "import json,sys; r=json.load(sys.stdin); r.update(server='$server', mode='closed', load=$c, mix='$MIX', documents=$DOCUMENTS); print(json.dumps(r))" \
      >>"$OUT"
    tail -1 "$OUT" | "$PY" -c "import json,sys; r=json.load(sys.stdin); print(r['server'], r['load'], 'reranks/s', r['requests_per_s'], 'p50 ms', r['latency']['overall'].get('p50_ms'))"
  done
  stop_server
done
if [ -f "$CACHE/rerank-scores-tokenbatch.json" ] && [ -f "$CACHE/rerank-scores-infinity.json" ]; then
  "$PY" -c "
import json, sys
a = json.load(open('$CACHE/rerank-scores-tokenbatch.json')); b = json.load(open('$CACHE/rerank-scores-infinity.json'))
if a.keys() != b.keys():
    sys.exit(f'the servers scored different documents: {sorted(a)} against {sorted(b)}')
diff = max(abs(a[k] - b[k]) for k in a)
print(f'scores of tokenbatch and infinity on {len(a)} documents: max |diff| {diff:.2e}')
sys.exit(0 if diff <= 1e-4 else 1)"
fi
"$PY" bench/peers/summarize_servers.py "$OUT"
