#!/usr/bin/env bash
# Packs Karpenter's benchmark pods (the diverse workload) on the benchmark
# instance types and on the embedded catalog, at 1,000, 10,000 and 20,000
# pods, then binds the plan's pods one by one in creation order, as
# kube-scheduler binds them, and prints one row per benchmark: the solve's
# time, nodes, price and ratio to the lower bound; the bindings that break a
# zone spread, a hostname spread or any other constraint; how many pods with
# a zone spread constraint each zone holds; and the largest difference
# between two zones' counts of the pods a zone spread constraint selects
# (SEL-SKEW) and of the pods that carry it (OWNER-SKEW).
#
# Usage: hack/bench-replay.sh [extra go test flags...]
#   BENCH   benchmark name pattern (default: BenchmarkReplay)
#   RAW=1   also print go test's own output (with -v, the first violation of
#           each kind)
set -euo pipefail

cd "$(dirname "$0")/.."

bench="${BENCH:-BenchmarkReplay}"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT

if ! go test -run '^$' -bench "$bench" -benchtime=1x "$@" ./scheduling/packer/ >"$out" 2>&1; then
	cat "$out" >&2
	echo "bench-replay: the replay benchmarks failed" >&2
	exit 1
fi
if [ "${RAW:-0}" = 1 ]; then
	cat "$out"
	echo
fi
if ! grep -q '^Benchmark' "$out"; then
	cat "$out" >&2
	echo "bench-replay: no benchmark matches $bench in ./scheduling/packer/" >&2
	exit 1
fi

awk '
function get(name) { return (name in m) ? m[name] : "" }
function show(v, format) { return v == "" ? "-" : sprintf(format, v) }
BEGIN {
	printf "%-28s %8s %6s %10s %8s %11s %15s %6s %16s %8s %10s\n", "BENCHMARK", "SECONDS", "NODES", "$/HOUR", "COST/LB", "ZONE-SPREAD", "HOSTNAME-SPREAD", "OTHER", "ZONES 1/2/3", "SEL-SKEW", "OWNER-SKEW"
}
/^Benchmark/ {
	delete m
	for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
	name = $1
	sub(/-[0-9]+$/, "", name)
	zones = sprintf("%d/%d/%d", get("zone-spread-pods-in-test-zone-1"), get("zone-spread-pods-in-test-zone-2"), get("zone-spread-pods-in-test-zone-3"))
	printf "%-28s %8s %6s %10s %8s %11s %15s %6s %16s %8s %10s\n", name,
		show(get("ns/op") / 1e9, "%.2f"),
		show(get("nodes"), "%.0f"),
		show(get("$/hour"), "%.4f"),
		show(get("cost/lb"), "%.3f"),
		show(get("zone-spread-violations"), "%.0f"),
		show(get("hostname-spread-violations"), "%.0f"),
		show(get("other-violations"), "%.0f"),
		zones,
		show(get("selected-skew"), "%.0f"),
		show(get("owner-skew"), "%.0f")
}
' "$out"
