// Package acceptance checks stevedore's CRDs against the real kube-apiserver:
// the generated CRDs install, the shipped examples are accepted, and each
// invalid manifest of the validation table is rejected by the API server with
// the same field paths as the offline validator reports, and a static
// NodePool scales through its scale subresource as kubectl scale does.
//
// The package has only tests; they need the control-plane binaries that
// `make kube-binaries` builds.
package acceptance
