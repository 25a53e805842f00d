package explain

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// PodDetails are the facts behind a pod's verdict.
type PodDetails struct {
	Namespace string `json:"namespace"`
	Phase     string `json:"phase,omitempty"`
	// Node is the node it is bound to or would be placed on, or the
	// in-flight NodeClaim it would land on.
	Node string `json:"node,omitempty"`
	// NodePool of that node, or of the NodeClaim that would be launched.
	NodePool string `json:"nodePool,omitempty"`
	// InFlight is true when Node is a NodeClaim whose node has not
	// registered yet.
	InFlight bool `json:"inFlight,omitempty"`
	// NewNodeClaim is the NodeClaim the provisioner would launch for it.
	NewNodeClaim *NewNodeClaim `json:"newNodeClaim,omitempty"`
	// Pending is how many pods the provisioner packs together with it.
	Pending int `json:"pending,omitempty"`
}

// NewNodeClaim is a NodeClaim the packer proposes.
type NewNodeClaim struct {
	NodePool string `json:"nodePool"`
	// InstanceTypes it may launch as, cheapest first.
	InstanceTypes []string `json:"instanceTypes"`
	CapacityTypes []string `json:"capacityTypes"`
	Zones         []string `json:"zones"`
	// PricePerHour of the cheapest available offering among InstanceTypes.
	PricePerHour float64 `json:"pricePerHour"`
	// Requests of its pods plus DaemonSet overhead.
	Requests string `json:"requests"`
	// Pods placed on it, this one included.
	Pods []string `json:"pods"`
}

// Pod explains the pod namespace/name: the node it is bound to; or why it is
// pending — the packer's verdict for every NodePool, with the others pending
// pods packed alongside as the provisioner packs them; or which NodePool and
// instance types would take it.
func Pod(in Input, namespace, name string) (*Explanation, error) {
	snap := in.Snapshot
	pod, node := findPod(snap, namespace, name)
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s not found: it is neither pending nor bound to a node the cluster knows", namespace, name)
	}
	e := &Explanation{Kind: KindPod, Name: namespace + "/" + name, Time: snap.Time.UTC(), Notes: in.Notes,
		Pod: &PodDetails{Namespace: namespace, Phase: string(pod.Status.Phase)}}
	if pod.Spec.NodeName != "" {
		e.Verdict = VerdictBound
		e.Pod.Node = pod.Spec.NodeName
		e.Summary = fmt.Sprintf("Pod %s/%s is bound to node %s", namespace, name, pod.Spec.NodeName)
		if node != nil {
			e.Pod.NodePool = node.NodePool()
			e.Summary += " (" + describeNode(node) + ")"
		}
		e.Summary += "."
		return e, nil
	}
	if !state.IsProvisionable(pod) {
		code, msg := notProvisionable(pod)
		e.Verdict = VerdictNotProvisionable
		e.Summary = fmt.Sprintf("Pod %s/%s is pending, but stevedore does not provision for it: %s.", namespace, name, msg)
		e.Reasons = []Reason{{Code: code, Message: msg}}
		return e, nil
	}

	pods := snap.ProvisionablePods()
	pk := packer.Solve(packInput(in, pods))
	key := types.NamespacedName{Namespace: namespace, Name: name}
	e.Pod.Pending = len(pods)
	if pl, ok := findPlacement(pk.Placements, key); ok {
		e.Verdict = VerdictFitsExisting
		e.Pod.Node = pl.Node
		target, _ := snap.Node(pl.Node)
		if target != nil {
			e.Pod.NodePool = target.NodePool()
			e.Pod.InFlight = target.InFlight()
		}
		if e.Pod.InFlight {
			e.Summary = fmt.Sprintf("Pod %s/%s is pending and fits on NodeClaim %s (NodePool %s), which is launching: it will be scheduled there once the node registers.",
				namespace, name, pl.Node, e.Pod.NodePool)
		} else {
			e.Summary = fmt.Sprintf("Pod %s/%s is pending but fits on the existing node %s now; no new node is needed, and kube-scheduler should bind it at its next attempt.",
				namespace, name, pl.Node)
		}
		return e, nil
	}
	for _, claim := range pk.NodeClaims {
		if !slices.Contains(claim.Pods, key) {
			continue
		}
		e.Verdict = VerdictWouldLaunch
		e.Pod.NodePool = claim.NodePool
		e.Pod.NewNodeClaim = newNodeClaim(claim)
		others := len(claim.Pods) - 1
		e.Summary = fmt.Sprintf("Pod %s/%s is pending; the provisioner would launch a NodeClaim of NodePool %s for it", namespace, name, claim.NodePool)
		if others > 0 {
			e.Summary += fmt.Sprintf(" together with %d other pending pod(s)", others)
		}
		e.Summary += fmt.Sprintf(", from %d instance type(s) starting at $%.4f/h.", len(claim.InstanceTypes), claim.PricePerHour)
		return e, nil
	}
	for _, u := range pk.Ignored {
		if u.Pod == key {
			e.Verdict = VerdictIgnored
			e.Summary = fmt.Sprintf("Pod %s/%s is pending and the provisioner ignores it: %s.", namespace, name, strings.TrimSuffix(u.Reason, "."))
			e.Reasons = []Reason{{Code: VerdictIgnored, Message: u.Reason}}
			return e, nil
		}
	}
	e.Verdict = VerdictUnschedulable
	e.Summary = fmt.Sprintf("Pod %s/%s is pending and no node or NodePool can take it.", namespace, name)
	for _, u := range pk.Unschedulable {
		if u.Pod != key {
			continue
		}
		e.Summary = fmt.Sprintf("Pod %s/%s is pending and no node or NodePool can take it: %s.", namespace, name, strings.TrimSuffix(u.Reason, "."))
		for _, v := range u.NodePools {
			e.Reasons = append(e.Reasons, Reason{Code: v.Code, NodePool: v.NodePool, Message: v.Message})
		}
	}
	for _, s := range in.Skipped {
		e.Reasons = append(e.Reasons, Reason{Code: s.Reason, NodePool: s.NodePool, Message: "the provisioner leaves this NodePool out: " + s.Message})
	}
	if len(snap.NodePools) == 0 {
		e.Reasons = append(e.Reasons, Reason{Code: CodeNoNodePools, Message: "there is no NodePool: create one so that stevedore can launch nodes"})
	}
	slices.SortStableFunc(e.Reasons, func(a, b Reason) int { return strings.Compare(a.NodePool, b.NodePool) })
	return e, nil
}

