#!/usr/bin/env bash
# `simulate --save-workload` and `bench --workload` run the same requests: the
# file round-trips, both count tokens with the calibrated model's tokenizer, and
# both admit the same way (truncation at the model's 512 positions by default,
# or rejection with --oversize reject). The simulated device is the one the
# calibration file names, not a GPU preset.
# Usage: workload_round_trip.sh TOKENBATCH_BINARY MINILM_TORCHSCRIPT
set -euo pipefail
bin="${1:?usage: workload_round_trip.sh TOKENBATCH_BINARY MODEL}"
model="${2:?usage: workload_round_trip.sh TOKENBATCH_BINARY MODEL}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# A calibration of a CPU, in calibrate --json's fields (values of the order
# calibrate measures for this model).
cat > "$dir/cal.json" <<JSON
{"device": "cpu", "threads": 1, "memory_limit_bytes": 6442450944, "max_input_tokens": 512,
 "model_load_bytes": 1700000000, "model": {"name": "minilm", "path": "$model", "layers": 6},
 "memory_model": {"c0": 442813, "c1": 10345, "c2": 111.5},
 "latency_model_us": {"a": 6156, "b": 253.6, "c": 0.391}}
JSON


"$bin" simulate --calibration "$dir/cal.json" --mix long_tailed --requests 24 --policies ours-length-aware \
  --save-workload "$dir/w.jsonl" --no-progress > "$dir/sim.md"
grep -q "device: simulated cpu as calibrated in $dir/cal.json (1 thread(s) per forward" "$dir/sim.md"
grep -q "token counts: exact, .*bert-base-uncased/tokenizer.json" "$dir/sim.md"
! grep -q "A10G\|Qwen3" "$dir/sim.md"
sim_truncated=$(sed -n 's/.*, \([0-9]*\) truncated to 512 tokens.*/\1/p' "$dir/sim.md")
[ "$(wc -l < "$dir/w.jsonl")" -eq 24 ] || { echo "the saved workload should have 24 lines"; exit 1; }
# Saved before admission: the long passages keep their full counts.
max_saved=$(python3 -c "import json,sys; print(max(json.loads(l)['tokens'] for l in open(sys.argv[1])))" "$dir/w.jsonl")
[ "$max_saved" -gt 512 ] || { echo "expected a passage over 512 tokens in the saved workload"; exit 1; }

"$bin" bench --model "$model" --workload "$dir/w.jsonl" --policies ours-length-aware --no-progress \
  > "$dir/bench.md" 2> "$dir/bench.err"
bench_truncated=$(sed -n 's/.*, \([0-9]*\) truncated to 512 tokens.*/\1/p' "$dir/bench.md")
[ -n "$sim_truncated" ] && [ "$sim_truncated" = "$bench_truncated" ] ||
  { echo "truncated: simulate '$sim_truncated', bench '$bench_truncated'"; cat "$dir/sim.md" "$dir/bench.md"; exit 1; }
! grep -q "counted differently" "$dir/bench.err"  # the file's counts are bench's own

# --oversize reject: the same requests are refused by both, and counted; with
# two workers (the Batcher's, and a baseline's own threads) every other request
# is answered once.
"$bin" simulate --calibration "$dir/cal.json" --workload "$dir/w.jsonl" --oversize reject --json --no-progress \
  --workers 2 --policies fixed-32,ours-length-aware > "$dir/sim.json"
"$bin" bench --model "$model" --workload "$dir/w.jsonl" --oversize reject --json --no-progress \
  --workers 2 --policies fixed-32,ours-length-aware > "$dir/bench.json"
python3 - "$dir/sim.json" "$dir/bench.json" "$sim_truncated" <<'PY'
import json, sys
rejected = int(sys.argv[3])
for path in sys.argv[1:3]:
    results = json.load(open(path))
    assert [r["policy"] for r in results] == ["fixed-32", "ours-length-aware"], results
    for r in results:
        assert r["requests"] == 24 and r["requests_rejected"] == rejected, (path, r)
        assert r["completed"] == 24 - rejected and r["requests_lost"] == 0, (path, r)
        assert r["latency_ms"]["long"]["count"] + r["latency_ms"]["short"]["count"] == r["completed"], (path, r)
PY

# --intra-op adaptive: two one-core workers sharing --threads 2; every admitted
# request answered once, the run's header says how the cores were shared.
"$bin" bench --model "$model" --workload "$dir/w.jsonl" --policies ours-length-aware --no-progress \
  --threads 2 --intra-op adaptive > "$dir/adaptive.md"
grep -q "2 worker(s) of 1 or 2 thread(s) (intra-op adaptive)" "$dir/adaptive.md" ||
  { echo "bench --intra-op adaptive: unexpected header"; cat "$dir/adaptive.md"; exit 1; }
"$bin" bench --model "$model" --workload "$dir/w.jsonl" --policies ours-length-aware --no-progress --json \
  --threads 2 --intra-op adaptive > "$dir/adaptive.json"
python3 - "$dir/adaptive.json" <<'PY'
import json, sys
(r,) = json.load(open(sys.argv[1]))
assert r["requests"] == 24 and r["completed"] == 24 and r["requests_lost"] == 0, r
PY
if "$bin" bench --model "$model" --workload "$dir/w.jsonl" --intra-op adaptive --threads 2 --workers 3 \
  > "$dir/bad_workers.txt" 2>&1; then
  echo "--intra-op adaptive with --workers 3 of 2 cores was accepted"; exit 1
fi
grep -q "one worker per core (2): drop --workers 3" "$dir/bad_workers.txt"

# A limit above the model's is refused, naming both.
if "$bin" simulate --calibration "$dir/cal.json" --max-input-tokens 600 --requests 4 > "$dir/bad.txt" 2>&1; then
  echo "--max-input-tokens 600 was accepted for a 512-position model"; exit 1
fi
grep -q "max-input-tokens 600 is above the model's 512 positions" "$dir/bad.txt"
