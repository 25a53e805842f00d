package state

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// DaemonsFor returns the pods of daemonSetPods (one per DaemonSet, as
// Snapshot.DaemonSetPods holds them) that a new NodeClaim is expected to
// run, by the rule that counts them on a starting node (its taints, startup
// taints aside, and its requirements): the DaemonSet overhead it was sized
// with.
func DaemonsFor(nc *karpv1.NodeClaim, daemonSetPods []*corev1.Pod) []*corev1.Pod {
	return expectedDaemons(&StateNode{NodeClaim: nc}, daemonsOf(daemonSetPods))
}

// sizing is what a NodeClaim launched by this process assumed of the
// DaemonSet pods it would run, by DaemonSet, for those whose pod has not
// been seen on its node yet.
type sizing map[types.NamespacedName]resources.Vector

// RecordDaemonOverhead records that the NodeClaim called nodeClaim was sized
// for daemons, the pods that stood for its DaemonSets (see DaemonsFor), so
// that DaemonOverheadMismatches can compare them with the real pods once they
// are bound to its node. The record lives in memory: NodeClaims launched
// before a restart are not checked.
func (c *Cluster) RecordDaemonOverhead(nodeClaim string, daemons []*corev1.Pod) {
	s := sizing{}
	for _, p := range daemons {
		ref := p.OwnerReferences
		if len(ref) == 0 {
			continue
		}
		s[key(p.Namespace, ref[0].Name)] = resources.PodVector(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(s) == 0 {
		delete(c.sized, nodeClaim)
		return
	}
	c.sized[nodeClaim] = s
}

// DaemonOverheadMismatch is a DaemonSet pod bound to the node of a NodeClaim
// that requests more, of some resource, than the NodeClaim was sized with for
// its DaemonSet: room the NodeClaim's pods were promised that the DaemonSet
// takes, so that one of them may be left pending or pre-empted and need
// another node. It is a flaw in how the overhead was worked out (a mutating
// webhook, say, that no template shows), to be reported; new NodeClaims are
// sized from the live pod already.
type DaemonOverheadMismatch struct {
	NodeClaim, Node string
	DaemonSet, Pod  types.NamespacedName
	// Assumed is what the NodeClaim was sized with, Actual what the pod
	// requests.
	Assumed, Actual resources.Vector
}

// DaemonOverheadMismatches compares the DaemonSet pods bound to the nodes of
// the NodeClaims recorded by RecordDaemonOverhead with what was assumed, and
// returns those that request more, in NodeClaim and then DaemonSet order.
// Each DaemonSet is compared once per NodeClaim, with its first pod seen
// bound there; a NodeClaim is forgotten once all its DaemonSets have been
// compared, or when it is deleted, so the cost follows the nodes still
// starting, not the cluster.
func (c *Cluster) DaemonOverheadMismatches() []DaemonOverheadMismatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sized) == 0 {
		return nil
	}
	var out []DaemonOverheadMismatch
	for _, name := range sortedKeys(c.sized) {
		s := c.sized[name]
		nc, ok := c.nodeClaims[name]
		if !ok || nc.Status.ProviderID == "" {
			continue
		}
		node, ok := c.nodeByProviderID[nc.Status.ProviderID]
		if !ok {
			continue
		}
		var found []DaemonOverheadMismatch
		// In name order: during a rollout a node may hold two pods of
		// one DaemonSet, and which is compared must not depend on map
		// order.
		for _, p := range c.sortedPods(node, c.podsByNode[node]) {
			pk := key(p.Namespace, p.Name)
			ds, ok := daemonSetOf(p)
			if !ok {
				continue
			}
			assumed, ok := s[ds]
			if !ok {
				continue
			}
			delete(s, ds)
			if actual := resources.PodVector(p); !actual.Fits(assumed) {
				found = append(found, DaemonOverheadMismatch{NodeClaim: name, Node: node, DaemonSet: ds, Pod: pk, Assumed: assumed, Actual: actual})
			}
		}
		slices.SortFunc(found, func(a, b DaemonOverheadMismatch) int {
			return cmp.Or(cmp.Compare(a.DaemonSet.Namespace, b.DaemonSet.Namespace), cmp.Compare(a.DaemonSet.Name, b.DaemonSet.Name))
		})
		out = append(out, found...)
		if len(s) == 0 {
			delete(c.sized, name)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
