#!/usr/bin/env bash
# Runs the end-to-end suite (test/e2e, build tag e2e) in shards: processes of
# the same test binary, each with a local cluster of its own, at the same
# time.
#
# Why shards: the top-level tests each run a controller of their own against
# the whole cluster, so within one process they must run one after another,
# and nearly all of their time is spent waiting for the cluster (pods
# scheduled, nodes registered, consolidation delays), not computing. Four
# clusters side by side finish in the time of the longest shard. The
# subtests of TestController share one controller and run in parallel
# within their shard (-parallel, which otherwise defaults to the number of
# cores).
#
# Usage: hack/e2e.sh
#   E2E_RUN    a go test -run pattern; when set (not "."), one process runs
#              just those tests
#   E2E_FLAGS  more go test flags, for example -v (given to every shard)
#   GO         the go command (default go)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
GO=${GO:-go}
run=${E2E_RUN:-.}

# The tests of each shard but the last, balanced by their durations on a
# two-core machine (in brackets, seconds). The last shard runs every test
# these do not (TestAdopt, TestChartRBAC, TestHelmSwap and the cluster's
# own [84 + 67 + 75 + 10]), so a new test always runs somewhere.
groups=(
  "TestController|TestMetricsScrape"     # 8 subtests in parallel [~165], then [66]
  "TestMotoLifecycle"                    # [~270, mostly waiting on the controller's timers]
  "TestScaleOut|TestHashVersionChange"   # [138 + 67]
  "TestLeaderElection|TestWhatIf"        # [116 + 158]
)
shards=()
for g in "${groups[@]}"; do
  shards+=("-test.run=^($g)\$")
done
all=$(IFS='|'; echo "${groups[*]}")
shards+=("-test.skip=^($all)\$")
if [ "$run" != "." ]; then
  shards=("-test.run=$run")
fi

# go test flags to the test binary's: -v becomes -test.v.
flags=()
for f in ${E2E_FLAGS:-}; do
  case "$f" in
    -test.*) flags+=("$f") ;;
    -*) flags+=("-test.${f#-}") ;;
    *) flags+=("$f") ;;
  esac
done

"$GO" vet -tags e2e ./test/e2e/...
# The scale measurement (hack/bench-kwok-scale.sh) is not run here, but it
# shares the suite's helpers: vetting it compiles it, so that a change to
# them cannot break it unnoticed.
"$GO" vet -tags e2e,scale ./test/e2e
"$GO" test -count=1 ./test/e2e/cluster

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$GO" test -c -tags e2e -o "$out/e2e.test" ./test/e2e
# The controller the tests run, built once for every shard.
"$GO" build -o "$out/stevedore" ./cmd/stevedore
export STEVEDORE_E2E_BIN=$out/stevedore
# What TestHelmSwap runs besides stevedore, each from its own Go module:
# helm (hack/charttest), Karpenter v1.14.1's controller with its KWOK cloud
# provider (test/karpenter-suite), and Karpenter's chart (the AWS provider's
# module, read from the module cache).
(cd hack/charttest && "$GO" build -o "$out/helm" helm.sh/helm/v3/cmd/helm)
(cd test/karpenter-suite && "$GO" build -o "$out/karpenter" sigs.k8s.io/karpenter/kwok)
"$GO" mod download github.com/aws/karpenter-provider-aws@v1.14.1 sigs.k8s.io/karpenter@v1.14.1
export STEVEDORE_E2E_HELM=$out/helm STEVEDORE_E2E_KARPENTER=$out/karpenter

started=$SECONDS
for i in "${!shards[@]}"; do
  (
    cd test/e2e
    rc=0
    "$out/e2e.test" -test.count=1 -test.timeout=30m -test.parallel=8 "${shards[$i]}" "${flags[@]}" >"$out/$i.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - started))" >"$out/$i.rc"
  ) &
done
wait

failed=0
for i in "${!shards[@]}"; do
  read -r rc took <"$out/$i.rc"
  echo "=== e2e shard $((i + 1))/${#shards[@]} (${shards[$i]}): $([ "$rc" = 0 ] && echo passed || echo "FAILED (exit $rc)") in ${took}s"
  cat "$out/$i.log"
  [ "$rc" = 0 ] || failed=1
done
if [ "$failed" = 0 ]; then
  echo "ok   test/e2e: ${#shards[@]} shard(s) in $((SECONDS - started))s"
else
  echo "FAIL test/e2e"
fi
exit "$failed"
