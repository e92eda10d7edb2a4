#!/usr/bin/env bash
# A new clone compiles almost nothing: copies this working tree (its tracked and
# untracked, not ignored, files) into a new folder, configures it with the given
# CMake arguments, compiles every object file there (no linking) through ccache,
# and fails when more compilations missed the cache than the files that hold the
# clone's own paths: src/testing/build_paths.cc.in, src/cli/default_paths.cc.in
# and the server test's serve_binary_path.cc (src/testing/build_paths.h says why
# they are apart). Run it after a build of the same configuration has filled the
# cache, as scripts/test.sh does; the copy is removed afterwards.
# Usage: bash scripts/check_ccache_reuse.sh CMAKE_ARG...   (JOBS=N for parallelism)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
MAX_MISSES=3

work="$PWD/build/ccache-reuse"
rm -rf "$work"
mkdir -p "$work/clone"
trap 'rm -rf "$work"' EXIT
git ls-files -z --cached --others --exclude-standard |
  tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$work/clone"

# The clone's own folder, depth and build folder differ from this tree's; the
# shared tokenizer data stays the one this tree's tests read.
shared="$(cd "${TOKENBATCH_TEST_TOKENIZERS:-../shared/data/tokenizers}" 2>/dev/null && pwd || true)"
cmake -S "$work/clone" -B "$work/clone/build" "$@" ${shared:+-DTOKENBATCH_TEST_TOKENIZERS="$shared"} \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
grep -q "^-- ccache: " "$work/configure.log" ||
  { echo "check_ccache_reuse: the configuration does not compile through ccache"; cat "$work/configure.log"; exit 1; }

mapfile -t objects < <(ninja -C "$work/clone/build" -t targets all | sed -n 's/^\(.*\.o\): .*/\1/p')
# Every compilation appends its outcome to this log (ccache's stats_log): a
# "# SOURCE" line, then counters such as cache_miss or direct_cache_hit.
export CCACHE_STATSLOG="$work/stats.log"
ninja -C "$work/clone/build" -j "$JOBS" "${objects[@]}" > "$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; exit 1; }

missed="$(awk '/^# / { file = $2 } /^cache_miss$/ { print file }' "$CCACHE_STATSLOG" | sort)"
misses=$(grep -c . <<< "$missed" || true)
hits=$(grep -cE '^(direct|preprocessed)_cache_hit$' "$CCACHE_STATSLOG" || true)
echo "check_ccache_reuse: ${#objects[@]} object files in a new clone: $hits from the cache, $misses compiled" \
  "(at most $MAX_MISSES allowed)"
[ -n "$missed" ] && sed 's|^|  compiled: |' <<< "$missed"
if ((misses > MAX_MISSES)); then
  echo "check_ccache_reuse: FAILED: a new clone compiles more than the files holding its own paths"
  exit 1
fi
# A compilation ccache cannot cache (an unsupported option, say) is neither.
if ((hits < ${#objects[@]} - MAX_MISSES)); then
  echo "check_ccache_reuse: FAILED: only $hits of ${#objects[@]} objects came from the cache"
  exit 1
fi
