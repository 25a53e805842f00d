#!/usr/bin/env bash
# Runs the consolidation-quality benchmark of the simulator: a churned
# cluster (sim/runner/testdata/consolidation: 1,700 pods of eight
# Deployments, then half the Deployments scaled down to a quarter) left to
# consolidate until it settles, once with stevedore's search and once with
# multi-node consolidation capped at 100 candidates as Karpenter caps it.
# Prints, per search, the pods left, the nodes and their $/h at the end, the
# lower bound of the pods left at the same instance types and prices, their
# ratio (1 is optimal), the peak before the scale-down, the nodes disrupted,
# how long the cluster had been unchanged at the end (marked when under 30
# minutes: consolidation had not settled), and the wall clock.
# Everything but the wall clock is deterministic for the scenario's seed.
#
# Usage: hack/bench-consolidation.sh [SCENARIO] [extra test binary flags...]
#   SCENARIO   a scenario file or directory (default:
#              sim/runner/testdata/consolidation)
#   RAW=1      also print the benchmark's own output
set -euo pipefail

cd "$(dirname "$0")/.."

scenario="sim/runner/testdata/consolidation"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	scenario="$1"
	shift
fi
if [ ! -e "$scenario" ]; then
	echo "bench-consolidation: $scenario does not exist" >&2
	exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

go test -c -o "$tmp/runner.test" ./sim/runner/
# The test binary is built first, so that compiling is not measured.
if ! SIM_SCENARIO="$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario")" \
	"$tmp/runner.test" -test.run '^$' -test.bench '^BenchmarkConsolidationQuality$' -test.benchtime 1x "$@" >"$tmp/out" 2>&1; then
	cat "$tmp/out" >&2
	echo "bench-consolidation: the benchmark failed" >&2
	exit 1
fi
if [ "${RAW:-0}" = 1 ]; then
	cat "$tmp/out"
	echo
fi

# Each benchmark line is: name, iterations, then value/unit pairs.
awk -v scenario="$scenario" '
BEGIN {
	printf "scenario %s\n", scenario
	printf "%-10s %6s %6s %9s %9s %8s %11s %10s %10s %8s %8s\n", "search", "pods", "nodes", "$/h", "bound $/h", "cost/lb", "peak nodes", "peak $/h", "disrupted", "settled", "wall s"
}
/^BenchmarkConsolidationQuality\// {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/.*search=/, "", name)
	delete m
	for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
	settled = sprintf("%dm", m["settled-min"])
	if (m["settled-min"] < 30) settled = settled "(!)"
	printf "%-10s %6d %6d %9.2f %9.2f %8.3f %11d %10.2f %10d %8s %8.1f\n", name, m["pods"], m["nodes"], m["$/h"], m["$/h-bound"], m["cost/lb"], m["peak-nodes"], m["peak-$/h"], m["disrupted"], settled, m["ns/op"] / 1e9
	if (m["pending"] > 0) printf "  %d pods pending at the end\n", m["pending"]
	unsettled += (m["settled-min"] < 30)
	found = 1
}
END {
	if (!found) {
		print "bench-consolidation: no benchmark result" > "/dev/stderr"
		exit 1
	}
	if (unsettled) print "(!) not settled: the cluster changed within the last 30 minutes of the run; RAW=1 shows its course"
}' "$tmp/out"
