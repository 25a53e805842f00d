package state

import (
	"cmp"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Snapshot is the cluster at one moment. Later updates to the Cluster do not
// change it. Every slice is sorted by name (namespace first where there is
// one), so that decisions made from it do not depend on map order. The
// objects it points to are shared with the Cluster and must not be modified.
type Snapshot struct {
	// Time is the moment it was taken; nominations are judged against it.
	Time time.Time
	// Nodes are the registered nodes and in-flight NodeClaims, by Name().
	Nodes []*StateNode
	// PendingPods are the pods not bound to a node (provisionable or not).
	PendingPods []*corev1.Pod
	// BufferPods are the CapacityBuffers' placeholder pods (see
	// Cluster.SetBufferPods): pending pods that no node will ever run, for
	// which capacity is kept.
	BufferPods  []*corev1.Pod
	NodePools   []*karpv1.NodePool
	NodeClasses []*awsv1.EC2NodeClass
	// NodeOverlays adjust the instance types' prices and capacity; none
	// unless the NodeOverlay feature gate is on.
	NodeOverlays []*v1alpha1.NodeOverlay
	DaemonSets   []*appsv1.DaemonSet
	// DaemonSetPods hold, for each of DaemonSets in its order, the pod that
	// stands for it when a node is sized: its newest live pod, else its
	// template with the namespace's LimitRanges applied (see
	// workloads.DaemonSetPod).
	DaemonSetPods []*corev1.Pod
	LimitRanges   []*corev1.LimitRange
	PDBs          []*policyv1.PodDisruptionBudget
	Namespaces    []*corev1.Namespace
	nodeIndex     map[string]int
	// nominated are the pending pods counted on a node by their
	// nomination (StateNode.NominatedPods).
	nominated map[types.NamespacedName]struct{}
	pvcs      map[types.NamespacedName]*corev1.PersistentVolumeClaim
	pvs       map[string]*corev1.PersistentVolume
}

// Snapshot returns the cluster as it is now. A snapshot is read-only: the
// callers that take one at the same time with no change recorded in between
// (see Changes), several controllers in one instant of a simulation, share
// the one taken first.
func (c *Cluster) Snapshot(now time.Time) Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last := &c.lastSnapshot; last.taken && last.changes == c.changes && last.snap.Time.Equal(now) {
		return last.snap
	}
	s := c.snapshotLocked(now)
	c.lastSnapshot = lastSnapshot{snap: s, changes: c.changes, taken: true}
	return s
}

// lastSnapshot is the snapshot Snapshot took last, with the change count it
// was taken at.
type lastSnapshot struct {
	snap    Snapshot
	changes uint64
	taken   bool
}

func (c *Cluster) snapshotLocked(now time.Time) Snapshot {
	s := Snapshot{
		Time:         now,
		PendingPods:  c.sortedPods("", c.pending),
		BufferPods:   c.sortedBufferPods(),
		NodePools:    sortedValues(c.nodePools, clusterScoped),
		NodeClasses:  sortedValues(c.nodeClasses, clusterScoped),
		NodeOverlays: sortedValues(c.nodeOverlays, clusterScoped),
		DaemonSets:   sortedValues(c.daemonSets, namespaced),
		PDBs:         sortedValues(c.pdbs, namespaced),
		Namespaces:   sortedValues(c.namespaces, clusterScoped),
		LimitRanges:  sortedValues(c.limitRanges, namespaced),
		pvcs:         maps.Clone(c.pvcs),
		pvs:          maps.Clone(c.pvs),
	}
	s.DaemonSetPods = c.daemonSetPods(s.DaemonSets, s.LimitRanges)
	s.Nodes = c.stateNodes(nil)
	s.nodeIndex = make(map[string]int, len(s.Nodes))
	for i, sn := range s.Nodes {
		if sn.Node != nil {
			sn.Pods = c.sortedPods(sn.Node.Name, c.podsByNode[sn.Node.Name])
			sn.podRequests, sn.podRequestsKnown = c.requestsOf(sn.Node.Name, sn.Pods), true
		}
		names := sn.names()
		sn.NominatedUntil = c.nominatedUntil(names, sn)
		for _, n := range names {
			if _, dup := s.nodeIndex[n]; !dup {
				s.nodeIndex[n] = i
			}
		}
	}
	var daemons []daemon
	loaded := false
	for _, sn := range s.Nodes {
		if !sn.starting() {
			continue
		}
		if !loaded {
			daemons, loaded = daemonsOf(s.DaemonSetPods), true
		}
		sn.Daemons = expectedDaemons(sn, daemons)
	}
	s.nominated = c.placeNominations(&s)
	return s
}

