package state

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// Relaxations counts the recorded changes that could let a node be
// consolidated where it could not before. Most changes cannot: a pod bound
// to a node, a new pending pod, a pod's status moving on, a NodeClaim's
// lastPodEventTime, a node nominated for pods — they only take room or keep
// things as they were. Everything else counts: a pod deleted, finished or
// moved, a pod's labels, annotations or requests changed, a pod no longer
// Ready (a PDB may exempt it), a node or NodeClaim added, deleted or changed
// in anything but its status heartbeat, a PodDisruptionBudget starting to
// allow disruptions or changing its spec, any NodePool, EC2NodeClass,
// DaemonSet, Namespace or volume change, and deletion marks. Changes()
// counts them all.
//
// While Relaxations has not moved, consolidation that found nothing would
// find nothing again, but for what depends on the time or on the cloud
// (prices, offerings, budget windows, expiring nominations and
// do-not-disrupt durations), which the caller must check itself. The
// packer's heuristics are not strictly monotonic, so a caller should still
// look again now and then.
func (c *Cluster) Relaxations() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relaxations
}

// podRelaxes reports whether replacing old with p (old nil: a new pod)
// could make room or lift a block.
func podRelaxes(old, p *corev1.Pod) bool {
	if old == nil {
		return false
	}
	if old.Spec.NodeName != p.Spec.NodeName && old.Spec.NodeName != "" {
		return true
	}
	if (old.DeletionTimestamp == nil) != (p.DeletionTimestamp == nil) {
		return true
	}
	if PodReady(old) && !PodReady(p) {
		return true
	}
	if !equality.Semantic.DeepEqual(old.Labels, p.Labels) || !equality.Semantic.DeepEqual(old.Annotations, p.Annotations) {
		return true
	}
	if len(old.Spec.Containers) != len(p.Spec.Containers) || len(old.Spec.InitContainers) != len(p.Spec.InitContainers) {
		return true
	}
	for i := range old.Spec.Containers {
		if !equality.Semantic.DeepEqual(old.Spec.Containers[i].Resources, p.Spec.Containers[i].Resources) {
			return true
		}
	}
	for i := range old.Spec.InitContainers {
		if !equality.Semantic.DeepEqual(old.Spec.InitContainers[i].Resources, p.Spec.InitContainers[i].Resources) {
			return true
		}
	}
	return !equality.Semantic.DeepEqual(old.Spec.Resources, p.Spec.Resources) ||
		!equality.Semantic.DeepEqual(old.Spec.Overhead, p.Spec.Overhead)
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeRelaxes reports whether replacing old with n (old nil: a new node)
// could make room or lift a block: anything but a status heartbeat.
func nodeRelaxes(old, n *corev1.Node) bool {
	if old == nil {
		return true
	}
	if specChanged(old, n) || !equality.Semantic.DeepEqual(old.Spec, n.Spec) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) {
		return true
	}
	if len(old.Status.Conditions) != len(n.Status.Conditions) {
		return true
	}
	for i := range old.Status.Conditions {
		a, b := old.Status.Conditions[i], n.Status.Conditions[i]
		if a.Type != b.Type || a.Status != b.Status {
			return true
		}
	}
	return false
}

// nodeClaimRelaxes reports whether replacing old with nc (old nil: a new
// NodeClaim) could make room or lift a block: anything but its
// lastPodEventTime, condition heartbeats, Consolidatable turning off and
// resource version.
func nodeClaimRelaxes(old, nc *karpv1.NodeClaim) bool {
	if old == nil {
		return true
	}
	if specChanged(old, nc) || !equality.Semantic.DeepEqual(old.Spec, nc.Spec) {
		return true
	}
	a, b := old.Status, nc.Status
	if a.ProviderID != b.ProviderID || a.NodeName != b.NodeName || a.ImageID != b.ImageID ||
		!equality.Semantic.DeepEqual(a.Allocatable, b.Allocatable) || !equality.Semantic.DeepEqual(a.Capacity, b.Capacity) {
		return true
	}
	if len(a.Conditions) != len(b.Conditions) {
		return true
	}
	for i := range a.Conditions {
		was, is := a.Conditions[i], b.Conditions[i]
		if was.Type != is.Type {
			return true
		}
		// A pod event turns Consolidatable off for consolidateAfter: that
		// only keeps the node out, as a candidate and as a destination.
		if was.Status != is.Status && (is.Type != karpv1.ConditionTypeConsolidatable || is.Status == metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

// specChanged reports whether an object changed in what of its metadata a
// decision reads, or in its spec (which moves its generation). It is the
// relaxes of remember for kinds whose status a decision does not read
// (NodePools, DaemonSets) or that have none it reads (Namespaces): a status
// update, which DaemonSets and NodePools get with every pod or node, is not
// a relaxation.
func specChanged[T metav1.Object](old, obj T) bool {
	return old.GetUID() != obj.GetUID() || old.GetGeneration() != obj.GetGeneration() ||
		(old.GetDeletionTimestamp() == nil) != (obj.GetDeletionTimestamp() == nil) ||
		!equality.Semantic.DeepEqual(old.GetLabels(), obj.GetLabels()) ||
		!equality.Semantic.DeepEqual(old.GetAnnotations(), obj.GetAnnotations())
}

// anyChange is the relaxes of remember for kinds that change rarely: every
// new version counts.
func anyChange[T metav1.Object](_, _ T) bool { return true }
