#!/usr/bin/env bash
# Runs the consolidation benchmarks of decide/disruption once each and prints
# one row per benchmark: seconds per pass, nodes and pods in the snapshot,
# nodes taken by the pass, dollars per hour saved, and memory per pass.
#
# Usage: hack/bench-disruption.sh [extra go test flags...]
#   BENCHTIME  -benchtime value (default: 1x, one pass per benchmark)
#   RAW=1      also print go test's own output
set -euo pipefail

cd "$(dirname "$0")/.."

benchtime="${BENCHTIME:-1x}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

if ! go test -run '^$' -bench 'BenchmarkConsolidation' -benchtime="$benchtime" -benchmem "$@" ./decide/disruption/ >"$out" 2>&1; then
	cat "$out" >&2
	echo "bench-disruption: the consolidation benchmarks failed" >&2
	exit 1
fi
if [ "${RAW:-0}" = 1 ]; then
	cat "$out"
	echo
fi

awk '
BEGIN {
	printf "%-36s %10s %7s %7s %11s %11s %9s\n", "benchmark", "s/pass", "nodes", "pods", "nodes/pass", "$/h saved", "MB/pass"
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	delete m
	for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
	secs = m["ns/op"] / 1e9
	nodes = ("nodes" in m) ? m["nodes"] : "-"
	pods = ("pods" in m) ? m["pods"] : "-"
	taken = ("nodes/pass" in m) ? m["nodes/pass"] : "0"
	saved = ("$/h-saved" in m) ? sprintf("%.2f", m["$/h-saved"]) : "0"
	mb = ("B/op" in m) ? sprintf("%.0f", m["B/op"] / 1048576) : "-"
	printf "%-36s %10.3f %7s %7s %11s %11s %9s\n", name, secs, nodes, pods, taken, saved, mb
}' "$out"
