#!/usr/bin/env bash
# `tokenbatch calibrate` measures real peak memory in the program as shipped
# (linked with tcmalloc, whose freed pages stay resident unless released): every
# shape's peak is positive and grows with B x L. Usage: calibrate_peak_memory.sh
# TOKENBATCH_BINARY MODEL.pt
set -euo pipefail
bin="${1:?usage: calibrate_peak_memory.sh TOKENBATCH_BINARY MODEL.pt}"
model="${2:?usage: calibrate_peak_memory.sh TOKENBATCH_BINARY MODEL.pt}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$bin" calibrate --model "$model" --memory-limit 4GiB --grid 1,4,8:64,256 --max-input-tokens 256 --warmup 1 \
  --repeats 1 --threads 1 \
  --json "$out" >/dev/null || status=$?
# The peaks are this test's subject: calibrate may refuse to recommend from so
# small a grid (exit 1, the JSON still written), but nothing worse.
[ "${status:-0}" -le 1 ] || { echo "calibrate exited ${status}" >&2; exit 1; }
/usr/bin/python3 - "$out" <<'PY'
import json, sys
grid = {(g["batch_size"], g["seq_len"]): g["peak_bytes"] for g in json.load(open(sys.argv[1]))["grid"]}
print("peak bytes by (B, L):", grid)
assert all(v > 0 for v in grid.values()), f"a shape measured no memory growth: {grid}"
small, large = grid[(1, 64)], grid[(8, 256)]
# 32x the tokens (and 128x the attention scores): at least 8x the memory, and
# at least 16 MiB for the MiniLM-shaped model.
assert large >= 8 * small and large >= 16 << 20, f"peak does not grow with B x L: {grid}"
PY
