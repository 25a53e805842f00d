//go:build tools

// Package tools pins the Kubernetes control-plane components that the
// integration and end-to-end tests run against. They are built from source
// (see hack/kube-binaries.sh) so that no container engine or download is needed.
// kwok is built in the same module graph, so that it shares the compiled
// Kubernetes libraries with the control plane instead of building its own.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
