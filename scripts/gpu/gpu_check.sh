#!/usr/bin/env bash
# The GPU checks, run from the GPU bundle (scripts/gpu_bundle.sh builds it; it
# is copied to the bundle's root). Needs only the machine's own Python with the
# torch version the bundle was built against, transformers and
# sentence-transformers: no build tools, no package registry, no network.
#
#   bash build/gpu-bundle/gpu_check.sh            on a machine with a CUDA GPU
#   bash build/gpu-bundle/gpu_check.sh --cpu DIR  the bundle's CPU part, on the
#       model directory DIR (the real all-MiniLM-L6-v2): what the test suite runs
#       in a stripped environment (tests/gpu_bundle/stripped_environment.sh)
#
# Checks, in order (docs/gpu.md says what each measures):
#   kernels     bin/attention_test: the private attention operators' schemas on
#               this torch, and the fused kernels against the eager ones
#   libraries   the libraries a serving process maps: only the bundle's, torch's
#               (and its nvidia-* wheels'), the C library's and the GPU driver's
#   models      random-weight directories written with this machine's transformers:
#               small BERT / XLM-R / Qwen3, and BERT-base, XLM-R-base and
#               Qwen3-Embedding-0.6B shapes
#   parity      tests/python/hf_parity.py against this machine's sentence-transformers,
#               float32 and bfloat16, both layouts, fused and eager attention
#   calibrate   `tokenbatch calibrate` of the 0.6B model (padded, eager attention:
#               the L^2 scores count batching pays) under a GPU_MEMORY_LIMIT cap
#   oom         the long-tailed mix: count-based batches of 32 must hit a real CUDA
#               OOM, the calibrated token budget none
#   memory      each batch's peak device memory under the budget, against the cap
#   simulator   `tokenbatch simulate` on the calibration and the same requests:
#               its predicted throughput and OOMs against the measured run
#   throughput  tokenbatch (packed, fused attention, bfloat16) against
#               sentence-transformers' encode on the same texts, GPU and dtype
# It prints one summary line per check, writes OUT/gpu_check.json, and exits
# non-zero if any check failed; 77 (nothing checked) without a CUDA GPU.
# Environment: OUT (work folder, default ./gpu_check_out; its files are removed at
# the start, its model directories kept), GPU_MEMORY_LIMIT
# (default 24GB), TOKENBATCH_TORCH_PYTHON (default python3).
set -uo pipefail
BUNDLE="$(dirname -- "$(readlink -f -- "$0")")"
export TOKENBATCH_TORCH_PYTHON="${TOKENBATCH_TORCH_PYTHON:-python3}"
PY="$TOKENBATCH_TORCH_PYTHON"
BIN="$BUNDLE/bin/tokenbatch"
TESTS="$BUNDLE/tests/python"
LIMIT="${GPU_MEMORY_LIMIT:-24GB}"
MODE=gpu
if [ "${1:-}" = "--cpu" ]; then
  MODE=cpu
  CPU_MODEL="${2:?--cpu needs a model directory}"
elif ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
  echo "gpu_check: no CUDA GPU on this machine (nvidia-smi lists none); nothing was checked"
  exit 77
fi
mkdir -p "${OUT:-gpu_check_out}"
OUT="$(readlink -f -- "${OUT:-gpu_check_out}")"
# Nothing of an earlier run may pass for this one's: its files go (the model
# directories stay, and are rewritten only when their stamp differs).
find "$OUT" -maxdepth 1 -type f -delete
DEVICE=cuda:0
[ "$MODE" = cpu ] && DEVICE=cpu
RECORDS="$OUT/records.jsonl"
: > "$RECORDS"
failed=0
record() {  # record NAME STATUS DETAIL [FIGURES_JSON_FILE]
  printf '%-15s %-4s %s\n' "$1" "$2" "$3" >> "$OUT/summary.txt"
  "$PY" "$TESTS/summary.py" record "$RECORDS" "$1" "$2" "$3" "${4:-}"
  [ "$2" = ok ] || failed=1
}
# Runs a check's command with its log; records ok (DETAIL) or FAIL (the log).
run_check() {  # run_check NAME DETAIL LOG COMMAND...
  local name="$1" detail="$2" log="$3"
  shift 3
  if "$@" > "$log" 2>&1; then
    record "$name" ok "$detail"
  else
    # The last line: a Python traceback's exception, or the program's error.
    record "$name" FAIL "$(grep -v '^\s*$' "$log" | tail -1) (log: $log)"
  fi
}
# Runs a check whose command prints its verdict as its last line, "ok DETAIL"
# or "FAIL DETAIL", and writes its figures to OUT/NAME.json.
run_verdict() {  # run_verdict NAME LOG COMMAND...
  local name="$1" log="$2" line
  shift 2
  "$@" > "$log" 2>&1
  line="$(tail -1 "$log")"
  case "$line" in
    "ok "* | "FAIL "*) record "$name" "${line%% *}" "${line#* }" "$OUT/$name.json" ;;
    *) record "$name" FAIL "$line (log: $log)" ;;
  esac
}
: > "$OUT/summary.txt"
started=$(date +%s)

