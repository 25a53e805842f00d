#!/usr/bin/env bash
# Measures stevedore on a large local cluster: TestKWOKScale (test/e2e, build
# tags e2e and scale) provisions nodes for 20,000 pods, about 2,000 KWOK
# nodes, scales the pods down to half and lets consolidation take nodes away.
# It prints, for the scale-out and for the consolidation, the time and the
# nodes, the controller's CPU time, peak memory and API requests by verb,
# and the CPU time and memory of every component of the cluster (etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager, kwok), then the
# scale-out's provisioning latencies. Its progress lines, every 30 seconds,
# give each process's share of the CPU, which shows what sets the pace.
#
# Not part of make test or hack/e2e.sh: it takes from a quarter of an hour to
# an hour on two cores, and the cluster's components run with higher client
# limits than the suite's (see test/e2e/kwokscale_test.go).
#
# Usage: hack/bench-kwok-scale.sh [extra test binary flags...]
#   SCALE_PODS               pods at the peak (default 20000)
#   SCALE_NODES              nodes they are sized to need (default SCALE_PODS/10)
#   SCALE_PODS_AFTER         pods after the scale-down (default SCALE_PODS/2)
#   SCALE_DEPLOYMENTS        Deployments the pods belong to (default 10)
#   SCALE_NODE_CPU           vCPUs of the NodePool's only instance size (default 16)
#   SCALE_POD_MEMORY         each pod's memory request (default 1Gi)
#   SCALE_CONSOLIDATE_AFTER  the NodePool's consolidateAfter (default 30s)
#   SCALE_BUDGET             the NodePool's disruption budget (default 10%)
#   SCALE_TIMEOUT            the longest each phase may take (default 30m)
#   SCALE_SETTLE             how long the nodes must stay the same for
#                            consolidation to be done (default 2m)
#   GO                       the go command (default go)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
GO=${GO:-go}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$GO" vet -tags e2e,scale ./test/e2e
# Built first, so that compiling is not measured.
"$GO" test -c -tags e2e,scale -o "$tmp/e2e.test" ./test/e2e
"$GO" build -o "$tmp/stevedore" ./cmd/stevedore
export STEVEDORE_E2E_BIN=$tmp/stevedore

# The whole output as it comes (progress every 30 seconds), then the
# measurements together.
echo "load before: $(uptime)"
rc=0
(cd test/e2e && "$tmp/e2e.test" -test.run '^TestKWOKScale$' -test.v -test.count=1 -test.timeout=3h "$@") 2>&1 | tee "$tmp/out" || rc=$?
echo "load after: $(uptime)"
echo
grep -E 'measurement:|pods of .* in [0-9]+ Deployments' "$tmp/out" | sed -E 's/^ +//' || true
exit "$rc"
