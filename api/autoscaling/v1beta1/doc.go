// Package v1beta1 holds the autoscaling.x-k8s.io/v1beta1 API that stevedore
// serves: CapacityBuffer, which asks for spare capacity to be kept ready
// ahead of the pods that will use it.
//
// The type is the one Karpenter v1.14.1 serves (itself the Cluster
// Autoscaler's), field for field and with the same validation, so that a
// CapacityBuffer written for Karpenter applies unchanged. Validation the API
// server can do alone is expressed as markers here and generated into the
// CRD in package crds.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