// packInput is the packer's input for pods, built as the provisioner builds
// it.
func packInput(in Input, pods []*corev1.Pod) packer.Input {
	pi := in.Snapshot.PackerInput(pods, in.Pools, in.Options.PreferencePolicy)
	pi.MaxInstanceTypes = in.Options.MaxInstanceTypes
	pi.MinValuesPolicy = in.Options.MinValuesPolicy
	return pi
}

// findPod returns the pod, pending or bound, and the node it is bound to.
func findPod(snap state.Snapshot, namespace, name string) (*corev1.Pod, *state.StateNode) {
	for _, p := range snap.PendingPods {
		if p.Namespace == namespace && p.Name == name {
			return p, nil
		}
	}
	for _, n := range snap.Nodes {
		for _, p := range n.Pods {
			if p.Namespace == namespace && p.Name == name {
				return p, n
			}
		}
	}
	return nil, nil
}

func findPlacement(pls []packer.Placement, key types.NamespacedName) (packer.Placement, bool) {
	for _, pl := range pls {
		if pl.Pod == key {
			return pl, true
		}
	}
	return packer.Placement{}, false
}

// notProvisionable says why state.IsProvisionable refuses a pending pod, in
// the order it checks.
func notProvisionable(pod *corev1.Pod) (code, message string) {
	switch {
	case pod.Status.NominatedNodeName != "":
		return CodePreempting, fmt.Sprintf("kube-scheduler is preempting lower-priority pods on node %s to make room for it (status.nominatedNodeName)", pod.Status.NominatedNodeName)
	case pod.DeletionTimestamp != nil:
		return CodeTerminating, "it is being deleted"
	case hasOwner(pod, "apps", "DaemonSet"):
		return CodeDaemonSetPod, "it belongs to a DaemonSet, whose pods follow nodes rather than ask for them"
	case hasOwner(pod, "", "Node"):
		return CodeStaticPod, "it is a static pod, owned by its node"
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return CodeAwaitingScheduler, fmt.Sprintf("kube-scheduler has not marked it unschedulable (PodScheduled is %s, reason %q); stevedore provisions only for pods the scheduler could not place",
				c.Status, c.Reason)
		}
	}
	return CodeAwaitingScheduler, "kube-scheduler has not tried to place it yet (no PodScheduled condition); stevedore provisions only for pods the scheduler could not place"
}

func hasOwner(pod *corev1.Pod, group, kind string) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind != kind {
			continue
		}
		if gv, err := schema.ParseGroupVersion(o.APIVersion); err == nil && gv.Group == group {
			return true
		}
	}
	return false
}

func newNodeClaim(c packer.NodeClaim) *NewNodeClaim {
	out := &NewNodeClaim{
		NodePool:      c.NodePool,
		InstanceTypes: append([]string(nil), c.InstanceTypes...),
		CapacityTypes: append([]string(nil), c.CapacityTypes...),
		Zones:         append([]string(nil), c.Zones...),
		PricePerHour:  c.PricePerHour,
		Requests:      formatResources(c.Requests.ResourceList()),
	}
	for _, p := range c.Pods {
		out.Pods = append(out.Pods, p.String())
	}
	slices.Sort(out.Pods)
	return out
}

// describeNode sums a node up: its NodePool and offering, or that stevedore
// does not manage it.
func describeNode(n *state.StateNode) string {
	l := n.Labels()
	offering := strings.TrimSpace(strings.Join(nonEmpty(l[wellknown.LabelInstanceType], l[wellknown.LabelCapacityType]), " "))
	if zone := l[wellknown.LabelTopologyZone]; zone != "" {
		if offering != "" {
			offering += " in "
		}
		offering += zone
	}
	var parts []string
	if n.Managed() {
		parts = append(parts, "NodePool "+n.NodePool())
	} else {
		parts = append(parts, "not managed by stevedore")
	}
	if offering != "" {
		parts = append(parts, offering)
	}
	return strings.Join(parts, ", ")
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// formatResources renders a resource list as name=quantity pairs sorted by
// name, with memory in binary units where it divides evenly.
func formatResources(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for k := range list {
		names = append(names, string(k))
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		q := list[corev1.ResourceName(k)]
		if v, ok := q.AsInt64(); ok && v >= 1<<20 && (k == string(corev1.ResourceMemory) || k == string(corev1.ResourceEphemeralStorage)) {
			q = *resource.NewQuantity(v, resource.BinarySI)
		}
		parts = append(parts, k+"="+q.String())
	}
	return strings.Join(parts, ", ")
}
