#!/usr/bin/env bash
# The GPU bundle needs nothing but itself and a torch of the pinned version
# (docs/gpu.md). Runs the bundle's CPU part (gpu_check.sh --cpu: the kernels'
# test, the libraries a serving process maps, parity of `serve` on the real
# all-MiniLM-L6-v2 against sentence-transformers with fused and eager attention,
# calibrate) under `env -i`: no LD_LIBRARY_PATH, no build tree on any path, only
# PATH=/usr/bin:/bin and the Python whose torch the bundle runs on. Then checks
# that every program's run path is $ORIGIN alone, and that a torch of another
# version, and an older C library than the carried libraries need, are refused
# with a message naming both versions.
# Usage: bash tests/gpu_bundle/stripped_environment.sh   (after scripts/gpu_bundle.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUNDLE="$PWD/build/gpu-bundle"
PY="$PWD/build/venv/bin/python"
MODEL="$PWD/build/cache/models/all-MiniLM-L6-v2"
OUT="$PWD/build/gpu-bundle-cpu-check"
rm -rf "$OUT"
mkdir -p "$OUT/home"

for f in "$BUNDLE"/libexec/*; do
  paths="$(readelf -d "$f" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\1 \2/p')"
  if [ "$paths" != 'RPATH $ORIGIN' ]; then
    echo "stripped_environment: $f has run path '$paths', expected RPATH \$ORIGIN only" >&2
    exit 1
  fi
done

env -i PATH=/usr/bin:/bin HOME="$OUT/home" HF_HUB_OFFLINE=1 TOKENBATCH_TORCH_PYTHON="$PY" OUT="$OUT" \
  bash "$BUNDLE/gpu_check.sh" --cpu "$MODEL"

# Another torch: a Python that reports another version.
cat > "$OUT/other-torch-python" <<'PY'
#!/bin/sh
echo "a warning printed while importing"
echo tokenbatch-torch 2.99.0+cpu /nonexistent/torch
PY
chmod +x "$OUT/other-torch-python"
if message="$(env -i PATH=/usr/bin:/bin TOKENBATCH_TORCH_PYTHON="$OUT/other-torch-python" \
                "$BUNDLE/bin/tokenbatch" --help 2>&1)"; then
  echo "stripped_environment: the bundle ran on torch 2.99.0" >&2
  exit 1
fi
want="$(cat "$BUNDLE/TORCH_VERSION")"
case "$message" in
  *"built against torch $want, but"*"has torch 2.99.0+cpu"*) ;;
  *) echo "stripped_environment: unexpected refusal of another torch: $message" >&2; exit 1 ;;
esac

# An older C library than the carried libraries were built for (getconf says 2.17).
mkdir -p "$OUT/old-glibc"
printf '#!/bin/sh\necho glibc 2.17\n' > "$OUT/old-glibc/getconf"
chmod +x "$OUT/old-glibc/getconf"
if message="$(env -i PATH="$OUT/old-glibc:/usr/bin:/bin" TOKENBATCH_TORCH_PYTHON="$PY" "$BUNDLE/bin/tokenbatch" --help 2>&1)"; then
  echo "stripped_environment: the bundle ran on glibc 2.17" >&2
  exit 1
fi
case "$message" in
  *"needs glibc $(cat "$BUNDLE/GLIBC_VERSION") or newer"*"this machine has 2.17"*) ;;
  *) echo "stripped_environment: unexpected refusal of glibc 2.17: $message" >&2; exit 1 ;;
esac
echo "stripped_environment: the bundle ran on itself and torch $want alone, and refused torch 2.99.0 and glibc 2.17"
