#!/usr/bin/env bash
# Builds the control-plane binaries that the integration and end-to-end tests run:
# etcd, kube-apiserver, kube-scheduler, kube-controller-manager (from the hack/tools
# module, which pins k8s.io/kubernetes and its staging modules) and kwok.
#
# A cold build takes about 12-15 minutes on two cores, so the result is kept in a
# cache directory outside the work tree, keyed by the pinned versions, and copied
# (hard-linked where the file system allows) into bin/ with the key beside it.
# Later runs, later clones on the same machine, and a CI that keeps bin/ between
# runs reuse it at once. kwok is built in the same module as the control plane,
# so that the two share their compiled Kubernetes libraries.
#
# Usage: hack/kube-binaries.sh        # prints the directory holding the binaries
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools"

KUBE_VERSION=v1.37.2

key=$( (cat "$tools/go.mod" "$tools/go.sum" "$tools/etcd/main.go"; go version) | sha256sum | cut -c1-16)
cache="${STEVEDORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stevedore}/kube-$KUBE_VERSION-$key"
want=(etcd kube-apiserver kube-scheduler kube-controller-manager kwok)

have_all() {
  for b in "${want[@]}"; do [ -x "$cache/$b" ] || return 1; done
}

bin="$root/bin"
# bin/ already holds this build (a CI cache of bin/ restores it so).
in_bin() {
  [ "$(cat "$bin/.kube-binaries-key" 2>/dev/null)" = "$key" ] || return 1
  for b in "${want[@]}"; do [ -x "$bin/$b" ] && [ ! -L "$bin/$b" ] || return 1; done
}
if in_bin; then
  echo "$bin"
  exit 0
fi

if ! have_all; then
  mkdir -p "$cache.tmp"
  echo "building Kubernetes $KUBE_VERSION control plane into $cache (first run only)" >&2
  minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  pkg=k8s.io/component-base/version
  ldflags="-s -w \
    -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor \
    -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z \
    -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION \
    -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  (cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$cache.tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-controller-manager)
  (cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache.tmp/etcd" ./etcd)
  (cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache.tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)
  rm -rf "$cache"
  mv "$cache.tmp" "$cache"
fi

mkdir -p "$bin"
for b in "${want[@]}"; do
  rm -f "$bin/$b"
  ln "$cache/$b" "$bin/$b" 2>/dev/null || cp "$cache/$b" "$bin/$b"
done
echo "$key" >"$bin/.kube-binaries-key"
echo "$bin"
