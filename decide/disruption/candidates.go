package disruption

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// AnnotationPodDeletionCost is the ReplicaSet controller's hint of which pods
// to remove first; it also weighs a pod's eviction cost.
const AnnotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// podRef is a pod that would have to move, with its eviction cost.
type podRef struct {
	pod  *corev1.Pod
	cost float64
}

// EvictionCost is how much evicting the pod hurts, in the units Karpenter
// uses: 1, plus the pod-deletion-cost annotation scaled by 2^-27, plus the
// priority scaled by 2^-25, clamped to [-10, 10]. A pod at zero or below
// does not keep its node from counting as empty.
func EvictionCost(pod *corev1.Pod) float64 {
	cost := 1.0
	if v, ok := pod.Annotations[AnnotationPodDeletionCost]; ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			cost += n / math.Pow(2, 27)
		}
	}
	if pod.Spec.Priority != nil {
		cost += float64(*pod.Spec.Priority) / math.Pow(2, 25)
	}
	return math.Max(-10, math.Min(10, cost))
}

// Reschedulable reports whether pod has to move elsewhere when its node
// goes: it is bound, neither finished nor terminating, and neither a
// DaemonSet's pod (those follow nodes) nor a static pod (owned by its Node).
func Reschedulable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName == "" || !pod.DeletionTimestamp.IsZero() {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "DaemonSet" && (o.APIVersion == "apps/v1" || o.APIVersion == "extensions/v1beta1") {
			return false
		}
		if o.Kind == "Node" && o.APIVersion == "v1" {
			return false
		}
	}
	return true
}

