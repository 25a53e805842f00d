#!/usr/bin/env bash
# Runs the chaos scenarios under examples/chaos with random faults, each seed
# twice, checks the safety invariants of every run and prints one line per
# seed and a summary per scenario, then the total. Exits 1 on any violation.
#
#   hack/chaos.sh [SEEDS]
#
# SEEDS defaults to 1-100 (600 runs over the six scenarios); any list that
# `stevedore simulate --seeds` takes works, such as 1-20,42.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seeds=${1:-1-100}
bin=$(mktemp -d)/stevedore
trap 'rm -rf "$(dirname "$bin")"' EXIT
(cd "$root" && go build -o "$bin" ./cmd/stevedore)

status=0
runs=0
violations=0
start=$(date +%s)
for dir in "$root"/examples/chaos/*/; do
	out=$("$bin" simulate "$dir" --check --seeds "$seeds") || status=1
	printf '%s\n' "$out"
	summary=$(printf '%s\n' "$out" | tail -n 1)
	runs=$((runs + $(awk '{print $1}' <<<"$summary")))
	violations=$((violations + $(awk '{print $3}' <<<"$summary")))
done
echo "total: $runs runs, $violations violations in $(($(date +%s) - start))s"
exit $status
