package disruption

import (
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// fingerprint sums up what a decision reads from the snapshot, cheaply: the
// name and resource version of every node, NodeClaim, pod, NodePool, node
// class, DaemonSet, LimitRange and PodDisruptionBudget, the marks and nominations only
// the controller knows, and the budgets still open. When it has not changed,
// neither has the decision (but for inputs that change without an API event,
// which FullPassInterval covers). The snapshot is sorted, so the same cluster
// gives the same fingerprint.
func fingerprint(snap state.Snapshot, remaining map[string]map[decide.Reason]int) uint64 {
	h := fnv.New64a()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	pod := func(p *corev1.Pod) { write("pod", p.Namespace, p.Name, p.ResourceVersion) }
	for _, n := range snap.Nodes {
		write("node", n.Name())
		if n.Node != nil {
			write(n.Node.ResourceVersion)
		}
		if n.NodeClaim != nil {
			write(n.NodeClaim.Name, n.NodeClaim.ResourceVersion)
		}
		write(strconv.FormatBool(n.MarkedForDeletion), strconv.FormatBool(n.Nominated(snap.Time)))
		for _, p := range n.Pods {
			pod(p)
		}
	}
	for _, p := range snap.PendingPods {
		pod(p)
	}
	// CapacityBuffers' placeholders have no resource version; their UID
	// (the buffer's, numbered) and requests stand for what a decision
	// reads of them.
	for _, p := range snap.BufferPods {
		write("buffer", p.Namespace, p.Name, string(p.UID), resources.PodVector(p).String())
	}
	for _, o := range snap.NodePools {
		write("nodepool", o.Name, o.ResourceVersion)
	}
	for _, o := range snap.NodeClasses {
		write("nodeclass", o.Name, o.ResourceVersion)
	}
	for _, o := range snap.DaemonSets {
		write("daemonset", o.Namespace, o.Name, o.ResourceVersion)
	}
	// LimitRanges shape the DaemonSets' overhead on a replacement.
	for _, o := range snap.LimitRanges {
		write("limitrange", o.Namespace, o.Name, o.ResourceVersion)
	}
	for _, o := range snap.PDBs {
		write("pdb", o.Namespace, o.Name, o.ResourceVersion)
	}
	for _, pool := range slices.Sorted(maps.Keys(remaining)) {
		for _, r := range slices.Sorted(maps.Keys(remaining[pool])) {
			write("remaining", pool, string(r), strconv.Itoa(remaining[pool][r]))
		}
	}
	return h.Sum64()
}