// activePod reports whether pod is neither finished nor terminating.
func activePod(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp.IsZero() && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// evictable reports whether draining the node would evict pod through the
// Eviction API, so that its PodDisruptionBudgets matter: it is active, not
// a static pod (the kubelet owns those) and does not tolerate the
// karpenter.sh/disrupted taint (such pods are left to run until the node
// goes). DaemonSet pods are evictable.
func evictable(pod *corev1.Pod) bool {
	if !activePod(pod) {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "Node" && o.APIVersion == "v1" {
			return false
		}
	}
	for _, t := range pod.Spec.Tolerations {
		if t.Effect != "" && t.Effect != wellknown.TaintEffectDisrupted {
			continue
		}
		switch {
		case t.Key == "" && t.Operator == corev1.TolerationOpExists:
			return false
		case t.Key == wellknown.TaintKeyDisrupted && (t.Operator == corev1.TolerationOpExists || t.Value == ""):
			return false
		}
	}
	return true
}

// DoNotDisruptActive reports whether a pod's karpenter.sh/do-not-disrupt
// annotation protects it at now: "true", or a duration not yet elapsed since
// the pod started. ok is false for a value that is neither (it is ignored).
func DoNotDisruptActive(pod *corev1.Pod, now time.Time) (active, ok bool) {
	v, has := pod.Annotations[wellknown.AnnotationDoNotDisrupt]
	if !has {
		return false, true
	}
	if v == "true" {
		return true, true
	}
	end, ok := DoNotDisruptEnds(pod)
	if !ok {
		return false, false
	}
	return now.Before(end), true
}

// DoNotDisruptEnds returns when a pod's karpenter.sh/do-not-disrupt
// annotation, a duration, stops protecting it: that long after the pod
// started. ok is false when the annotation is not a valid duration.
func DoNotDisruptEnds(pod *corev1.Pod) (end time.Time, ok bool) {
	d, err := time.ParseDuration(pod.Annotations[wellknown.AnnotationDoNotDisrupt])
	if err != nil || d <= 0 {
		return time.Time{}, false
	}
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	return start.Add(d), true
}

// pdbIndex finds the PodDisruptionBudgets that select a pod. Every pod of
// every candidate is matched on every decision, so a namespace's budgets
// whose selectors are matchLabels alone (most are) are filed under one of
// their labels, and a pod is matched only against the budgets filed under
// labels it carries.
type pdbIndex struct {
	byNamespace map[string]*namespacePDBs
}

type namespacePDBs struct {
	all []compiledPDB // in the order given
	// filed holds, per label of an equality-only selector (its first key
	// in sorted order, with the value), the indexes of those budgets in
	// all; keys are the distinct keys they are filed under, sorted.
	filed map[labelPair][]int
	keys  []string
	// others are the indexes of the remaining budgets, matched with their
	// selectors.
	others []int
}

type labelPair struct{ key, value string }

type compiledPDB struct {
	pdb *policyv1.PodDisruptionBudget
	sel labels.Selector
}

func newPDBIndex(pdbs []*policyv1.PodDisruptionBudget) pdbIndex {
	idx := pdbIndex{byNamespace: map[string]*namespacePDBs{}}
	for _, p := range pdbs {
		if p.Spec.Selector == nil {
			continue // selects no pod
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			continue // the API server rejects these; nothing to enforce
		}
		ns := idx.byNamespace[p.Namespace]
		if ns == nil {
			ns = &namespacePDBs{filed: map[labelPair][]int{}}
			idx.byNamespace[p.Namespace] = ns
		}
		c := compiledPDB{pdb: p, sel: sel}
		i := len(ns.all)
		if ml := p.Spec.Selector.MatchLabels; len(p.Spec.Selector.MatchExpressions) == 0 && len(ml) > 0 {
			first := slices.Min(slices.Collect(maps.Keys(ml)))
			pair := labelPair{first, ml[first]}
			if !slices.Contains(ns.keys, first) {
				ns.keys = append(ns.keys, first)
				slices.Sort(ns.keys)
			}
			ns.filed[pair] = append(ns.filed[pair], i)
		} else {
			ns.others = append(ns.others, i)
		}
		ns.all = append(ns.all, c)
	}
	return idx
}

// selecting returns the budgets that select pod, in the order newPDBIndex
// was given them.
func (x pdbIndex) selecting(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	ns := x.byNamespace[pod.Namespace]
	if ns == nil {
		return nil
	}
	var buf [4]int
	hits := buf[:0]
	for _, k := range ns.keys {
		v, ok := pod.Labels[k]
		if !ok {
			continue
		}
		for _, i := range ns.filed[labelPair{k, v}] {
			if ns.all[i].sel.Matches(labels.Set(pod.Labels)) {
				hits = append(hits, i)
			}
		}
	}
	for _, i := range ns.others {
		if ns.all[i].sel.Matches(labels.Set(pod.Labels)) {
			hits = append(hits, i)
		}
	}
	if len(hits) == 0 {
		return nil
	}
	slices.Sort(hits)
	out := make([]*policyv1.PodDisruptionBudget, len(hits))
	for j, i := range hits {
		out[j] = ns.all[i].pdb
	}
	return out
}

// blocking returns why evicting pod would be refused now, or "" when it
// would not: its only PDB allows no disruption (unless the pod is unhealthy
// and the PDB lets unhealthy pods go), or it matches several PDBs, which the
// eviction API refuses outright.
func (x pdbIndex) blocking(pod *corev1.Pod) (code, message string) {
	matched := x.selecting(pod)
	switch {
	case len(matched) > 1:
		return CodeMultiplePDBs, fmt.Sprintf("pod %s/%s matches %d PodDisruptionBudgets (%s, %s), which the eviction API refuses",
			pod.Namespace, pod.Name, len(matched), matched[0].Name, matched[1].Name)
	case len(matched) == 1:
		p := matched[0]
		if p.Status.DisruptionsAllowed > 0 {
			return "", ""
		}
		if !state.PodReady(pod) && p.Spec.UnhealthyPodEvictionPolicy != nil &&
			*p.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow {
			return "", ""
		}
		return CodePDBBlocked, fmt.Sprintf("PodDisruptionBudget %s/%s allows no disruption of pod %s", p.Namespace, p.Name, pod.Name)
	}
	return "", ""
}

// catalog looks up the price of a node's offering.
type catalog map[string]map[string]*packer.InstanceType // pool -> type -> type

func newCatalog(pools []packer.NodePool) catalog {
	c := catalog{}
	for i := range pools {
		m := map[string]*packer.InstanceType{}
		for _, it := range pools[i].InstanceTypes {
			m[it.Name] = it
		}
		c[pools[i].Name] = m
	}
	return c
}

// price returns what an offering costs, from the node's own NodePool or,
// when that no longer lists the type (its requirements changed), from any
// NodePool that does, in name order.
func (c catalog) price(pool, instanceType, zone, capacityType string) (float64, bool) {
	if p, ok := offeringPrice(c[pool][instanceType], zone, capacityType); ok {
		return p, true
	}
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if p, ok := offeringPrice(c[name][instanceType], zone, capacityType); ok {
			return p, true
		}
	}
	return 0, false
}

func offeringPrice(it *packer.InstanceType, zone, capacityType string) (float64, bool) {
	if it == nil {
		return 0, false
	}
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType {
			return o.PricePerHour, true
		}
	}
	return 0, false
}

