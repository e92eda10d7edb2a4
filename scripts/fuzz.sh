#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with AddressSanitizer and UBSan) in
# build-fuzz, replays each target's seed corpus (fuzz/corpus/<target>), then
# fuzzes each for a bounded time starting from it. Fails on any crash, leak,
# sanitizer report, broken invariant or hang; the input that caused it is saved
# in build-fuzz/artifacts/ (once the bug is fixed, add it to fuzz/regressions/<target>,
# which is replayed every run and never merged away).
# Usage: bash scripts/fuzz.sh [--seconds N] [--parallel] [--update-corpus] [--configure-only] [TARGET...]
#   --seconds N        fuzz each target N seconds after the replay (default 30; 0 = replay only)
#   --parallel         fuzz the targets at the same time (one process each) instead of in turn
#   --configure-only   configure build-fuzz and stop (scripts/test.sh builds and runs
#                      the AddressSanitizer+UBSan tests in it, on the same objects)
#   --update-corpus    first write the raw seeds (fuzz/make_seeds.py), then after
#                      fuzzing merge seeds, corpus and new finds (build-fuzz/work/<target>,
#                      kept from the last run that fuzzed) into a minimal
#                      fuzz/corpus/<target> (libFuzzer -merge=1)
# Runs after scripts/setup.sh (clang, the libraries) and scripts/prepare_assets.sh
# (the random model directories whose config files seed model_files_fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
seconds=30
update=0
parallel=0
configure_only=0
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --update-corpus) update=1; shift ;;
    --parallel) parallel=1; shift ;;
    --configure-only) configure_only=1; shift ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  targets=(request_body_fuzz http_fuzz tokenizer_json_fuzz tokenizer_encode_fuzz model_files_fuzz batcher_ops_fuzz)
fi

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOKENBATCH_WERROR=ON \
  -DTOKENBATCH_FUZZ=ON -DTOKENBATCH_WITH_TORCH=OFF -DTOKENBATCH_BUILD_BENCH=OFF \
  -DTOKENBATCH_COMPONENTS="tokenizer;backend;server" > /tmp/tokenbatch-fuzz-configure.$$.log 2>&1 ||
  { cat /tmp/tokenbatch-fuzz-configure.$$.log; exit 1; }
rm -f /tmp/tokenbatch-fuzz-configure.$$.log
((configure_only)) && exit 0
cmake --build build-fuzz -j "$JOBS" --target "${targets[@]}"

if ((update)); then
  rm -rf build-fuzz/seeds
  python3 fuzz/make_seeds.py build-fuzz/seeds build/hf_random_models
fi
mkdir -p build-fuzz/artifacts
# Leaks are checked (detect_leaks=1); a sanitizer report fails the run.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# Replays, fuzzes and (with --update-corpus) merges one target; output in
# build-fuzz/<target>.log. Returns non-zero on any finding.
fuzz_one() {
  local target="$1"
  local binary="build-fuzz/fuzz/$target" corpus="fuzz/corpus/$target" work="build-fuzz/work/$target"
  local log="build-fuzz/$target.log"
  mkdir -p "$corpus" "$work"
  # -timeout: one input running longer is a hang; -rss_limit_mb: a memory blow-up.
  local common=(-timeout=20 -rss_limit_mb=3072 -artifact_prefix="build-fuzz/artifacts/$target-" -print_final_stats=1)
  # The inputs of fixed bugs (fuzz/regressions/<target>) are replayed every
  # time and never merged away.
  local replay=("$corpus")
  [ -d "fuzz/regressions/$target" ] && replay+=("fuzz/regressions/$target")
  echo "== $target: replay $(find "${replay[@]}" -type f | wc -l) corpus and regression inputs"
  "$binary" "${common[@]}" -runs=0 "${replay[@]}" > "$log" 2>&1 || { tail -60 "$log"; return 1; }
  if ((seconds > 0)); then
    # New inputs go to the scratch folder; the repository's corpus is read only.
    rm -rf "$work" && mkdir -p "$work"
    local seeds=()
    ((update)) && seeds=("build-fuzz/seeds/$target")
    "$binary" "${common[@]}" -max_total_time="$seconds" "$work" "${replay[@]}" "${seeds[@]}" >> "$log" 2>&1 ||
      { tail -60 "$log"; return 1; }
    echo "== $target: fuzzed $seconds s"
    grep -E '^#[0-9]+[[:space:]]+DONE|stat::' "$log" | tail -6 || true
  fi
  if ((update)); then
    local merged="build-fuzz/merged/$target"
    rm -rf "$merged" && mkdir -p "$merged"
    "$binary" -merge=1 "$merged" "$corpus" "build-fuzz/seeds/$target" "$work" > "$log.merge" 2>&1 ||
      { tail -30 "$log.merge"; return 1; }
    # Swapped in only once the merge succeeded; the old corpus goes last.
    mv "$corpus" "$corpus.old" && mv "$merged" "$corpus" && rm -rf "$corpus.old" || return 1
    echo "== $target: corpus $(find "$corpus" -type f | wc -l) inputs"
  fi
}

if ((parallel)); then
  pids=()
  for target in "${targets[@]}"; do
    fuzz_one "$target" &
    pids+=($!)
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  ((failed == 0)) || exit 1
else
  for target in "${targets[@]}"; do fuzz_one "$target" || exit 1; done
fi
echo "== fuzzing: no crash, hang or sanitizer report"
