package disruption

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// bufferCost is the eviction cost of a CapacityBuffer's placeholder: a
// positive one, so that the node keeping a placeholder's room is not empty.
// (By its priority alone, the lowest there is, it would not count.)
const bufferCost = 1

// bufferHosts says where the CapacityBuffers' placeholder pods sit: packed,
// as the provisioner packs them, onto the nodes as they are (and the
// NodeClaims on their way), with no new node. By node name; placeholders
// that fit on no node are left out (the provisioner launches for them).
//
// A node hosting a placeholder is not empty, and a consolidation that takes
// it must find the placeholder room elsewhere, as it must for its real
// pods; on the nodes that stay, the placeholders' room is taken, so that
// consolidation does not move pods into it only for the buffer to need a
// new node again.
func bufferHosts(in *Input) map[string][]*corev1.Pod {
	snap := in.Snapshot
	if len(snap.BufferPods) == 0 {
		return nil
	}
	res := packer.Solve(snap.PackerInput(snap.BufferPods, nil, in.Options.PreferencePolicy))
	byKey := make(map[types.NamespacedName]*corev1.Pod, len(snap.BufferPods))
	for _, p := range snap.BufferPods {
		byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	out := map[string][]*corev1.Pod{}
	for _, pl := range res.Placements {
		if p := byKey[pl.Pod]; p != nil {
			out[pl.Node] = append(out[pl.Node], p)
		}
	}
	return out
}
