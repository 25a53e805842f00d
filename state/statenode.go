package state

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// StateNode is a Node and the NodeClaim it was launched for, joined by
// providerID. Node is nil while the NodeClaim is in flight; NodeClaim is nil
// for a node that stevedore does not manage. At least one is set.
type StateNode struct {
	Node      *corev1.Node
	NodeClaim *karpv1.NodeClaim
	// Pods bound to the node (spec.nodeName), sorted by namespace and name;
	// finished pods are not kept.
	Pods []*corev1.Pod
	// MarkedForDeletion is set while a disruption command takes it away.
	MarkedForDeletion bool
	// NominatedUntil is when its nomination ends, or that of a pod counted
	// in NominatedPods if later; zero when never nominated.
	NominatedUntil time.Time
	// Daemons are the DaemonSet pods that a managed node still starting (in
	// flight, or registered and not initialized) will run but does not have
	// yet, as the pods that stand for their DaemonSets (see
	// Snapshot.DaemonSetPods): one per DaemonSet that tolerates its taints
	// and admits its labels or requirements.
	Daemons []*corev1.Pod
	// NominatedPods are the pending pods nominated to it whose nomination
	// holds (see Cluster.NominatePod), by namespace and name; they fit
	// beside Pods and Daemons.
	NominatedPods []*corev1.Pod
	// podRequests is the sum of Pods' requests when podRequestsKnown (the
	// Cluster memoizes it per pod list; see PodRequests).
	podRequests      resources.Vector
	podRequestsKnown bool
}

// PodRequests returns the sum of the requests of Pods (not Daemons or
// NominatedPods). A StateNode from a Snapshot knows it; one built by hand
// adds the requests up. The result is the caller's to modify.
func (n *StateNode) PodRequests() resources.Vector {
	if n.podRequestsKnown {
		return n.podRequests.Clone()
	}
	var v resources.Vector
	for _, p := range n.Pods {
		v.Add(resources.PodVector(p))
	}
	return v
}

// Name is the node's name, or the NodeClaim's while it is in flight.
func (n *StateNode) Name() string {
	if n.Node != nil {
		return n.Node.Name
	}
	return n.NodeClaim.Name
}

// ProviderID is the cloud's identifier of the instance, empty until launched.
func (n *StateNode) ProviderID() string {
	if n.Node != nil && n.Node.Spec.ProviderID != "" {
		return n.Node.Spec.ProviderID
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Status.ProviderID
	}
	return ""
}

// InFlight reports whether the NodeClaim has no Node yet.
func (n *StateNode) InFlight() bool { return n.Node == nil }

// Managed reports whether stevedore launched it (it has a NodeClaim).
func (n *StateNode) Managed() bool { return n.NodeClaim != nil }

// NodePool is the NodePool it belongs to; empty for unmanaged nodes.
func (n *StateNode) NodePool() string {
	if n.Node != nil {
		if p := n.Node.Labels[wellknown.LabelNodePool]; p != "" {
			return p
		}
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Labels[wellknown.LabelNodePool]
	}
	return ""
}

// Labels are the Node's labels; in flight, the NodeClaim's labels and the
// values its requirements pin to one value, which the node will carry.
func (n *StateNode) Labels() map[string]string {
	if n.Node != nil {
		return maps.Clone(n.Node.Labels)
	}
	labels := n.Requirements().Labels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, n.NodeClaim.Labels)
	return labels
}

// Requirements describe what an in-flight node will look like: the
// NodeClaim's requirements and labels. For a registered node they are its
// labels.
func (n *StateNode) Requirements() requirements.Requirements {
	if n.Node != nil {
		return requirements.FromLabels(n.Node.Labels)
	}
	return claimRequirements(n.NodeClaim)
}

// claimRequirements returns a NodeClaim's requirements intersected with its
// labels. Requirements the API server let through but that do not parse
// fall back to the labels alone.
func claimRequirements(nc *karpv1.NodeClaim) requirements.Requirements {
	labels := requirements.FromLabels(nc.Labels)
	exprs := make([]requirements.Expression, 0, len(nc.Spec.Requirements))
	for _, r := range nc.Spec.Requirements {
		exprs = append(exprs, requirements.Expression{Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues})
	}
	reqs, err := requirements.FromExpressions(exprs)
	if err != nil {
		return labels
	}
	return reqs.Intersect(labels)
}

