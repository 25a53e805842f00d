#!/usr/bin/env bash
# Runs the simulator's benchmark once and prints what it did and what it
# cost: the virtual time simulated, the wall-clock and CPU time it took, the
# reconciles, the most nodes and pods at any sample, and the peak resident
# memory of the process.
#
# Usage: hack/bench-simulate.sh [SCENARIO] [extra test binary flags...]
#   SCENARIO   a scenario file or directory (default: sim/runner/testdata/churn,
#              a day of a cluster of about 500 nodes with hourly churn)
#   RAW=1      also print the benchmark's own output
#
# Extra flags go to the test binary, for example -test.cpuprofile=cpu.out.
# The machine is shared: compare CPU seconds as well as wall-clock time.
set -euo pipefail

cd "$(dirname "$0")/.."

scenario="sim/runner/testdata/churn"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	scenario="$1"
	shift
fi
if [ ! -e "$scenario" ]; then
	echo "bench-simulate: $scenario does not exist" >&2
	exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The test binary is built first, so that compiling is not measured.
go test -c -o "$tmp/runner.test" ./sim/runner/
if ! SIM_SCENARIO="$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario")" \
	"$tmp/runner.test" -test.run '^$' -test.bench '^BenchmarkScenario$' -test.benchtime 1x "$@" >"$tmp/out" 2>&1; then
	cat "$tmp/out" >&2
	echo "bench-simulate: the benchmark failed" >&2
	exit 1
fi
if [ "${RAW:-0}" = 1 ]; then
	cat "$tmp/out"
	echo
fi

# The benchmark line is: name, iterations, then value/unit pairs.
awk -v scenario="$scenario" '
function show(key, format) { return (key in m) ? sprintf(format, m[key]) : "-" }
/^BenchmarkScenario/ {
	for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
	found = 1
}
END {
	if (!found) {
		print "bench-simulate: no benchmark result" > "/dev/stderr"
		exit 1
	}
	printf "scenario     %s\n", scenario
	printf "virtual      %s h\n", show("virtual-h", "%g")
	printf "wall clock   %s s\n", sprintf("%.1f", m["ns/op"] / 1e9)
	printf "CPU          %s s\n", show("cpu-s/op", "%.1f")
	printf "reconciles   %s\n", show("reconciles/run", "%d")
	printf "peak nodes   %s\n", show("peak-nodes", "%d")
	printf "peak pods    %s\n", show("peak-pods", "%d")
	printf "peak memory  %s MiB\n", show("peak-RSS-MiB", "%.0f")
}' "$tmp/out"