run_check kernels "golden private-operator schemas; sdpa = eager on the CPU" "$OUT/kernels.log" \
  "$BUNDLE/bin/attention_test"

# 1. Models.
export TOKENBATCH_TOKENIZER_ROOT="$OUT/tokenizer-root"
if [ "$MODE" = gpu ]; then
  mkdir -p "$TOKENBATCH_TOKENIZER_ROOT/build/cache/tokenizers/multilingual-e5-small"
  gzip -dc "$BUNDLE/data/multilingual-e5-small-tokenizer.json.gz" \
    > "$TOKENBATCH_TOKENIZER_ROOT/build/cache/tokenizers/multilingual-e5-small/tokenizer.json"
  run_check models "bert xlm-roberta qwen3, bert-base xlm-roberta-base qwen3-0.6b (random weights)" \
    "$OUT/models.log" "$PY" "$TESTS/make_hf_models.py" "$OUT/models" "$BUNDLE/data/tokenizers" \
    bert xlm-roberta qwen3 bert-base xlm-roberta-base qwen3-0.6b
  dirs=("$OUT/models/bert" "$OUT/models/xlm-roberta" "$OUT/models/qwen3" "$OUT/models/bert-base"
        "$OUT/models/xlm-roberta-base" "$OUT/models/qwen3-0.6b")
else
  dirs=("$CPU_MODEL")
fi
run_check libraries "a serving process maps only the bundle's, torch's, libc's and the driver's libraries" \
  "$OUT/libraries.log" "$PY" "$TESTS/bundle_libraries.py" "$BIN" "${dirs[0]}" --device "$DEVICE"

# 2. Parity on the device, both dtypes; the kernels /info must name.
for dtype in float32 bfloat16; do
  [ "$MODE" = cpu ] && [ "$dtype" = bfloat16 ] && continue
  bounds=()
  [ "$dtype" = bfloat16 ] && bounds=(--min-cosine 0.995 --max-diff 0.05 --min-kernel-cosine 0.995 --max-kernel-diff 0.05)
  if [ "$MODE" = gpu ]; then
    packed_kernel=$([ "$dtype" = float32 ] && echo efficient_varlen || echo flash_varlen)
  else
    packed_kernel=sdpa
  fi
  run_check "parity-$dtype" "$DEVICE $dtype, ${#dirs[@]} models x 2 layouts, packed $packed_kernel, padded sdpa, each also eager" \
    "$OUT/parity-$dtype.log" "$PY" "$TESTS/hf_parity.py" --device "$DEVICE" --dtype "$dtype" "${bounds[@]}" \
    --expect-packed-attention "$packed_kernel" --expect-padded-attention sdpa "$BIN" "${dirs[@]}"
done

# 3. Calibrate: the CPU part on a small grid of the model given; on the GPU the
# 0.6B model padded with eager attention (the memory count batching pays),
# the allocator capped.
# On the CPU the latency fit's quality is the machine's load: a recommendation
# and a refusal with its reason are both right (summary.py calibrated).
if [ "$MODE" = cpu ]; then
  "$BIN" calibrate --model-id "$CPU_MODEL" --memory-limit 8GB --grid 1,8,32:32,128,256 --repeats 1 \
    --json "$OUT/calibration.json" > "$OUT/calibrate.log" 2>&1
  run_verdict calibrate "$OUT/calibrate-verdict.log" \
    "$PY" "$TESTS/summary.py" calibrated "$OUT/calibration.json" "$?" "$OUT/calibrate.log" "$OUT/calibrate.json"
