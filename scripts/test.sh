#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs
# (scripts/setup.sh), builds with -Werror, runs every test with CTest, builds
# the model backend again against the PyPI torch wheel's libtorch, runs its
# tests and packs the GPU bundle and runs its CPU part in a stripped
# environment, builds and installs the Python package and runs its tests, checks the lock annotations with clang, installs the core and runtime
# from the main build and builds a program against them, builds the core and
# runtime under ThreadSanitizer and runs their tests, builds the fuzz targets
# and the AddressSanitizer+UBSan tests in one clang configuration (the same
# instrumented objects) and runs those tests, replays the fuzz corpora and
# fuzzes each target for FUZZ_SECONDS (30), and last checks that a new clone
# would compile almost nothing (scripts/check_ccache_reuse.sh).
#
# Every configuration compiles through ccache (CMakeLists.txt: TOKENBATCH_CCACHE),
# into ~/.cache/tokenbatch/ccache (the environment's TOKENBATCH_CCACHE_DIR moves it). At the end
# it prints each stage's wall time (scripts/test_stages.sh), also written to
# build/test-stages.txt.
# Usage: bash scripts/test.sh            (JOBS=N to change build parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
export CTEST_OUTPUT_ON_FAILURE=1
export TOKENBATCH_CCACHE_DIR="${TOKENBATCH_CCACHE_DIR:-$HOME/.cache/tokenbatch/ccache}"
mkdir -p build
source scripts/test_stages.sh
trap print_test_stages EXIT

# The main configuration; scripts/check_ccache_reuse.sh configures a new clone
# with the same arguments.
MAIN_CONFIG=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON)

setup() {
  bash scripts/setup.sh
  bash scripts/prepare_assets.sh
  # The size limit (CMakeLists.txt's TOKENBATCH_CCACHE_MAXSIZE), kept in the cache
  # folder itself, so that every compile through it (the builds, the thread-safety
  # check, the consumer) cleans up to it.
  mkdir -p "$TOKENBATCH_CCACHE_DIR"
  CCACHE_DIR="$TOKENBATCH_CCACHE_DIR" ccache --max-size 2G > /dev/null
}

main_build() {
  cmake -S . -B build "${MAIN_CONFIG[@]}"
  cmake --build build -j "$JOBS"
}

# The same sources against torch 2.x from build/venv (scripts/requirements.txt
# pins the GPU machine's version): scripts/gpu_bundle.sh builds the program and
# the model tests into build-pytorch and packs the GPU bundle; the model tests
# (the fused attention kernels among them) run here on the CPU, then the
# bundle's CPU part in a stripped environment (tests/gpu_bundle). Only the files
# that see libtorch's headers differ from the main build's; the rest come from
# ccache. scripts/gpu/gpu_check.sh, in the bundle, runs the GPU part (docs/gpu.md).
pytorch_build_and_tests() {
  JOBS="$JOBS" bash scripts/gpu_bundle.sh
  # The wheel's side of the OpenMP thread tests (the main build checks Debian's).
  JOBS="$JOBS" bash scripts/build_pytorch.sh forward_threads_test
  ctest --test-dir build-pytorch -j "$JOBS" \
    -R '^(MiniLmTest|LoadThreadsTest|ForwardThreadsTest|BrokenDirectoryTest|AttentionKernelTest|LowPrecisionTest|LowPrecision)\.|^Kernels/FusedAgreesWithEager\.|^hf_random_models_written$|^hf_parity_sentence_transformers$|^rerank_parity_cross_encoder$'
  bash tests/gpu_bundle/stripped_environment.sh
}

# The Python package (pyproject.toml) into build/venv, built by pip with the
# venv's torch (so Embedder and Reranker are built, on the libtorch the
# previous stage compiled against: ccache gives this build its objects), then
# its pytest suite (python/tests).
# The main build's compiler by the same name: pip's build picks Python's own
# (x86_64-linux-gnu-g++), and ccache keys on the name it is called by.
python_package() {
  local compiler
  compiler="$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)"
  build/venv/bin/pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps \
    --config-settings=cmake.define.TOKENBATCH_WERROR=ON --config-settings=cmake.define.CMAKE_CXX_COMPILER="$compiler" .
  build/venv/bin/python -m pytest -q -p no:cacheprovider python/tests
}

# The install is taken from the main build, which compiled the core and runtime
# already. The core-only Release configuration without tests (what a user
# installing the library configures: no GoogleTest or rapidcheck) still builds
# its two libraries, with -Werror at -O3, where other warnings can appear; that
# tree installs nothing.
install_and_consumer() {
  cmake -S . -B build-install -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOKENBATCH_WERROR=ON \
    -DTOKENBATCH_CORE_ONLY=ON -DTOKENBATCH_BUILD_TESTS=OFF > /dev/null
  cmake --build build-install -j "$JOBS"
  rm -rf build/install-prefix build/consumer
  cmake --install build --prefix build/install-prefix
  local launcher=()
  command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S tests/consumer -B build/consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build/install-prefix" "${launcher[@]}"
  CCACHE_DIR="$TOKENBATCH_CCACHE_DIR" CCACHE_BASEDIR="$PWD" cmake --build build/consumer
  build/consumer/consumer
}

thread_sanitizer() {
  cmake -S . -B build-thread -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON \
    -DTOKENBATCH_CORE_ONLY=ON -DTOKENBATCH_SANITIZER=thread
  cmake --build build-thread -j "$JOBS"
  TSAN_OPTIONS="halt_on_error=1" ctest --test-dir build-thread -j "$JOBS"
}

# AddressSanitizer+UBSan tests in the fuzz targets' configuration (clang, ASan,
# UBSan, coverage instrumentation): the core, runtime and tokenizer objects are
# built once for both. The tests are those of the core-only sanitizer build:
# the core, the runtime, the test helpers, and the tokenizer's SentencePiece and
# bad-input test.
address_sanitizer() {
  bash scripts/fuzz.sh --configure-only
  cmake --build build-fuzz -j "$JOBS" --target core_test core_property_test runtime_test sentencepiece_test testing_helpers_test
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" ctest --test-dir build-fuzz -j "$JOBS" \
    -L '^(core_test|core_property_test|runtime_test|sentencepiece_test|testing_helpers_test)$'
}

stage "setup: Debian packages, Python environment, models and tokenizers" setup
stage "main build (RelWithDebInfo, -Werror)" main_build
stage "main tests" ctest --test-dir build -j "$JOBS"
stage "model backend against the PyPI torch wheel's libtorch: build, tests, the GPU bundle in a stripped environment" \
  pytorch_build_and_tests
stage "Python package: pip install (scikit-build-core, nanobind) and its pytest suite" python_package
stage "clang -Wthread-safety over every translation unit that takes a lock" \
  python3 scripts/check_thread_safety.py build "$JOBS"
stage "core and runtime: Release build, installed from the main build, a program built against them" \
  install_and_consumer
stage "core and runtime under ThreadSanitizer: build and tests" thread_sanitizer
stage "AddressSanitizer+UBSan tests (clang, shared with the fuzz targets): build and tests" address_sanitizer
# All at once: the six share the machine's cores for the fuzzing time.
stage "fuzz targets: build, replay the corpora, fuzz each ${FUZZ_SECONDS} s" \
  bash scripts/fuzz.sh --seconds "$FUZZ_SECONDS" --parallel
stage "a new clone compiles almost nothing (ccache)" bash scripts/check_ccache_reuse.sh "${MAIN_CONFIG[@]}"
echo "== all tests passed"
