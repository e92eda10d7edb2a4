#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs
# (scripts/setup.sh), builds with -Werror, runs every test with CTest, then
# builds the core and runtime again under ThreadSanitizer and under
# AddressSanitizer+UndefinedBehaviorSanitizer and runs their tests.
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

echo "== clang -Wthread-safety over the runtime (lock annotations)"
for tu in src/runtime/batcher_test.cc src/runtime/batcher_stress_test.cc; do
  clang++ -std=c++20 -fsyntax-only -Wthread-safety -Werror -Iinclude -I. "$tu"
done

for sanitizer in thread address; do
  echo "== core + runtime under sanitizer: $sanitizer"
  cmake -S . -B "build-$sanitizer" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON \
    -DTOKENBATCH_CORE_ONLY=ON -DTOKENBATCH_SANITIZER="$sanitizer"
  cmake --build "build-$sanitizer" -j "$JOBS"
  TSAN_OPTIONS="halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    ctest --test-dir "build-$sanitizer" -j "$JOBS"
done
echo "== all tests passed"
