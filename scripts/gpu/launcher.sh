#!/bin/sh
# A program of the GPU bundle (scripts/gpu_bundle.sh): runs libexec/<this
# script's name> on the libtorch of the machine's own Python torch, which must
# be the version the bundle was built against (TORCH_VERSION).
# TOKENBATCH_TORCH_PYTHON names that Python (default: python3 on PATH).
set -eu
# The bundle is the folder above the real file (a symbolic link to this launcher
# from elsewhere still finds it).
bundle="$(dirname -- "$(dirname -- "$(readlink -f -- "$0")")")"
python="${TOKENBATCH_TORCH_PYTHON:-python3}"
want="$(cat "$bundle/TORCH_VERSION")"
# The C library: the carried libraries (libstdc++ among them) were built for
# this machine's, so an older one cannot load them.
need_glibc="$(cat "$bundle/GLIBC_VERSION")"
have_glibc="$(getconf GNU_LIBC_VERSION 2> /dev/null | sed 's/^glibc //')"
if [ -n "$have_glibc" ] &&
   [ "$(printf '%s\n%s\n' "$need_glibc" "$have_glibc" | sort -t. -k1,1n -k2,2n | head -1)" != "$need_glibc" ]; then
  echo "tokenbatch bundle: needs glibc $need_glibc or newer (what its carried libraries were built for); this machine has" \
       "$have_glibc: build the bundle on a machine with glibc $have_glibc or older" >&2
  exit 1
fi
# One marked line on stdout: what an import prints besides (warnings, on
# stderr or stdout) does not change it.
if ! found="$("$python" -c 'import os, torch; print("tokenbatch-torch", torch.__version__, os.path.dirname(torch.__file__))' 2> /dev/null)"; then
  echo "tokenbatch bundle: cannot import torch with $python (set TOKENBATCH_TORCH_PYTHON to a Python with torch $want):" >&2
  "$python" -c 'import torch' 2>&1 | tail -3 >&2 || true
  exit 1
fi
line="$(printf '%s\n' "$found" | grep '^tokenbatch-torch ' | tail -1)"
version="$(printf '%s\n' "$line" | cut -d' ' -f2)"
torch_dir="$(printf '%s\n' "$line" | cut -d' ' -f3-)"
if [ -z "$version" ]; then
  echo "tokenbatch bundle: $python imported torch but did not print its version and folder: $found" >&2
  exit 1
fi
if [ "$version" != "$want" ]; then
  echo "tokenbatch bundle: built against torch $want, but $python has torch $version ($torch_dir);" \
       "libtorch's C++ ABI differs between versions: run it with torch $want (TOKENBATCH_TORCH_PYTHON)," \
       "or rebuild the bundle (scripts/gpu_bundle.sh) with torch $version pinned" >&2
  exit 1
fi
libs="$torch_dir/lib"
for d in "$torch_dir"/../nvidia/*/lib; do
  if [ -d "$d" ]; then libs="$libs:$d"; fi
done
LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$bundle/libexec/$(basename -- "$(readlink -f -- "$0")")" "$@"
