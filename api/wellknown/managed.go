package wellknown

import karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"

// KindEC2NodeClass is the kind of stevedore's node class, in GroupAWS.
const KindEC2NodeClass = "EC2NodeClass"

// ManagedNodeClass reports whether a nodeClassRef names stevedore's node
// class kind: group GroupAWS and kind KindEC2NodeClass, whatever the name.
//
// Other Karpenter providers may run in the same cluster with their own node
// classes (karpenter.kwok.sh/KWOKNodeClass, say) and the same NodePool and
// NodeClaim kinds. Their objects are theirs: like Karpenter's
// GetSupportedNodeClasses check, this is what tells them apart. A missing
// reference, which the API server does not admit, names no other provider,
// and counts as stevedore's so that what is wrong with the object is still
// reported rather than silently ignored.
func ManagedNodeClass(ref *karpv1.NodeClassReference) bool {
	return ref == nil || (ref.Group == GroupAWS && ref.Kind == KindEC2NodeClass)
}

// ManagedNodeClaim reports whether stevedore acts on nc: launches it,
// registers, disrupts, expires, repairs, interrupts and terminates it and
// its Node. It is so when its spec.nodeClassRef is stevedore's (see
// ManagedNodeClass). A Node is stevedore's when its NodeClaim is.
func ManagedNodeClaim(nc *karpv1.NodeClaim) bool {
	return ManagedNodeClass(nc.Spec.NodeClassRef)
}

// ManagedNodePool reports whether stevedore launches nodes for np: whether
// its template's nodeClassRef is stevedore's (see ManagedNodeClass).
func ManagedNodePool(np *karpv1.NodePool) bool {
	return ManagedNodeClass(np.Spec.Template.Spec.NodeClassRef)
}
