#!/usr/bin/env bash
# `tokenbatch demo` on the shipped binary: every generated mix runs through the
# four policies, the seed's greedy Σ-token FIFO overruns the padded budget on the
# seed mix while the padded-cost policies never do, the requested count is what
# was counted, and a bad --mix is refused naming it (exit 1, no table).
# Usage: demo_mixes.sh TOKENBATCH_BINARY
set -euo pipefail
bin="${1:?usage: demo_mixes.sh TOKENBATCH_BINARY}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

for mix in seed all_short all_long long_tailed; do
  "$bin" demo --mix "$mix" --requests 300 --show-batches 1 > "$dir/$mix.txt"
  grep -q "^tokenbatch demo: 300 requests arriving at once (mix $mix (seed 1)" "$dir/$mix.txt"
  rows=$(grep -c '^| [a-zA-Z].* | [0-9]* | ' "$dir/$mix.txt")
  [ "$rows" -eq 4 ] || { echo "$mix: expected 4 policy rows, got $rows"; cat "$dir/$mix.txt"; exit 1; }
  # The last column: batches over the padded budget. Padded-cost policies: none.
  for policy in "FIFO with padded cost" "bucketed, padded cost" "length-aware, padded cost (default)"; do
    over=$(grep -F "| $policy |" "$dir/$mix.txt" | awk -F'|' '{gsub(/ /, "", $7); print $7}')
    [ "$over" = "0" ] || { echo "$mix / $policy: $over batches over budget"; exit 1; }
  done
done
seed_over=$(grep -F "| seed: greedy FIFO, Σ tokens |" "$dir/seed.txt" | awk -F'|' '{gsub(/ /, "", $7); print $7}')
[ "$seed_over" -gt 0 ] || { echo "the seed's policy should overrun the padded budget on its own mix"; exit 1; }

if "$bin" demo --mix nope > "$dir/bad.txt" 2>&1; then
  echo "--mix nope was accepted"; exit 1
fi
grep -q "unknown mix 'nope'" "$dir/bad.txt"
! grep -q '^| policy' "$dir/bad.txt"
echo "demo_mixes: ok"
