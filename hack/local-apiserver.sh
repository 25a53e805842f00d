#!/usr/bin/env bash
# Starts etcd and kube-apiserver (built from source, cached) on loopback with the
# stevedore CRDs installed, and writes a kubeconfig. Ctrl-C stops both.
#
# Usage: hack/local-apiserver.sh [KUBECONFIG_PATH]   (default: ./.cache/kubeconfig)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.cache/kubeconfig}
mkdir -p "$(dirname "$out")"
"$root/hack/kube-binaries.sh" >/dev/null
cd "$root"
exec go run ./hack/apiserver -kubeconfig "$out"
