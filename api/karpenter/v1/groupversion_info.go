package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of NodePool and NodeClaim.
	GroupVersion = schema.GroupVersion{Group: "karpenter.sh", Version: "v1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds NodePool, NodeClaim and their lists to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&NodePool{}, &NodePoolList{}, &NodeClaim{}, &NodeClaimList{})
}
