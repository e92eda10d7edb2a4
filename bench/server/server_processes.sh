# Sourced by the server benchmarks: background servers that are stopped on exit,
# and a readiness wait. Callers append each server's pid to `pids`.
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

wait_up() {  # wait_up PORT [SECONDS]: until GET /health answers (SECONDS at most, default 10)
  for _ in $(seq 1 $((${2:-10} * 20))); do
    curl -s -o /dev/null "http://127.0.0.1:$1/health" && return 0
    sleep 0.05
  done
  echo "server on port $1 did not come up" >&2
  return 1
}
