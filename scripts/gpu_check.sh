#!/usr/bin/env bash
# The GPU checks of Hugging Face model directories (--model-id), for a machine
# with a CUDA GPU. Run it whenever one is at hand; it prints one summary line per
# check at the end and exits non-zero if any failed.
#
#   1. build    tokenbatch against the libtorch inside the PyPI torch wheel
#               (build/venv, scripts/requirements.txt: a CUDA 13 build of torch)
#   2. parity   tests/python/hf_parity.py on cuda:0, float32 and bfloat16: the real
#               all-MiniLM-L6-v2 and random BERT / XLM-R / Qwen3 directories,
#               against sentence-transformers on the same device and dtype
#   3. calibrate  `tokenbatch calibrate` of a Qwen3-Embedding-0.6B-shaped model
#               (random weights) with the CUDA allocator capped at 24 GB
#   4. oom      `tokenbatch bench` on the long-tailed mix under the same cap:
#               count-based batches of 32 hit a real CUDA OOM, the calibrated
#               token budget none
#
# On a machine without a CUDA GPU it says so and exits 77 at once (the
# conventional "skipped" status: nothing was checked).
# Environment: JOBS (build jobs, default all cores), OUT (work folder, default
# build/gpu_check), GPU_MEMORY_LIMIT (default 24GB).
set -uo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
  echo "gpu_check: no CUDA GPU on this machine (nvidia-smi lists none); nothing was checked"
  exit 77
fi
JOBS="${JOBS:-$(nproc)}"
OUT="${OUT:-build/gpu_check}"
LIMIT="${GPU_MEMORY_LIMIT:-24GB}"
PY=build/venv/bin/python
BIN=build-cuda/src/cli/tokenbatch
mkdir -p "$OUT"
summary=()
failed=0
record() {  # record NAME STATUS DETAIL
  summary+=("$(printf '%-10s %-4s %s' "$1" "$2" "$3")")
  [ "$2" = ok ] || failed=1
}

# 1. Build against the wheel's libtorch (the same venv the parity tests use).
if bash scripts/setup.sh && bash scripts/prepare_assets.sh; then
  torch_cmake="$("$PY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
  torch_version="$("$PY" -c 'import torch; print(torch.__version__)')"
  # The GPU's architecture, so that configuring needs no GPU probe of its own.
  arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' ')"
  if cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTORCH_CUDA_ARCH_LIST="$arch" \
       -DTOKENBATCH_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$torch_cmake" > "$OUT/configure.log" 2>&1 &&
     cmake --build build-cuda -j "$JOBS" --target tokenbatch_cli hf_encoder_test > "$OUT/build.log" 2>&1; then
    record build ok "tokenbatch against torch $torch_version (sm_${arch/./}), logs in $OUT"
  else
    record build FAIL "see $OUT/configure.log and $OUT/build.log"
  fi
else
  record build FAIL "scripts/setup.sh or scripts/prepare_assets.sh failed"
fi

if [ -x "$BIN" ]; then
  # 2. Parity on cuda:0 in float32 and bfloat16.
  "$PY" tests/python/make_hf_models.py "$OUT/models" data/tokenizers bert xlm-roberta qwen3 qwen3-0.6b \
    > "$OUT/models.log" 2>&1 || record models FAIL "tests/python/make_hf_models.py: see $OUT/models.log"
  dirs=(build/cache/models/all-MiniLM-L6-v2 "$OUT/models/bert" "$OUT/models/xlm-roberta" "$OUT/models/qwen3")
  for dtype in float32 bfloat16; do
    if [ "$dtype" = float32 ]; then bounds=(); else bounds=(--min-cosine 0.995 --max-diff 0.05); fi
    if "$PY" tests/python/hf_parity.py --device cuda:0 --dtype "$dtype" "${bounds[@]}" "$BIN" "${dirs[@]}" \
         > "$OUT/parity-$dtype.log" 2>&1; then
      record "parity" ok "cuda:0 $dtype: $(grep -c 'min cosine' "$OUT/parity-$dtype.log") model/layout runs within bounds"
    else
      record "parity" FAIL "cuda:0 $dtype: $(grep -m1 AssertionError "$OUT/parity-$dtype.log" || echo "see $OUT/parity-$dtype.log")"
    fi
  done

  # 3. Calibrate the 0.6B model with the allocator capped.
  model="$OUT/models/qwen3-0.6b"
  if "$BIN" calibrate --model-id "$model" --device cuda:0 --cuda-memory-limit "$LIMIT" --memory-limit "$LIMIT" \
       --grid 1,2,4,8,16,32:128,512,1024,2048,4096,8192 --max-shape-tokens 262144 --max-input-tokens 8192 \
       --json "$OUT/calibration.json" > "$OUT/calibrate.log" 2>&1; then
    budget="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["recommended_max_batch_tokens"]["padded"])' \
              "$OUT/calibration.json")"
    record calibrate ok "cap $LIMIT: recommended padded max_batch_tokens $budget ($OUT/calibration.json)"
  else
    budget=""
    record calibrate FAIL "see $OUT/calibrate.log"
  fi

  # 4. Count-based batches of 32 against the calibrated budget, same cap.
  if [ -n "$budget" ]; then
    if "$BIN" bench --model-id "$model" --device cuda:0 --cuda-memory-limit "$LIMIT" --mix long_tailed \
         --requests 256 --max-positions 8192 --policies fixed-32,ours-length-aware --max-batch-tokens "$budget" \
         --json > "$OUT/bench.json" 2> "$OUT/bench.log"; then
      line="$("$PY" - "$OUT/bench.json" <<'PY'
import json, sys
rows = {r["policy"]: r for r in json.load(open(sys.argv[1]))}
fixed, ours = rows["fixed-32"]["oom_events"], rows["ours-length-aware"]["oom_events"]
print(("ok" if fixed > 0 and ours == 0 else "FAIL") +
      f" fixed-32: {fixed} CUDA OOM events; calibrated budget: {ours} (expected > 0 and 0)")
PY
)"
      record oom "${line%% *}" "${line#* }"
    else
      record oom FAIL "bench failed: see $OUT/bench.log"
    fi
  else
    record oom FAIL "no calibrated budget to compare against"
  fi
fi

echo
echo "gpu_check summary ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
