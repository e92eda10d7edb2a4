#!/usr/bin/env bash
# `tokenbatch calibrate` never recommends what it did not measure, and `serve
# --calibration` refuses a file that does. On the shipped binary and the bundled
# MiniLM-shaped model:
#   1. every batch a recommended budget lets form (each cost model's own rule:
#      padded B x L <= T, sum L + B - 1 <= T, memory fitted bytes <= M) is
#      predicted within the memory budget and no larger than the largest measured
#      B x L, and no measured shape it admits used more than the limit leaves
#      (recomputed here from the JSON, in Python, apart from the C++ checks), on
#      the grid a live run measured (its latencies replaced, so that a busy
#      machine's timings cannot refuse it), and a live recommendation is the same;
#   2. a single-length grid recommends nothing and exits non-zero, saying why;
#   3. serve accepts the good file (and the same without the fields that files
#      written before the checks lack: checked from its grid) and refuses, before it
#      starts, a file that recommends 2^30 tokens from a fit pulled to 0 by
#      unmeasured (zero) peaks, as an earlier calibrate wrote; the reported file
#      itself is refused, and re-fitting its grid stays within what it measured.
# Usage: calibrate_recommendation.sh TOKENBATCH_BINARY MODEL.pt
set -euo pipefail
bin="${1:?usage: calibrate_recommendation.sh TOKENBATCH_BINARY MODEL.pt}"
model="${2:?usage: calibrate_recommendation.sh TOKENBATCH_BINARY MODEL.pt}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
py=/usr/bin/python3

# A live run measures the grid. Its recommendation follows from the measured
# peaks alone, but calibrate also judges the latency fit and refuses (exit 1, the
# grid still written) when timings disturbed by other work miss it: that refusal
# is accepted here, nothing else.
live_status=0
"$bin" calibrate --model "$model" --memory-limit 6GiB --grid 1,4,16:32,128,512 --max-shape-tokens 8192 \
  --warmup 1 --repeats 3 --threads 1 --json "$dir/live.json" > "$dir/live.txt" 2> "$dir/live.err" ||
  live_status=$?
if [ "$live_status" = 0 ]; then
  grep -q "recommended max_batch_tokens" "$dir/live.txt"
elif [ "$live_status" = 1 ] && tail -n 1 "$dir/live.err" | grep -q "^calibrate: no recommendation: the latency fit misses" &&
    grep -q '"refused": "the latency fit misses' "$dir/live.json"; then
  echo "live calibrate refused for its latency fit; the recommendation is checked on its measured peaks"
else
  cat "$dir/live.err" >&2
  echo "calibrate exited $live_status, and not for the latency fit" >&2; exit 1
fi

# The measured grid re-fitted (calibrate --from-json) with latencies that follow
# the latency model exactly: the same peaks, so the same recommendation as a live
# run that was not refused, whatever the timings were.
"$py" - "$dir/live.json" "$dir/recorded.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for g in c["grid"]:
    bl = g["batch_size"] * g["seq_len"]
    g["latency_us"] = 500 + 2 * bl + 0.01 * bl * g["seq_len"]
json.dump(c, open(sys.argv[2], "w"))
PY
"$bin" calibrate --from-json "$dir/recorded.json" --memory-limit 6GiB --json "$dir/good.json" > "$dir/good.txt"
grep -q "recommended max_batch_tokens" "$dir/good.txt"
if [ "$live_status" = 0 ]; then
  "$py" - "$dir/live.json" "$dir/good.json" <<'PY'
import json, sys
live, refit = (json.load(open(p)) for p in sys.argv[1:])
keys = ("recommended_max_batch_tokens", "memory_model", "memory_budget_bytes", "max_input_tokens")
assert all(live[k] == refit[k] for k in keys), {k: (live[k], refit[k]) for k in keys}
PY
fi

"$py" - "$dir/good.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert "refused" not in c, c.get("refused")
m = c["memory_model"]
at = lambda b, l: m["c0"] + m["c1"] * b * l + m["c2"] * b * l * l
budget, forward = c["memory_budget_bytes"], c["forward_bytes"]
lmax_cap, bmax = c["max_input_tokens"], c["max_batch_size"]
measured = [g for g in c["grid"] if g["peak_measured"]]
assert len(measured) >= 4, c["grid"]
s = c["large_shape_fit_shortfall"]
assert budget <= forward * (1 - s) + 1, f"budget {budget} not shrunk by the shortfall {s} of {forward}"
assert all(g["peak_bytes"] >= c["peak_resolution_bytes"] for g in measured)
max_tokens = max(g["batch_size"] * g["seq_len"] for g in measured)

def rows(b):
    return min(b, bmax) if bmax else b

