package disruption

import (
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// Replacements returns the new NodeClaims that the pods of the named nodes
// need if those nodes go now, for the forceful methods that launch capacity
// ahead of a drain they cannot postpone (an interrupted spot instance, a
// scheduled maintenance). Pods that fit on other nodes need nothing; pods
// that fit nowhere are left to the provisioner and reported in unplaced.
// Nodes that are not in the snapshot are ignored.
func Replacements(in Input, nodes []string) (claims []packer.NodeClaim, unplaced []string) {
	w := newWorld(&in, bufferHosts(&in))
	var cands []*Candidate
	for _, name := range nodes {
		n, ok := in.Snapshot.Node(name)
		if !ok || n.Node == nil {
			continue
		}
		c := &Candidate{Node: n}
		for _, p := range n.Pods {
			if Reschedulable(p) {
				c.Pods = append(c.Pods, &podRef{pod: p, cost: EvictionCost(p)})
			}
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	res := w.place(cands, modeForceful)
	return res.replacements, res.unplaced
}