// Taints are the taints that pods placed on it must tolerate. In flight,
// they are the NodeClaim's taints (startup taints are left out: they go away
// by themselves). On a managed node that is not initialized yet, the
// NodeClaim's startup taints and the taints every new node carries for a
// while (not-ready, unreachable, uninitialized, unregistered, readiness.k8s.io/*)
// are left out for the same reason.
func (n *StateNode) Taints() []corev1.Taint {
	if n.Node == nil {
		return slices.Clone(n.NodeClaim.Spec.Taints)
	}
	if n.NodeClaim == nil || n.Initialized() {
		return slices.Clone(n.Node.Spec.Taints)
	}
	var out []corev1.Taint
	for _, t := range n.Node.Spec.Taints {
		if ephemeralTaint(t) || slices.ContainsFunc(n.NodeClaim.Spec.StartupTaints, func(st corev1.Taint) bool { return st.MatchTaint(&t) }) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func ephemeralTaint(t corev1.Taint) bool {
	switch t.Key {
	case wellknown.TaintKeyNotReady, wellknown.TaintKeyUnreachable, wellknown.TaintKeyUninitialized, wellknown.TaintKeyUnregistered:
		return true
	}
	return strings.HasPrefix(t.Key, wellknown.TaintKeyPrefixReadiness)
}

// Initialized reports whether a managed node has finished starting up
// (its NodeClaim is Initialized, or the node carries karpenter.sh/initialized).
// Unmanaged nodes count as initialized once they exist.
func (n *StateNode) Initialized() bool {
	if n.Node == nil {
		return false
	}
	if n.NodeClaim == nil {
		return true
	}
	return n.Node.Labels[wellknown.LabelInitialized] == wellknown.LabelValueTrue ||
		meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, karpv1.ConditionTypeInitialized)
}

// Allocatable is what pods may request on it: the Node's allocatable, or,
// in flight, the NodeClaim's status.allocatable; before the launch has
// reported it, the NodeClaim's resource requests, which the instance it gets
// will at least provide.
func (n *StateNode) Allocatable() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Allocatable) > 0 {
		return n.Node.Status.Allocatable
	}
	if n.NodeClaim != nil {
		if len(n.NodeClaim.Status.Allocatable) > 0 {
			return n.NodeClaim.Status.Allocatable
		}
		return n.NodeClaim.Spec.Resources.Requests
	}
	return nil
}

// Capacity is the machine's capacity, as counted against NodePool limits,
// with the same fallbacks as Allocatable.
func (n *StateNode) Capacity() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Capacity) > 0 {
		return n.Node.Status.Capacity
	}
	if n.NodeClaim != nil && len(n.NodeClaim.Status.Capacity) > 0 {
		return n.NodeClaim.Status.Capacity
	}
	return n.Allocatable()
}

// Cordoned reports whether the Node is marked unschedulable.
func (n *StateNode) Cordoned() bool { return n.Node != nil && n.Node.Spec.Unschedulable }

// Deleting reports whether the Node or the NodeClaim is being deleted.
func (n *StateNode) Deleting() bool {
	return (n.Node != nil && n.Node.DeletionTimestamp != nil) ||
		(n.NodeClaim != nil && n.NodeClaim.DeletionTimestamp != nil)
}

// Unschedulable reports whether it takes no new pods: cordoned, marked for
// deletion or being deleted.
func (n *StateNode) Unschedulable() bool {
	return n.Cordoned() || n.MarkedForDeletion || n.Deleting()
}

// Nominated reports whether it is nominated at now.
func (n *StateNode) Nominated(now time.Time) bool { return n.NominatedUntil.After(now) }

// launched reports whether a NodeClaim's Launched condition is true.
func launched(nc *karpv1.NodeClaim) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
}
