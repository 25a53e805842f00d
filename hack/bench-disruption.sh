#!/usr/bin/env bash
# Runs the consolidation benchmarks of decide/disruption once each and prints
# one row per benchmark: seconds per pass, CPU seconds per pass (every
# goroutine and the garbage collector; on a shared machine a steadier figure
# than the wall clock), nodes and pods in the snapshot, nodes taken by the
# pass, dollars per hour saved, and memory per pass. The catalog benchmark's
# settled cluster takes a minute or so to build before its passes.
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
	printf "%-50s %8s %8s %7s %7s %11s %11s %9s\n", "benchmark", "s/pass", "cpu-s", "nodes", "pods", "nodes/pass", "$/h saved", "MB/pass"
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	delete m
	for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
	secs = m["ns/op"] / 1e9
	cpu = ("cpu-s/op" in m) ? sprintf("%.3f", m["cpu-s/op"]) : "-"
	nodes = ("nodes" in m) ? m["nodes"] : "-"
	pods = ("pods" in m) ? m["pods"] : "-"
	taken = ("nodes/pass" in m) ? m["nodes/pass"] : "0"
	saved = ("$/h-saved" in m) ? sprintf("%.2f", m["$/h-saved"]) : "0"
	mb = ("B/op" in m) ? sprintf("%.0f", m["B/op"] / 1048576) : "-"
	printf "%-50s %8.3f %8s %7s %7s %11s %11s %9s\n", name, secs, cpu, nodes, pods, taken, saved, mb
}' "$out"
