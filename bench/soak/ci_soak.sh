#!/usr/bin/env bash
# The 2-minute version of the fault-injection soak (bench/soak/soak.py, issue #22),
# with the same checks as the 30-minute run: nothing lost or answered twice,
# only injected failures fail, client counts == /metrics, RSS/fds/threads flat
# after warm-up, a clean drain on SIGTERM. Latency is reported, not asserted.
#
#   bash bench/soak/ci_soak.sh BINARY [JSON]
#
# BINARY: the tokenbatch binary (e.g. build/src/cli/tokenbatch); JSON: where to
# write the summary (default: soak_ci.json in the current directory). Exit 0
# when every check passed, 1 when one failed (named on stderr, with the kept
# server log), 2 for a setup error. Needs python3 >= 3.11
# (standard library only) and a free loopback port.
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BINARY [JSON]" >&2
  exit 2
fi
# Relative paths are the caller's: made absolute before the cd below.
absolute() { if [[ $1 == /* ]]; then printf '%s' "$1"; else printf '%s/%s' "$PWD" "$1"; fi; }
binary="$(absolute "$1")"
json="$(absolute "${2:-soak_ci.json}")"
# The soak is a module of the bench package: run from the repository root.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec python3 -m bench.soak.soak --binary "$binary" --duration-s 120 --window-s 30 --rate 30 --seed 22 \
  --json "$json"
