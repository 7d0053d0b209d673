#!/usr/bin/env bash
# Log messages go to stderr, never into a command's result on stdout: with an unknown
# KILN_JIT_TIERS value kiln warns, and `simulate -o json` must still print JSON alone.
# Usage: log-to-stderr.sh KILN  (run from the repository root)
set -euo pipefail
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KILN_JIT_TIERS=bogus "$kiln" simulate examples/scenarios/training-cluster.yaml -o json \
  > "$tmp/out.json" 2> "$tmp/err.txt"
python3 -m json.tool "$tmp/out.json" > /dev/null || { echo "FAIL: stdout is not JSON"; head -3 "$tmp/out.json"; exit 1; }
grep -q "KILN_JIT_TIERS=bogus" "$tmp/err.txt" || { echo "FAIL: no warning on stderr"; cat "$tmp/err.txt"; exit 1; }
echo "ok: JSON on stdout, the warning on stderr"
