// Package v1 holds the karpenter.sh/v1 API that stevedore serves: NodePool,
// which tells stevedore what kind of nodes it may launch and when it may take
// them away, and NodeClaim, stevedore's record of one node it asked the cloud
// for.
//
// The types match Karpenter's v1 API field for field, so manifests written
// for Karpenter apply unchanged. Validation that the API server can do alone
// (patterns, enums, defaults and CEL rules) is expressed as markers on these
// types and generated into the CRDs in package crds.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
