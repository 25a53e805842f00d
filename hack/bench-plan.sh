#!/usr/bin/env bash
# Times `stevedore plan` end to end on Karpenter's benchmark pods at several
# sizes (hack/planbench): wall clock, CPU time and peak resident memory of
# the process, with the plan's cost and its ratio to the lower bound.
#
# Usage: hack/bench-plan.sh [SIZES]   # default 5000,20000,100000
#        OUTPUT=text hack/bench-plan.sh   # the table instead of -o json
# The machine is shared: compare CPU seconds as well as wall-clock time.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/stevedore ./cmd/stevedore
go run ./hack/planbench -stevedore bin/stevedore -sizes "${1:-5000,20000,100000}" -output "${OUTPUT:-json}"
