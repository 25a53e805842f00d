// Package e2e is stevedore's end-to-end suite. It runs against a whole local
// cluster (package test/e2e/cluster): a real etcd, kube-apiserver,
// kube-scheduler and kube-controller-manager on loopback, with kwok playing
// the kubelets. The suite starts one cluster for the package in TestMain and
// gives each test its own namespace.
//
// The tests carry the build tag e2e, so that `go test ./...` (make test) does
// not start a cluster; `make e2e` runs them:
//
//	go test -tags e2e -count=1 ./test/e2e/...
package e2e
