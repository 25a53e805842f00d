// Package v1alpha1 holds the karpenter.sh/v1alpha1 API that stevedore
// serves: NodeOverlay, which changes what stevedore believes about the
// instance types it may launch — their price, or extended resources they
// carry that the cloud does not report — for the instance types and
// offerings that match its requirements.
//
// The type matches Karpenter's v1alpha1 NodeOverlay field for field, so
// manifests written for Karpenter apply unchanged. Validation that the API
// server can do alone (patterns, enums, limits and CEL rules) is expressed as
// markers on the types and generated into the CRD in package crds; what it
// accepts but no instance type can match is found by
// NodeOverlay.RuntimeProblems, and the scheduler's overlay package checks
// the rest for overlays that did not come through an API server.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
