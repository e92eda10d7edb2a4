# Stage timing for scripts/test.sh (sourced, not run): `stage NAME COMMAND...`
# runs COMMAND as one named stage and records its wall time; at exit, passed or
# failed, the table of every stage that ran is printed and written to
# build/test-stages.txt, with the machine's load average at the start and end
# (docs/benchmarks.md, "The test suite's time", reads its figures from it).

TEST_STAGES=()
TEST_STAGES_START=$SECONDS
TEST_STAGES_LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

# stage NAME COMMAND...: prints "== NAME", runs COMMAND; a failure fails the suite
# (set -e in the caller) after the table names the stage that failed.
stage() {
  local name="$1"
  shift
  echo "== $name"
  local start=$SECONDS
  TEST_STAGES+=("$name|running")
  "$@"
  TEST_STAGES[-1]="$name|$((SECONDS - start))"
}

# The table: one row a stage, wall seconds and minutes, then the total.
print_test_stages() {
  local status=$?
  local total=$((SECONDS - TEST_STAGES_START))
  {
    echo "| stage | wall s | wall min |"
    echo "|---|---:|---:|"
    local row name secs
    for row in "${TEST_STAGES[@]}"; do
      name="${row%%|*}"
      secs="${row#*|}"
      if [ "$secs" = running ]; then
        echo "| $name | failed | |"
      else
        awk -v n="$name" -v s="$secs" 'BEGIN { printf "| %s | %d | %.1f |\n", n, s, s / 60 }'
      fi
    done
    awk -v s="$total" 'BEGIN { printf "| **total** | %d | %.1f |\n", s, s / 60 }'
    echo
    echo "load average (1, 5, 15 min): $TEST_STAGES_LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
      "$(nproc) cores; exit status $status"
  } > build/test-stages.txt.new 2>/dev/null && mv build/test-stages.txt.new build/test-stages.txt
  echo "== stage times (build/test-stages.txt)"
  cat build/test-stages.txt 2>/dev/null || true
  return "$status"
}
