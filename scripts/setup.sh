#!/usr/bin/env bash
# Installs every Debian package the build, tests, benchmarks and tools need, then
# the project's Python environment (build/venv, pinned PyPI packages for tests,
# reference implementations and the main job's libtorch: scripts/setup_python.sh). The product's tokenizers are
# committed (data/tokenizers). Idempotent: when everything
# is already installed it only runs dpkg-query and compares one file (well under a
# second).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  # toolchain; ccache in front of the compiler of every configuration (CMakeLists.txt)
  build-essential cmake ninja-build pkg-config clang ccache
  # libFuzzer and clang's sanitizer runtimes for the fuzz targets (scripts/fuzz.sh):
  # only recommended by clang, so not pulled in with --no-install-recommends
  libclang-rt-14-dev
  # core + runtime
  libabsl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  # command line, JSON, logging
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  # request bodies: simdjson, about 3x faster than nlohmann with our checks
  libsimdjson-dev
  # HTTP server; tcmalloc (gperftools) as its allocator: glibc malloc's
  # non-thread-cached path for the reply-sized buffers cost ~25% of the server's
  # throughput (docs/benchmarks.md), and PyTorch recommends it for CPU inference
  libboost-dev libboost-system-dev wrk libgoogle-perftools-dev
  # the API key's constant-time comparison (OpenSSL's CRYPTO_memcmp, over SHA-256)
  libssl-dev
  # shortest round-trip float32 digits for JSON embeddings (the algorithm fmt uses,
  # without fmt's general writer around it)
  libdragonbox-dev
  # tokenizers: Unicode regex (Oniguruma, as Hugging Face uses) and normalisation;
  # the Unicode Character Database's DerivedAge.txt, which the differential
  # tokenizer fuzzer reads (scripts/tokenizer/fuzz_unicode_versions.py)
  libonig-dev libutf8proc-dev unicode-data
  # inference backend: libtorch 1.13 with an optimised BLAS (about 40x faster than without)
  libtorch-dev libopenblas0-pthread python3-torch
  # real text for workloads (Chinese technical passages: manpages-zh, read with
  # zlib), and plots
  fortunes fortunes-min fortunes-zh manpages-zh zlib1g-dev gnuplot-nox
  # the project's Python environment for tests and reference implementations
  # (build/venv, from PyPI: scripts/setup_python.sh), and Python's headers for
  # the Python package's extension modules (pyproject.toml, src/python)
  python3 python3-venv python3-pip python3-dev
  # the GPU bundle (scripts/gpu_bundle.sh): the copied libraries' and programs'
  # run paths set to $ORIGIN
  patchelf
  # the load balancers the scale-out test runs in front of replicas
  # (tests/lb/loopback_balancers.py, deploy/haproxy.cfg, deploy/nginx.conf)
  haproxy nginx-light
)

# One dpkg-query for all packages; a package it does not know is missing too.
declare -A installed=()
while read -r name status; do
  [ "$status" = "install ok installed" ] && installed[$name]=1
done < <(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)
missing=()
for p in "${PACKAGES[@]}"; do
  [ -n "${installed[$p]:-}" ] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  # apt keeps every downloaded package file in /var/cache/apt/archives; nothing
  # reads them again, and libtorch's make them GiB that the builds need.
  $SUDO apt-get clean
fi

# Slim Debian images exclude /usr/share/man from every package (a dpkg
# path-exclude), which would leave manpages-zh installed but empty; the workload
# reads its pages from /usr/share/man/zh_CN, so put them there from the package.
if [ ! -e /usr/share/man/zh_CN/man1/bash.1.gz ]; then
  echo "setup: /usr/share/man is excluded by dpkg here; unpacking manpages-zh's pages"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -q manpages-zh && dpkg-deb -x manpages-zh_*.deb root)
  $SUDO mkdir -p /usr/share/man
  $SUDO cp -r "$tmp/root/usr/share/man/zh_CN" /usr/share/man/
  rm -rf "$tmp"
fi

# build/venv from scripts/requirements.txt (PyPI, pinned): the tests' reference
# implementations and clients, and the torch wheel whose libtorch the main job's
# program is built against by default (scripts/build_pytorch.sh).
# TOKENBATCH_SETUP_PYTHON=0 skips it (scripts/main.sh on Debian's libtorch).
if [ "${TOKENBATCH_SETUP_PYTHON:-1}" != 0 ]; then
  bash scripts/setup_python.sh
fi
