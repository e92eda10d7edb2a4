# Stage timing for scripts/test.sh (sourced, not run): `stage NAME COMMAND...`
# runs COMMAND as one named stage and records its wall time; at exit, passed or
# failed, the table of every stage that ran is printed and written to
# build/test-stages.txt, with the machine's load average at the start and end
# (docs/benchmarks.md, "The test suite's time", reads its figures from it),
# and the disk space left after each stage: the builds, the Python environment
# and the caches fill several GiB, and a machine with too little disk fails in
# whichever stage runs out, so the table shows where it went.

TEST_STAGES=()
TEST_STAGES_START=$SECONDS
TEST_STAGES_LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

# Free space on the file system of the working tree, in GiB with one decimal.
# Never fails: the suite must not stop for want of this figure.
disk_free_gib() { df -Pk . 2>/dev/null | awk 'NR == 2 { printf "%.1f", $4 / 1048576 }' || true; }
TEST_STAGES_DISK_START="$(disk_free_gib)"

# stage NAME COMMAND...: prints "== NAME", runs COMMAND; a failure fails the suite
# (set -e in the caller) after the table names the stage that failed.
stage() {
  local name="$1"
  shift
  echo "== $name"
  local start=$SECONDS
  TEST_STAGES+=("$name|running")
  "$@"
  TEST_STAGES[-1]="$name|$((SECONDS - start))|$(disk_free_gib)"
}

# The table: one row a stage, wall seconds and minutes and the disk left after
# it (for a failed stage, at the failure), then the total.
print_test_stages() {
  local status=$?
  local total=$((SECONDS - TEST_STAGES_START))
  {
    echo "| stage | wall s | wall min | disk free after, GiB |"
    echo "|---|---:|---:|---:|"
    local row name rest secs free
    for row in "${TEST_STAGES[@]}"; do
      name="${row%%|*}"
      rest="${row#*|}"
      secs="${rest%%|*}"
      free="${rest#*|}"
      if [ "$secs" = running ]; then
        echo "| $name | failed | | $(disk_free_gib) |"
      else
        awk -v n="$name" -v s="$secs" -v f="$free" 'BEGIN { printf "| %s | %d | %.1f | %s |\n", n, s, s / 60, f }'
      fi
    done
    awk -v s="$total" -v f="$(disk_free_gib)" 'BEGIN { printf "| **total** | %d | %.1f | %s |\n", s, s / 60, f }'
    echo
    echo "load average (1, 5, 15 min): $TEST_STAGES_LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
      "$(nproc) cores; disk free at the start $TEST_STAGES_DISK_START GiB; exit status $status"
  } > build/test-stages.txt.new 2>/dev/null && mv build/test-stages.txt.new build/test-stages.txt
  echo "== stage times (build/test-stages.txt)"
  cat build/test-stages.txt 2>/dev/null || true
  return "$status"
}
