#!/usr/bin/env bash
# KILN_PERF_MAP=1: the JIT names every policy function in /tmp/perf-<pid>.map, as perf expects
# ("<start hex> <size hex> <name>"), under <policy>::<handler>.
set -euo pipefail
kiln=$1
scenario=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
KILN_PERF_MAP=1 "$kiln" simulate "$scenario" > /dev/null &
pid=$!
wait "$pid"
map=/tmp/perf-$pid.map
trap 'rm -rf "$out" "$map"' EXIT
[ -s "$map" ] || { echo "no perf map at $map"; exit 1; }
for name in predicates::predicate nodeorder::node_order gang::job_ready priority::job_order; do
  grep -Eq "^[0-9a-f]+ [0-9a-f]+ ${name}\$" "$map" || { echo "missing $name in $map"; head "$map"; exit 1; }
done
# Without the variable no map is written.
"$kiln" simulate "$scenario" > /dev/null &
pid2=$!
wait "$pid2"
[ ! -e "/tmp/perf-$pid2.map" ] || { echo "map written without KILN_PERF_MAP"; exit 1; }
echo "perf map names policy handlers"