// stateNodes returns the cluster's nodes as a Snapshot lists them, those
// that keep accepts (all when it is nil): each NodeClaim with the Node its
// providerID joins it to, then each Node joined to none, sorted by name,
// with MarkedForDeletion set. The caller holds c.mu.
func (c *Cluster) stateNodes(keep func(*StateNode) bool) []*StateNode {
	var out []*StateNode
	joined := map[string]bool{}
	for _, nc := range c.nodeClaims {
		sn := &StateNode{NodeClaim: nc}
		if id := nc.Status.ProviderID; id != "" {
			if name, ok := c.nodeByProviderID[id]; ok {
				sn.Node = c.nodes[name]
				joined[name] = true
			}
		}
		if keep == nil || keep(sn) {
			out = append(out, sn)
		}
	}
	for name, n := range c.nodes {
		if sn := (&StateNode{Node: n}); !joined[name] && (keep == nil || keep(sn)) {
			out = append(out, sn)
		}
	}
	slices.SortFunc(out, func(a, b *StateNode) int {
		return cmp.Or(cmp.Compare(a.Name(), b.Name()), cmp.Compare(claimName(a), claimName(b)))
	})
	for _, sn := range out {
		sn.MarkedForDeletion = c.marked(sn.names())
	}
	return out
}

// names are the names marks and nominations may be recorded under: the
// node's name and, when it differs, its NodeClaim's.
func (n *StateNode) names() []string {
	names := []string{n.Name()}
	if n.Node != nil && n.NodeClaim != nil && n.NodeClaim.Name != n.Node.Name {
		names = append(names, n.NodeClaim.Name)
	}
	return names
}

// claimName is the NodeClaim's name, empty for unmanaged nodes; it breaks
// ties in the order of a Snapshot's nodes.
func claimName(n *StateNode) string {
	if n.NodeClaim == nil {
		return ""
	}
	return n.NodeClaim.Name
}

// Node returns the StateNode with the node name or NodeClaim name given.
func (s Snapshot) Node(name string) (*StateNode, bool) {
	i, ok := s.nodeIndex[name]
	if !ok {
		return nil, false
	}
	return s.Nodes[i], true
}

// PersistentVolumeClaim returns the PVC, if the Cluster knew it.
func (s Snapshot) PersistentVolumeClaim(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
	pvc, ok := s.pvcs[key(namespace, name)]
	return pvc, ok
}

// PersistentVolume returns the PV, if the Cluster knew it.
func (s Snapshot) PersistentVolume(name string) (*corev1.PersistentVolume, bool) {
	pv, ok := s.pvs[name]
	return pv, ok
}

// ProvisionablePods returns the pending pods that IsProvisionable accepts,
// except those counted on a node by their nomination (see
// Cluster.NominatePod): capacity is already on its way for them.
func (s Snapshot) ProvisionablePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range s.PendingPods {
		if _, ok := s.nominated[key(p.Namespace, p.Name)]; ok {
			continue
		}
		if IsProvisionable(p) {
			out = append(out, p)
		}
	}
	return out
}

// sortedPods returns the pods of keys, sorted, from the memo under node
// when it holds them. The slice's capacity is its length, so that a caller
// appending to it copies rather than writes into the shared array. The
// caller holds c.mu.
func (c *Cluster) sortedPods(node string, keys map[types.NamespacedName]struct{}) []*corev1.Pod {
	if len(keys) == 0 {
		return nil
	}
	if out, ok := c.podLists[node]; ok {
		return out
	}
	out := make([]*corev1.Pod, 0, len(keys))
	for k := range keys {
		out = append(out, c.pods[k])
	}
	slices.SortFunc(out, namespaced)
	out = out[:len(out):len(out)]
	c.podLists[node] = out
	return out
}

// requestsOf returns the sum of the requests of pods, the node's memoized
// pod list, from the memo when it holds it. The caller holds c.mu.
func (c *Cluster) requestsOf(node string, pods []*corev1.Pod) resources.Vector {
	if len(pods) == 0 {
		return resources.Vector{}
	}
	if v, ok := c.podRequests[node]; ok {
		return v
	}
	var v resources.Vector
	for _, p := range pods {
		v.Add(resources.PodVector(p))
	}
	c.podRequests[node] = v
	return v
}

func clusterScoped[T metav1.Object](a, b T) int { return cmp.Compare(a.GetName(), b.GetName()) }

func namespaced[T metav1.Object](a, b T) int {
	return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}

func sortedValues[K comparable, T metav1.Object](m map[K]T, order func(a, b T) int) []T {
	if len(m) == 0 {
		return nil
	}
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, order)
	return out
}

// nodesResource is the pseudo-resource NodePool limits count nodes with.
const nodesResource corev1.ResourceName = "nodes"

// InUse returns the capacity of a NodePool's nodes and in-flight NodeClaims,
// and their number as "nodes", as counted against its limits.
func (s Snapshot) InUse(nodePool string) corev1.ResourceList {
	out := corev1.ResourceList{}
	count := int64(0)
	for _, sn := range s.Nodes {
		if sn.NodePool() != nodePool {
			continue
		}
		count++
		for name, q := range sn.Capacity() {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	out[nodesResource] = *resource.NewQuantity(count, resource.DecimalSI)
	return out
}
