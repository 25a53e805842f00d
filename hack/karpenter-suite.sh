#!/usr/bin/env bash
# Runs Karpenter's own regression suite (package test/suites/regression of
# sigs.k8s.io/karpenter v1.14.1), unchanged, against stevedore on the local
# cluster, and writes docs/compatibility.md. See that page.
#
# The suite is built from the Go module proxy in the Go module of its own under
# test/karpenter-suite (so no third-party code is copied into this repository
# and stevedore's dependencies are untouched); the Go build cache keeps it.
#
# Usage: hack/karpenter-suite.sh [-focus REGEX] [-spec-timeout 20m] [-parallel N] [-fail]
#   KSUITE_OUT    logs, reports and the local cluster (default .karpenter-suite/)
#   KSUITE_SUITE  regression (default), or performance: Karpenter's
#                 test/suites/performance of the same release, whose figures
#                 go to the log only (docs/performance.md quotes them); its
#                 logs are under KSUITE_OUT/performance/
set -euo pipefail
GO=${GO:-go}

root=$(cd "$(dirname "$0")/.." && pwd)
out=${KSUITE_OUT:-$root/.karpenter-suite}
mkdir -p "$out/bin"
out=$(cd "$out" && pwd)

"$root/hack/kube-binaries.sh" >/dev/null
echo "building stevedore and the ${KSUITE_SUITE:-regression} suite (sigs.k8s.io/karpenter v1.14.1) ..." >&2
(cd "$root" && "$GO" build -o "$out/bin/stevedore" ./cmd/stevedore)
suite=${KSUITE_SUITE:-regression}
case "$suite" in
  regression) logs=$out; extra=() ;;
  performance) logs=$out/performance; extra=(-record=false) ;;
  *) echo "KSUITE_SUITE=$suite: want regression or performance" >&2; exit 2 ;;
esac
(cd "$root/test/karpenter-suite" &&
  "$GO" test -c -o "$out/bin/$suite.test" "sigs.k8s.io/karpenter/test/suites/$suite" &&
  "$GO" build -o "$out/bin/run" ./run)

exec "$out/bin/run" -root "$root" -out "$logs" "${extra[@]}" \
  -suite "$out/bin/$suite.test" -stevedore "$out/bin/stevedore" "$@"
