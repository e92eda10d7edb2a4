#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs
# (scripts/setup.sh), builds with -Werror, runs every test with CTest, builds
# the model backend again against the PyPI torch wheel's libtorch and runs its
# tests, checks the lock annotations with clang, installs the core and runtime
# and builds a program against them, then builds the core and runtime again
# under ThreadSanitizer and under AddressSanitizer+UndefinedBehaviorSanitizer and
# runs their tests, and last builds the fuzz targets (scripts/fuzz.sh), replays
# their corpora and fuzzes each for FUZZ_SECONDS (30).
# Usage: bash scripts/test.sh            (JOBS=N to change build parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
export CTEST_OUTPUT_ON_FAILURE=1

bash scripts/setup.sh
if [ -f scripts/prepare_assets.sh ]; then bash scripts/prepare_assets.sh; fi

echo "== build (RelWithDebInfo, -Werror)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON
cmake --build build -j "$JOBS"
echo "== tests"
ctest --test-dir build -j "$JOBS"

echo "== the model backend against the PyPI torch wheel's libtorch (CUDA 13; what GPU machines build with)"
# The same sources against torch 2.x from build/venv (scripts/requirements.txt):
# the program and the model tests, run here on the CPU (scripts/gpu_check.sh runs
# them on a GPU).
torch_cmake="$(build/venv/bin/python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
cmake -S . -B build-pytorch -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON \
  -DTOKENBATCH_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$torch_cmake"
cmake --build build-pytorch -j "$JOBS" --target tokenbatch_cli hf_encoder_test
ctest --test-dir build-pytorch -j "$JOBS" \
  -R '^(MiniLmTest|BrokenDirectoryTest)\.|^hf_random_models_written$|^hf_parity_sentence_transformers$|^rerank_parity_cross_encoder$'

echo "== clang -Wthread-safety over every translation unit that takes a lock (lock annotations)"
python3 scripts/check_thread_safety.py build "$JOBS"

echo "== the core and runtime installed into a prefix, and a program built against them"
cmake -S . -B build-install -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOKENBATCH_WERROR=ON \
  -DTOKENBATCH_CORE_ONLY=ON -DTOKENBATCH_BUILD_TESTS=OFF
cmake --build build-install -j "$JOBS"
rm -rf build-install/prefix build-install/consumer
cmake --install build-install --prefix build-install/prefix
cmake -S tests/consumer -B build-install/consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build-install/prefix"
cmake --build build-install/consumer
build-install/consumer/consumer

for sanitizer in thread address; do
  echo "== core + runtime under sanitizer: $sanitizer"
  cmake -S . -B "build-$sanitizer" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON \
    -DTOKENBATCH_CORE_ONLY=ON -DTOKENBATCH_SANITIZER="$sanitizer"
  cmake --build "build-$sanitizer" -j "$JOBS"
  TSAN_OPTIONS="halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    ctest --test-dir "build-$sanitizer" -j "$JOBS"
done
echo "== fuzz targets (clang, ASan+UBSan): replay the corpora, then fuzz each for ${FUZZ_SECONDS:-30} s"
# All at once: the six share the machine's cores for the fuzzing time.
bash scripts/fuzz.sh --seconds "${FUZZ_SECONDS:-30}" --parallel
echo "== all tests passed"