# Each cost model's own rule for the batches [B, L] a budget lets form.
def admitted_rows(kind, t, l):
    if kind == "padded":
        return rows(t // l)
    if kind == "sum":
        return rows(t - l + 1)  # one l-token request and b-1 one-token ones
    per_row = m["c1"] * l + m["c2"] * l * l
    return rows(int((t - m["c0"]) // per_row)) if t >= m["c0"] + per_row else 0

rec = c["recommended_max_batch_tokens"]
assert not c["extrapolated"]
for kind in ("sum", "padded", "memory"):
    t = rec[kind]
    assert t > 0, (kind, rec)
    for l in range(1, lmax_cap + 1):
        b = admitted_rows(kind, t, l)
        if b < 1:
            continue
        assert b * l <= max_tokens, f"{kind} budget {t} admits [{b}, {l}], beyond the measured B*L {max_tokens}"
        assert at(b, l) <= budget * (1 + 1e-9) + 1, f"{kind} budget {t} admits [{b}, {l}] predicted {at(b, l)} > {budget}"
    for g in measured:
        if g["seq_len"] <= lmax_cap and admitted_rows(kind, t, g["seq_len"]) >= g["batch_size"]:
            assert g["peak_bytes"] <= forward, f"{kind} budget {t} admits {g}"
print("recommendation within the limit and the measured range:", rec)
PY

# A single sequence length cannot separate per-token from attention memory.
if "$bin" calibrate --model "$model" --memory-limit 6GiB --grid 2,4,8,16,32:128 --max-input-tokens 128 \
    --warmup 0 --repeats 1 --threads 1 --json "$dir/single.json" > /dev/null 2> "$dir/single.err"; then
  echo "calibrate recommended from a single-length grid" >&2; exit 1
fi
grep -q "single sequence length" "$dir/single.err"
grep -q '"refused"' "$dir/single.json"
if grep -q '"recommended_max_batch_tokens"' "$dir/single.json"; then
  echo "a refused calibration wrote a recommendation" >&2; exit 1
fi

# The old-format file (no resolution, no extrapolation field) is checked from its
# grid; the broken one is built from it the way the old fit went wrong.
"$py" - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open(f"{d}/good.json"))
old = {k: v for k, v in c.items() if k not in ("peak_resolution_bytes", "extrapolated")}
for g in old["grid"]:
    g.pop("peak_measured")
json.dump(old, open(f"{d}/old_good.json", "w"))
bad = dict(old)
bad["grid"] = [dict(g) for g in old["grid"]]
for g in bad["grid"][:3]:
    g["peak_bytes"] = 0
bad["memory_model"] = {"c0": 0, "c1": 0, "c2": 1.02092e-07}
bad["recommended_max_batch_tokens"] = {"sum": 1 << 30, "padded": 1 << 30, "memory": 1956418765}
json.dump(bad, open(f"{d}/bad.json", "w"))
PY

port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
serve_ok() {  # serve_ok FILE: starts with it, answers /health, stops on SIGTERM with 0
  "$bin" serve --backend noop --port "$port" --calibration "$1" 2> "$dir/serve.err" &
  local pid=$! up=0
  for _ in $(seq 100); do
    if "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null; then
      up=1; break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || { echo "serve with $1 exited non-zero" >&2; cat "$dir/serve.err" >&2; return 1; }
  [ "$up" = 1 ] || { echo "serve with $1 never answered" >&2; cat "$dir/serve.err" >&2; return 1; }
}
serve_ok "$dir/good.json"
serve_ok "$dir/old_good.json"
# Settings the calibration was not computed for are refused before serving.
refused() {  # refused WHAT ARGS...: serve exits non-zero at once, saying WHAT
  local what="$1"; shift
  if timeout 20 "$bin" serve --backend noop --port "$port" --calibration "$dir/good.json" "$@" 2> "$dir/refused.err"; then
    echo "serve accepted $*" >&2; exit 1
  fi
  grep -q -- "$what" "$dir/refused.err" || { cat "$dir/refused.err" >&2; exit 1; }
}
refused "--max-input-tokens 1024 is above the 512 tokens" --max-input-tokens 1024
refused "--workers 2 runs 2 at once" --workers 2
refused "--workers 2 runs 2 at once" --workers 2 --max-batch-tokens 4096
if timeout 20 "$bin" serve --backend noop --port "$port" --calibration "$dir/bad.json" 2> "$dir/bad.err"; then
  echo "serve accepted a calibration that recommends 2^30 tokens" >&2; exit 1
fi
grep -q "is refused" "$dir/bad.err"
cat "$dir/bad.err"

# The reported file itself (testdata/calibration/README.md): serve refuses it, and
# re-fitting its grid recommends within what it measured.
reported="$(cd "$(dirname "$0")/../.." && pwd)/testdata/calibration/minilm_cpu_2_30.json"
if timeout 20 "$bin" serve --backend noop --port "$port" --calibration "$reported" 2> "$dir/reported.err"; then
  echo "serve accepted the reported 2^30 calibration" >&2; exit 1
fi
grep -q "is refused" "$dir/reported.err"
"$bin" calibrate --from-json "$reported" --memory-limit 6GiB --json "$dir/refit.json" > /dev/null
"$py" - "$dir/refit.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rec = c["recommended_max_batch_tokens"]
measured = [g for g in c["grid"] if g["peak_measured"]]
assert len(measured) < len(c["grid"]), "the zero peaks must not count as measurements"
largest = max(g["batch_size"] * g["seq_len"] for g in measured)
assert 0 < rec["padded"] <= largest and 0 < rec["sum"] <= largest, (rec, largest)
print("re-fit of the reported grid:", rec)
PY
echo "calibrate_recommendation: all checks passed"
