// Package v1 holds the karpenter.k8s.aws/v1 API that stevedore serves:
// EC2NodeClass, which says how stevedore launches EC2 instances for the
// NodePools that reference it: which machine images, subnets and security
// groups to use, with which IAM role, disks, tags, kubelet settings and
// instance metadata options.
//
// The types match the typed shape of Karpenter's EC2NodeClass (release
// v1.14) field for field, so manifests written for Karpenter apply unchanged.
// Validation that the API server can do alone is expressed as markers on
// these types and generated into the CRD in package crds.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
