#!/usr/bin/env bash
# Runs `stevedore controller` with its production AWS clients against moto,
# an AWS emulator, on the local cluster: what a user's controller does in
# an EKS account, with no account and nothing but loopback traffic. See
# hack/motocluster for what it sets up and what stands in for EC2.
#
# It makes sure moto can run (hack/moto.sh), starts the local cluster unless
# it runs already (hack/local-cluster.sh up), builds bin/stevedore and runs
# hack/motocluster in the foreground; Ctrl-C stops the controller and moto
# (the local cluster keeps running: hack/local-cluster.sh down).
#
# Usage: hack/moto-controller.sh [-- extra controller flags]
#   then, in another shell:
#   kubectl --kubeconfig .local-cluster/kubeconfig apply -f examples/spot-mix.yaml
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=${STEVEDORE_CLUSTER_DIR:-$root/.local-cluster}
hack/moto.sh >/dev/null
hack/local-cluster.sh up >/dev/null
go build -o bin/stevedore ./cmd/stevedore
exec go run ./hack/motocluster --kubeconfig "$dir/kubeconfig" --stevedore bin/stevedore "$@"