else
  model="$OUT/models/qwen3-0.6b"
  common=(--model-id "$model" --device cuda:0 --cuda-memory-limit "$LIMIT" --execution padded
          --attn-implementation eager --max-input-tokens 8192)
  budget=""
  if "$BIN" calibrate "${common[@]}" --memory-limit "$LIMIT" --grid 1,2,4,8,16,32:128,512,1024,2048,4096,8192 \
       --max-shape-tokens 262144 --repeats 2 --json "$OUT/calibration.json" > "$OUT/calibrate.log" 2>&1 &&
     budget="$("$PY" "$TESTS/summary.py" budget "$OUT/calibration.json" "$OUT/calibrate.json" 2>> "$OUT/calibrate.log")"; then
    record calibrate ok "qwen3-0.6b padded eager, cap $LIMIT: recommended padded budget $budget ($OUT/calibration.json)" \
      "$OUT/calibrate.json"
  else
    budget=""
    record calibrate FAIL "$(grep -v '^\s*$' "$OUT/calibrate.log" | tail -1) (log: $OUT/calibrate.log)"
  fi

  # 4-6. The long-tailed mix under the cap: count batches of 32 against the
  # calibrated budget (one worker, so each batch's own peak is read), then the
  # simulator on the same requests and calibration.
  if [ -n "$budget" ] &&
     "$BIN" bench "${common[@]}" --mix long_tailed --requests 256 --policies fixed-32,ours-length-aware \
       --max-batch-tokens "$budget" --save-workload "$OUT/workload.jsonl" --save-batches "$OUT/bench-batches.jsonl" \
       --no-progress --json > "$OUT/bench.json" 2> "$OUT/bench.log"; then
    run_verdict oom "$OUT/oom.log" "$PY" "$TESTS/summary.py" oom "$OUT/bench.json" "$OUT/oom.json"
    run_verdict memory "$OUT/memory.log" "$PY" "$TESTS/summary.py" memory "$OUT/bench-batches.jsonl" "$LIMIT" \
      "$OUT/memory.json"
    if "$BIN" simulate --calibration "$OUT/calibration.json" --workload "$OUT/workload.jsonl" \
         --policies fixed-32,ours-length-aware --max-batch-tokens "$budget" --no-progress --json \
         > "$OUT/simulate.json" 2> "$OUT/simulate.log"; then
      run_verdict simulator "$OUT/simulator.log" "$PY" "$TESTS/summary.py" simulator "$OUT/bench.json" \
        "$OUT/simulate.json" "$OUT/simulator.json"
    else
      record simulator FAIL "simulate failed (log: $OUT/simulate.log)"
    fi
  else
    for name in oom memory simulator; do
      record "$name" FAIL "not run: no calibrated budget, or bench failed (logs: $OUT/calibrate.log, $OUT/bench.log)"
    done
  fi

  # 7. Throughput against sentence-transformers, same texts, GPU and dtype.
  if [ -s "$OUT/workload.jsonl" ]; then
    run_verdict throughput "$OUT/throughput.log" "$PY" "$TESTS/throughput.py" "$BIN" "$model" "$OUT/workload.jsonl" \
      --device cuda:0 --dtype bfloat16 --json "$OUT/throughput.json"
  else
    record throughput FAIL "no workload to run (the bench above failed)"
  fi
fi

elapsed=$(( $(date +%s) - started ))
device_name="cpu"
[ "$MODE" = gpu ] && device_name="$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"
"$PY" "$TESTS/summary.py" report "$RECORDS" "$OUT/gpu_check.json" "$device_name" "$(cat "$BUNDLE/TORCH_VERSION")" \
  "$elapsed"
echo
echo "gpu_check summary ($device_name, torch $(cat "$BUNDLE/TORCH_VERSION"), ${elapsed} s; $OUT/gpu_check.json):"
sed 's/^/  /' "$OUT/summary.txt"
exit "$failed"
