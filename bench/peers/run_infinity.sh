#!/usr/bin/env bash
# Starts Infinity's own server (infinity-emb, pinned in bench/peers/requirements.txt)
# in the background on loopback, on the local sentence-transformers directory,
# CPU, torch engine, float32 (or --dtype), and its default batching (--batch-size left at its
# default), offline (no model hub). Waits until /health answers, checks with
# embed_parity.py that its embeddings equal sentence-transformers' (so it runs
# the real weights), then prints the server's pid(s) on the last line.
# Its OpenAI-compatible route is http://127.0.0.1:PORT/embeddings (no /v1 at
# this version: the routes sit under --url-prefix, empty by default).
# Stop it with: kill $(cat build/peers-cache/infinity.pid)
# Usage: bash bench/peers/run_infinity.sh [--port 7997] [--model-dir DIR] [--served-model-name NAME]
#   [--dtype float32|bfloat16|int8] [--no-check]  (the parity check is float32's: pass --no-check with another dtype)
set -euo pipefail
cd "$(dirname "$0")/../.."

PORT=7997
MODEL_DIR="$PWD/build/cache/models/all-MiniLM-L6-v2"
CHECK=1
NAME=all-MiniLM-L6-v2
DTYPE=float32
while [ $# -gt 0 ]; do
  case "$1" in
    --port) PORT="$2"; shift 2 ;;
    --model-dir) MODEL_DIR="$(realpath "$2")"; shift 2 ;;
    --served-model-name) NAME="$2"; shift 2 ;;
    --dtype) DTYPE="$2"; shift 2 ;;
    --no-check) CHECK=0; shift ;;
    *) echo "run_infinity: unknown argument $1" >&2; exit 2 ;;
  esac
done

bash bench/peers/setup_peers.sh
VENV=build/peers-venv
CACHE=build/peers-cache
mkdir -p "$CACHE"

# Offline: the model comes from the directory; the hub and Infinity's
# anonymous telemetry are never contacted.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DO_NOT_TRACK=1 INFINITY_ANONYMOUS_USAGE_STATS=0

setsid "$VENV/bin/infinity_emb" v2 \
  --model-id "$MODEL_DIR" \
  --served-model-name "$NAME" \
  --engine torch \
  --device cpu \
  --dtype "$DTYPE" \
  --host 127.0.0.1 \
  --port "$PORT" \
  --log-level warning \
  > "$CACHE/infinity.log" 2>&1 < /dev/null &
PID=$!
echo "$PID" > "$CACHE/infinity.pid"

# Model load and Infinity's own warm-up take a while on two cores.
for _ in $(seq 1 240); do
  if ! kill -0 "$PID" 2>/dev/null; then
    echo "run_infinity: the server exited; see $CACHE/infinity.log" >&2
    tail -20 "$CACHE/infinity.log" >&2
    exit 1
  fi
  if "$VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2)" 2>/dev/null; then
    break
  fi
  sleep 1
done
"$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2)" \
  || { echo "run_infinity: no answer on port $PORT" >&2; kill "$PID"; exit 1; }

if [ "$CHECK" = 1 ]; then
  "$VENV/bin/python" -m bench.peers.embed_parity --url "http://127.0.0.1:$PORT/embeddings" \
    --model all-MiniLM-L6-v2 --model-dir "$MODEL_DIR" \
    || { kill "$PID"; exit 1; }
fi
# The server is one process (uvicorn with threads); its descendants, if any, too.
echo "$PID" $(pgrep -P "$PID" || true)
