#!/usr/bin/env bash
# A one-shot `kiln simulate` of a large scenario (pods × nodes ≥ 3e7) compiles the policies no
# cache holds at O2 before its session instead of running it on tier-0 code; a small one keeps
# two tiers, and $KILN_JIT_TIERS still overrides the choice (cli/cli_util.h kLargeSessionPairs).
# Usage: large-session-tiers.sh KILN  (run from the repository root)
set -euo pipefail
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
conf=$tmp/priority.conf
printf 'actions: "enqueue"\ntiers:\n- plugins:\n  - name: priority\n' > "$conf"
python3 tests/bench/gen_scale_scenario.py 3000 10000 > "$tmp/large.yaml"  # 3e7 pairs
python3 tests/bench/gen_scale_scenario.py 100 1000 > "$tmp/small.yaml"
# The shipped cache off (KILN_BUILTIN_CACHE empty) and no writable cache: priority compiles.
# tier0 FILE [NAME=VALUE]...: the `tier-0 policies` row of --timings.
tier0() {
  local file=$1
  shift
  env -u KILN_COMPILE_CACHE -u KILN_JIT_TIERS KILN_BUILTIN_CACHE= "$@" \
    "$kiln" simulate "$file" --conf "$conf" --timings -o json 2>&1 >/dev/null |
    sed -n 's/^  tier-0 policies *\([0-9]*\)$/\1/p'
}
fail=0
check() {  # what expected actual
  if [ "$2" != "$3" ]; then
    echo "FAIL $1: tier-0 policies '$3', expected '$2'"
    fail=1
  else
    echo "ok $1: tier-0 policies $3"
  fi
}
check "large scenario" 0 "$(tier0 "$tmp/large.yaml")"
check "small scenario" 1 "$(tier0 "$tmp/small.yaml")"
check "large, KILN_JIT_TIERS=on" 1 "$(tier0 "$tmp/large.yaml" KILN_JIT_TIERS=on)"
exit $fail
