#!/usr/bin/env bash
# Runs the packer's benchmarks once each and prints one row per benchmark:
# pods placed per second, nodes proposed, their price per hour, the ratio of
# that price to the lower bound, and the bytes and allocations per run.
#
# The default pattern covers every figure of the Scheduling section of
# docs/performance.md in one run: Pack (Karpenter's benchmark types, with
# their per-node overhead), PackWithoutOverhead (allocatable equal to
# capacity), Preferences, and the Catalog variants on the EC2 catalog. With
# -count N each benchmark prints N rows.
#
# Usage: hack/bench-scheduling.sh [extra go test flags...], e.g. -count 3
#   BENCH      benchmark name pattern (default: BenchmarkPack|BenchmarkPreferences)
#   BENCHTIME  -benchtime value (default: 1x, one solve per benchmark)
#   RAW=1      also print go test's own output
#
# The columns come from the metrics the benchmarks report with
# b.ReportMetric: "pods/s" (or "pods", divided by the time per run), "nodes"
# (or "nodeclaims"), "$/hour" and "cost/lb" (or "ratio"). A metric that a
# benchmark does not report is shown as "-".
set -euo pipefail

cd "$(dirname "$0")/.."

bench="${BENCH:-BenchmarkPack|BenchmarkPreferences}"
benchtime="${BENCHTIME:-1x}"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT

if ! go test -run '^$' -bench "$bench" -benchtime="$benchtime" -benchmem "$@" ./scheduling/packer/ >"$out" 2>&1; then
	cat "$out" >&2
	echo "bench-scheduling: the packer's benchmarks failed" >&2
	exit 1
fi
if [ "${RAW:-0}" = 1 ]; then
	cat "$out"
	echo
fi
if ! grep -q '^Benchmark' "$out"; then
	cat "$out" >&2
	echo "bench-scheduling: no benchmark matches $bench in ./scheduling/packer/" >&2
	exit 1
fi

# A benchmark line is: name, iterations, then value/unit pairs.
awk '
function get(names,    n, parts, i) {
	n = split(names, parts, "|")
	for (i = 1; i <= n; i++) if (parts[i] in m) return m[parts[i]]
	return ""
}
function show(v, format) { return v == "" ? "-" : sprintf(format, v) }
BEGIN {
	printf "%-44s %12s %8s %10s %8s %14s %12s\n", "BENCHMARK", "PODS/S", "NODES", "$/HOUR", "COST/LB", "BYTES/OP", "ALLOCS/OP"
}
/^Benchmark/ {
	delete m
	for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
	name = $1
	sub(/-[0-9]+$/, "", name)
	podsPerSec = get("pods/s")
	if (podsPerSec == "" && get("pods") != "" && get("ns/op") > 0) podsPerSec = get("pods") / (get("ns/op") / 1e9)
	printf "%-44s %12s %8s %10s %8s %14s %12s\n", name,
		show(podsPerSec, "%.0f"),
		show(get("nodes|nodeclaims|claims"), "%.0f"),
		show(get("$/hour|$/hr|usd/hour"), "%.4f"),
		show(get("cost/lb|ratio|cost/lower-bound|lb-ratio"), "%.3f"),
		show(get("B/op"), "%.0f"),
		show(get("allocs/op"), "%.0f")
}
' "$out"
