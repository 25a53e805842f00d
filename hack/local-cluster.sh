#!/usr/bin/env bash
# A local Kubernetes cluster on loopback, no container engine: etcd,
# kube-apiserver, kube-scheduler and kube-controller-manager built from source
# (hack/kube-binaries.sh), and kwok playing the kubelet of every Node annotated
# kwok.x-k8s.io/node=fake. stevedore's CRDs are installed. The end-to-end suite
# (test/e2e) starts the same cluster from Go; the configuration both use is in
# hack/local-cluster/.
#
# Usage: hack/local-cluster.sh up       start it in the background, wait until ready
#        hack/local-cluster.sh down     stop it (the logs stay)
#        hack/local-cluster.sh status   what runs, and what the API server says
#
# Everything lives in $STEVEDORE_CLUSTER_DIR, default .local-cluster/ at the
# repository root: kubeconfig, logs/ (one file per component, and
# local-cluster.log for the process that runs them), run/ (keys, certificates,
# the components' kubeconfigs). Each `up` starts an empty cluster.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${STEVEDORE_CLUSTER_DIR:-$root/.local-cluster}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pidfile=$dir/local-cluster.pid
runner=$dir/local-cluster

usage() {
  echo "usage: $0 up|down|status" >&2
  exit 2
}

# is_running PID EXECUTABLE: PID is alive (not a zombie) and runs EXECUTABLE
# (checked on Linux, where a recycled process ID would otherwise fool us).
is_running() {
  local pid=$1 exe=$2
  [ -n "$pid" ] && [ "$pid" -gt 0 ] 2>/dev/null && kill -0 "$pid" 2>/dev/null || return 1
  if [ -e "/proc/$pid/status" ]; then
    ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null || return 1
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$exe")" ] || return 1
  fi
}

runner_pid() {
  [ -f "$pidfile" ] && cat "$pidfile" || true
}

up() {
  if is_running "$(runner_pid)" "$runner"; then
    echo "the local cluster is already running in $dir"
    print_usage
    return 0
  fi
  "$root/hack/kube-binaries.sh" >/dev/null
  (cd "$root" && go build -o "$runner" ./hack/local-cluster)
  reap
  mkdir -p "$dir/logs"
  rm -f "$dir/ready"
  local log=$dir/logs/local-cluster.log
  # A session of its own, so that the cluster outlives this shell and its
  # terminal; output to the log.
  if command -v setsid >/dev/null 2>&1; then
    nohup setsid "$runner" run -dir "$dir" >"$log" 2>&1 </dev/null &
  else
    nohup "$runner" run -dir "$dir" >"$log" 2>&1 </dev/null &
  fi
  local pid=$!
  echo "$pid" >"$pidfile"
  echo "starting the local cluster in $dir ..."
  local waited=0
  until [ -f "$dir/ready" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the local cluster failed to start; $log says:" >&2
      tail -n 60 "$log" >&2
      rm -f "$pidfile"
      return 1
    fi
    if [ "$waited" -ge 600 ]; then
      echo "the local cluster is not ready after 5 minutes; stopping it. $log says:" >&2
      tail -n 60 "$log" >&2
      down >/dev/null
      return 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  sed -n '/^\[/p' "$log"
  print_usage
}

print_usage() {
  cat <<EOF

kube-apiserver: $(cat "$dir/ready" 2>/dev/null || echo "?")
kubeconfig:     $dir/kubeconfig (cluster-admin)
logs:           $dir/logs/

  export KUBECONFIG=$dir/kubeconfig
  kubectl get nodes                    # any kubectl; none is built here
  kubectl apply -f examples/spot-mix.yaml

A Node annotated kwok.x-k8s.io/node=fake becomes Ready and runs the pods bound
to it. Stop the cluster with: hack/local-cluster.sh down
EOF
}

# reap kills what a runner that died without cleaning up left behind: the
# components listed in the pid file that still run.
reap() {
  [ -f "$dir/pids" ] || return 0
  local name pid exe
  while read -r name pid exe; do
    if is_running "$pid" "$exe"; then
      echo "killing $name (pid $pid), left over from an earlier run" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done <"$dir/pids"
  rm -f "$dir/pids"
}

down() {
  local pid
  pid=$(runner_pid)
  if is_running "$pid" "$runner"; then
    kill -TERM "$pid"
    local waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 120 ]; do
      sleep 0.5
      waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "the local cluster did not stop within a minute; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "the local cluster in $dir is stopped; its logs are in $dir/logs/"
  else
    echo "no local cluster is running in $dir"
  fi
  reap
  # What a runner that was killed could not remove; the logs stay.
  rm -rf "$pidfile" "$dir/ready" "$dir/run" "$dir/kubeconfig"
}

status() {
  local pid
  pid=$(runner_pid)
  if ! is_running "$pid" "$runner"; then
    echo "no local cluster is running in $dir"
    return 3
  fi
  echo "local cluster in $dir (runner pid $pid)"
  "$runner" status -dir "$dir"
  echo "kubeconfig: $dir/kubeconfig"
  echo "logs:       $dir/logs/"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) usage ;;
esac