// candidates returns the nodes that disruption methods may consider, and
// why every other node may not. Graceful blocks (do-not-disrupt pods and
// PDBs) are recorded on the candidate, not here: drift may ignore them.
func candidates(in *Input, pdbs pdbIndex, prices catalog, hosts map[string][]*corev1.Pod) ([]*Candidate, []Blocked) {
	snap := in.Snapshot
	now := snap.Time
	pools := make(map[string]*karpv1.NodePool, len(snap.NodePools))
	for _, np := range snap.NodePools {
		pools[np.Name] = np
	}
	var out []*Candidate
	var blocked []Blocked
	block := func(n *state.StateNode, code, msg string) {
		blocked = append(blocked, Blocked{Node: n.Name(), NodePool: n.NodePool(), Code: code, Message: msg})
	}
	for _, n := range snap.Nodes {
		switch {
		case !n.Managed():
			block(n, CodeUnmanaged, "stevedore did not launch this node")
			continue
		case n.InFlight():
			block(n, CodeNotRegistered, "its node has not registered yet")
			continue
		case !n.Initialized():
			block(n, CodeNotInitialized, "the node has not finished initializing")
			continue
		case n.Deleting() || n.MarkedForDeletion || disrupting(n.NodeClaim):
			block(n, CodeDeleting, "the node is already being disrupted or deleted")
			continue
		case n.Nominated(now):
			block(n, CodeNominated, fmt.Sprintf("pods are expected to land on it until %s", n.NominatedUntil.UTC().Format(time.RFC3339)))
			continue
		}
		np := pools[n.NodePool()]
		if np == nil || !np.DeletionTimestamp.IsZero() {
			block(n, CodeNoNodePool, fmt.Sprintf("NodePool %q does not exist", n.NodePool()))
			continue
		}
		if n.Node.Annotations[wellknown.AnnotationDoNotDisrupt] == "true" || n.NodeClaim.Annotations[wellknown.AnnotationDoNotDisrupt] == "true" {
			block(n, CodeDoNotDisruptNode, fmt.Sprintf("the node carries %s=true", wellknown.AnnotationDoNotDisrupt))
			continue
		}
		c := newCandidate(n, np, now, pdbs, prices)
		// Placeholders move with the node's pods; no PodDisruptionBudget
		// or do-not-disrupt annotation applies to them.
		for _, p := range hosts[n.Name()] {
			c.Pods = append(c.Pods, &podRef{pod: p, cost: bufferCost})
			c.RescheduleDisruptionCost += bufferCost
		}
		out = append(out, c)
	}
	return out, blocked
}

func newCandidate(n *state.StateNode, np *karpv1.NodePool, now time.Time, pdbs pdbIndex, prices catalog) *Candidate {
	l := n.Node.Labels
	c := &Candidate{
		Node:         n,
		NodePool:     np,
		InstanceType: l[wellknown.LabelInstanceType],
		CapacityType: l[wellknown.LabelCapacityType],
		Zone:         l[wellknown.LabelTopologyZone],
	}
	c.Price, c.PriceKnown = prices.price(np.Name, c.InstanceType, c.Zone, c.CapacityType)
	all := 0.0
	c.RescheduleDisruptionCost = 1
	for _, p := range n.Pods {
		all += EvictionCost(p)
		if Reschedulable(p) {
			ref := &podRef{pod: p, cost: EvictionCost(p)}
			c.Pods = append(c.Pods, ref)
			c.RescheduleDisruptionCost += math.Max(0, ref.cost)
		}
		if c.gracefulBlock != nil || !activePod(p) {
			continue
		}
		// Every active pod counts here, DaemonSet and static pods too, as
		// in Karpenter: their do-not-disrupt annotation keeps the node.
		active, valid := DoNotDisruptActive(p, now)
		if v, has := p.Annotations[wellknown.AnnotationDoNotDisrupt]; has && v != "true" && (!valid || p.Status.StartTime != nil) {
			dnd := DoNotDisruptPod{Pod: p, Value: v, Invalid: !valid, Active: active}
			dnd.Until, _ = DoNotDisruptEnds(p)
			c.doNotDisrupt = append(c.doNotDisrupt, dnd)
		}
		if active {
			c.gracefulBlock = &Blocked{Node: n.Name(), NodePool: np.Name, Code: CodeDoNotDisruptPod,
				Message: fmt.Sprintf("pod %s/%s carries %s=%s", p.Namespace, p.Name, wellknown.AnnotationDoNotDisrupt, p.Annotations[wellknown.AnnotationDoNotDisrupt])}
			continue
		}
		// PodDisruptionBudgets count for the pods that draining would
		// evict: not static pods, nor pods that tolerate the disrupted
		// taint; DaemonSet pods are evicted, so theirs count.
		if !evictable(p) {
			continue
		}
		if code, msg := pdbs.blocking(p); code != "" {
			c.gracefulBlock = &Blocked{Node: n.Name(), NodePool: np.Name, Code: code, Message: msg}
		}
	}
	c.DisruptionCost = all * lifetimeRemaining(n.NodeClaim, now)
	conds := n.NodeClaim.Status.Conditions
	if cond := meta.FindStatusCondition(conds, karpv1.ConditionTypeConsolidatable); cond != nil && cond.Status == metav1.ConditionTrue {
		c.Consolidatable = true
	}
	if cond := meta.FindStatusCondition(conds, karpv1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue {
		c.Drifted = true
		c.DriftReason = cond.Reason
		c.DriftedSince = cond.LastTransitionTime.UnixNano()
	}
	return c
}

// disrupting reports whether a disruption command already owns the
// NodeClaim (its DisruptionReason condition is set).
func disrupting(nc *karpv1.NodeClaim) bool {
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	return c != nil && c.Status == metav1.ConditionTrue
}

// lifetimeRemaining is the fraction of its expireAfter the NodeClaim has
// left, 1 when it never expires: nodes about to expire anyway are cheaper to
// disrupt now.
func lifetimeRemaining(nc *karpv1.NodeClaim, now time.Time) float64 {
	ea := nc.Spec.ExpireAfter
	if ea == nil || ea.Duration == nil || *ea.Duration <= 0 {
		return 1
	}
	life := *ea.Duration
	left := nc.CreationTimestamp.Add(life).Sub(now)
	return math.Max(0, math.Min(1, float64(left)/float64(life)))
}
