// Package scheduler is the simulator's kube-scheduler: a binder that places
// pending pods on nodes, and marks the pods it cannot place
// PodScheduled=False with reason Unschedulable — which is what wakes the
// provisioner, as in a real cluster.
//
// Whether a pod may run on a node is decided by packer.Feasible, the
// scheduling engine's check of kube-scheduler's filters (NodeUnschedulable,
// NodeResourcesFit, NodeAffinity, TaintToleration, NodePorts,
// InterPodAffinity, PodTopologySpread), differential-tested against
// kube-scheduler. Cheap filters run first — unschedulable nodes, taints
// (package scheduling/taints), resources (package scheduling/resources) and,
// for pods that need nothing more, required node affinity (the API's own
// matcher) — so that the full check, which builds the packer's view of the
// whole cluster (once per pod, for all the nodes left: packer.FeasibleNodes),
// runs only for pods with host ports, inter-pod (anti-)affinity or topology
// spread constraints, or when a running pod's anti-affinity could keep the
// newcomer away. For the other pods those cheap filters are exactly
// the filters that apply. Pods whose PersistentVolumeClaims are bound go only to nodes
// in their volumes' zones; an unbound claim is bound, once its pod is, to a
// new volume in the zone of the pod's node (WaitForFirstConsumer).
//
// Pending pods are taken by priority, then by age, then by name, as
// kube-scheduler's queue orders them. As in kube-scheduler, a pod that could
// not be placed waits until a change may let it fit before it is tried
// again, and keeps its last message meanwhile (see queue). Among the nodes that fit, the pod goes
// to the one with the best score, a deterministic simplification of
// kube-scheduler's default scoring:
//
//	score = 1 × least-allocated (cpu and memory, 0–100)
//	      + 1 × balanced allocation (0–100)
//	      + 2 × preferred node affinity (normalised to 0–100)
//	      + 3 × taint toleration (fewer untolerated PreferNoSchedule taints, 0–100)
//
// with ties broken by node name (kube-scheduler breaks them at random).
// Preemption, inter-pod affinity and topology spread scoring, and image
// locality are not simulated.
package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
)

// Name is the binder's controller name.
const Name = "scheduler"

// ReasonUnschedulable is the reason of the PodScheduled=False condition.
const ReasonUnschedulable = corev1.PodReasonUnschedulable

var (
	nodeGVK      = corev1.SchemeGroupVersion.WithKind("Node")
	podGVK       = corev1.SchemeGroupVersion.WithKind("Pod")
	pvcGVK       = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	pvGVK        = corev1.SchemeGroupVersion.WithKind("PersistentVolume")
	namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")
)

// Binder is the scheduler. Create it with New.
type Binder struct {
	api   *apiserver.Server
	clock clock.PassiveClock
	// requests caches what each pod requests: pods' requests do not change,
	// and working them out is a large part of a pass.
	requests map[types.UID]resources.Vector
	// views keeps, between passes, what the cluster view is built from,
	// so that a pass rebuilds only what changed since the last one (see
	// cluster).
	views views
	// feasible keeps, between passes, what the feasibility checks derive
	// from each node's pods. Its entries hold on to the pod list they came
	// from, and views replaces a node's list rather than changing it, so an
	// entry is found again only while the node's pods are what they were.
	feasible *packer.Cache
	// settled says that the last pass bound nothing, and pendingStamp is
	// the stamp of the unbound pods when it ended: while no unbound pod
	// and nothing a placement reads has changed since, another pass would
	// fail every pod again with the same message, and is skipped (see
	// Reconcile). Pods whose status a kubelet updates wake the binder all
	// the time without changing anything it reads.
	settled      bool
	pendingStamp uint64
	// epoch counts the passes that ran; failed records, for each pending pod
	// that a pass could not place, the epoch of that pass, and changedAt
	// the last epoch that began with a change to anything a placement
	// reads (see queue).
	epoch, changedAt uint64
	failed           map[types.UID]attempt
	boundLast        bool
	// repellers keeps each anti-affinity term's selector, parsed once.
	repellers map[string]repeller
	// alwaysFull makes every pod take the full check, and retryAll makes
	// every pass try every pending pod (tests compare the cheap filters and
	// the queue with them).
	alwaysFull, retryAll bool
	// waited and tried count, over the passes, the pending pods and those
	// of them the passes tried.
	waited, tried int
}

// views is the cluster as the last pass saw it: the nodes in name order and,
// per node, its pods and what they use, each part with the API's stamp it
// was built at.
type views struct {
	nodeStamp uint64
	byName    map[string]*nodeView
	order     []*nodeView // name order
	nsStamp   uint64
	nsLabel   map[string]map[string]string
	// claimStamp and volumeStamp are the PersistentVolumeClaims' and
	// PersistentVolumes' stamps the last pass saw (volumeZones reads them).
	claimStamp, volumeStamp uint64
	built                   bool
	// lastGrewAt is the latest of the nodes' grewAt.
	lastGrewAt uint64
	// changed says that the last call of cluster found a change to what a
	// placement reads: a node's name, labels, taints, allocatable or
	// schedulability, a namespace's labels, a volume or claim, or a bound
	// pod's UID, labels, spec generation or deletion (not its status).
	changed bool
}

// nodeView is one node of views.
type nodeView struct {
	node   *corev1.Node // the stored object packed was made from
	packed packer.Node  // without Pods and Requested
	// podStamp is the stamp of the node's pods (by spec.nodeName) that
	// pods, used and anti were built at; filled says they were.
	podStamp uint64
	filled   bool
	pods     []*corev1.Pod // bound and not finished, in namespace/name order
	used     resources.Vector
	// anti holds the required pod anti-affinity terms of the node's pods,
	// one of each (see repeller).
	anti []repeller
	// grewAt is the epoch of the first pass that saw the node new, changed
	// in what a placement reads, or with room freed (see queue); bound
	// lists the pods passes bound to it since its pods were last read.
	grewAt uint64
	bound  []types.UID
}

// New returns a Binder that reads and writes api.
func New(api *apiserver.Server, clk clock.PassiveClock) *Binder {
	return &Binder{api: api, clock: clk, requests: map[types.UID]resources.Vector{}, repellers: map[string]repeller{},
		failed: map[types.UID]attempt{}}
}

// Controller returns the binder as a controller for the runner: one
// request, woken by every change to a pod or a node (a pod that goes frees
// room; a node that changes may now take pods).
func (b *Binder) Controller() watch.Controller {
	req := watch.Named(Name)
	return watch.Controller{
		Name:       Name,
		Reconciler: b,
		Watches:    []watch.Watch{watch.Fixed(podGVK, req), watch.Fixed(nodeGVK, req)},
		Start:      []reconcile.Request{req},
	}
}

// pending reports whether pod waits for this scheduler.
func pending(p *corev1.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending &&
		(p.Spec.SchedulerName == "" || p.Spec.SchedulerName == corev1.DefaultSchedulerName)
}

// Reconcile binds every pending pod it can, in queue order.
func (b *Binder) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	pendingStamp := b.api.IndexStamp(podGVK, "spec.nodeName", "")
	cl := b.cluster()
	if b.settled && !b.views.changed && pendingStamp == b.pendingStamp {
		return reconcile.Result{}, nil
	}
	b.settled = false
	b.epoch++
	if b.views.changed || b.boundLast {
		b.changedAt = b.epoch
	}
	queue := b.queue(cl)
	if len(queue) == 0 {
		b.boundLast = false
		b.settle(true)
		return reconcile.Result{}, nil
	}
	// Pods of one ReplicaSet or Job are alike: once one of them fits
	// nowhere, the others do not either, until a pod is bound.
	failed := map[types.UID]string{}
	bound := false
	for _, pod := range queue {
		key := likeKey(pod)
		i, msg := -1, ""
		if known, ok := failed[key]; ok && key != "" {
			msg = known
		} else {
			var err error
			if i, msg, err = b.place(ctx, pod, cl); err != nil {
				return reconcile.Result{}, err
			}
		}
		if i < 0 {
			if key != "" {
				failed[key] = msg
			}
			b.failed[pod.UID] = attempt{epoch: b.epoch, generation: pod.Generation}
			if err := b.markUnschedulable(ctx, pod, msg); err != nil {
				return reconcile.Result{}, err
			}
			continue
		}
		delete(b.failed, pod.UID)
		placed, err := b.bind(ctx, pod, cl.nodes[i])
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue
			}
			return reconcile.Result{}, err
		}
		bound = true
		cl.add(i, placed)
		// cl.nodes are the view's nodes, in the same order.
		b.views.order[i].bound = append(b.views.order[i].bound, placed.UID)
		clear(failed)
	}
	b.boundLast = bound
	b.settle(!bound)
	return reconcile.Result{}, nil
}

// settle records how a whole pass ended: settled when it bound nothing. The
// stamp of the unbound pods is taken after the pass has written their
// conditions.
func (b *Binder) settle(settled bool) {
	b.settled = settled
	b.pendingStamp = b.api.IndexStamp(podGVK, "spec.nodeName", "")
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// likeKey returns the UID of the ReplicaSet or Job that controls the pod,
// whose pods are interchangeable for scheduling; "" otherwise.
func likeKey(p *corev1.Pod) types.UID {
	// As metav1.GetControllerOf, without the copy it makes: this runs for
	// every pending pod on every pass.
	for i := range p.OwnerReferences {
		c := &p.OwnerReferences[i]
		if c.Controller != nil && *c.Controller {
			if c.Kind == "ReplicaSet" || c.Kind == "Job" {
				return c.UID
			}
			return ""
		}
	}
	return ""
}

// cluster is the scheduler's view: the nodes, in name order, as the packer
// sees them, with what their pods use.
type cluster struct {
	nodes   []*corev1.Node
	packed  []packer.Node
	used    []resources.Vector
	nsLabel map[string]map[string]string
	// repellers are the bound pods' required anti-affinity terms, one of
	// each: a newcomer that none of them selects cannot be kept off a node
	// by a pod already there.
	repellers []repeller
	requests  func(*corev1.Pod) resources.Vector
}

// cluster returns the view for a pass. It is what a fresh reading of every
// node and pod gives, but only the nodes whose pods changed since the last
// pass are read again (the API's index stamps say which): a pass used to
// spend most of its time rebuilding a view that had hardly changed. The pass
// may add pods to the view it gets without touching what is kept.
func (b *Binder) cluster() *cluster {
	v := &b.views
	v.changed = !v.built
	if st := b.api.Stamp(nodeGVK); !v.built || st != v.nodeStamp {
		if len(v.byName) != b.api.Len(nodeGVK) {
			v.changed = true
		}
		objs := b.api.Objects(nodeGVK)
		byName := make(map[string]*nodeView, len(objs))
		order := make([]*nodeView, 0, len(objs))
		for _, o := range objs {
			n := o.(*corev1.Node)
			nv := v.byName[n.Name]
			if nv == nil {
				nv = &nodeView{}
			}
			if nv.node == nil {
				v.changed = true
				nv.grewAt, v.lastGrewAt = b.epoch+1, b.epoch+1
			}
			if nv.node != n {
				old := nv.packed
				nv.node = n
				nv.packed = packer.Node{
					Name:          n.Name,
					Labels:        n.Labels,
					Taints:        n.Spec.Taints,
					Allocatable:   resources.NewVector(n.Status.Allocatable),
					Unschedulable: n.Spec.Unschedulable,
				}
				if !samePlacement(&old, &nv.packed) {
					v.changed = true
					nv.grewAt, v.lastGrewAt = b.epoch+1, b.epoch+1
				}
			}
			byName[n.Name] = nv
			order = append(order, nv)
		}
		v.byName, v.order, v.nodeStamp = byName, order, st
		if b.feasible != nil {
			b.feasible.RetainNodes(func(name string) bool { return byName[name] != nil })
		}
	}
	if claims, volumes := b.api.Stamp(pvcGVK), b.api.Stamp(pvGVK); claims != v.claimStamp || volumes != v.volumeStamp {
		v.claimStamp, v.volumeStamp, v.changed = claims, volumes, true
	}
	if st := b.api.Stamp(namespaceGVK); !v.built || st != v.nsStamp {
		v.changed = true
		v.nsLabel = map[string]map[string]string{}
		for _, o := range b.api.Objects(namespaceGVK) {
			v.nsLabel[o.GetName()] = o.GetLabels()
		}
		v.nsStamp = st
		// Anti-affinity terms are resolved against the namespaces' labels.
		b.feasible = packer.NewCache()
	}
	v.built = true
	refreshed := false
	for _, nv := range v.order {
		if st := b.api.IndexStamp(podGVK, "spec.nodeName", nv.node.Name); !nv.filled || st != nv.podStamp {
			before, used, anti := nv.pods, nv.used, nv.anti
			b.fill(nv, st)
			refreshed = true
			if !sameBound(before, nv.pods) || !sameAmounts(used, nv.used) || !sameRepellers(anti, nv.anti) {
				v.changed = true
			}
			// A pod left, freeing room: a pod that found the node too
			// full may fit now. The view kept does not include what a
			// pass binds, so those pods are looked for too; comparing
			// the sums would miss a pod that left after another came.
			if podLeft(before, nv.pods) || slices.ContainsFunc(nv.bound, func(uid types.UID) bool {
				return !slices.ContainsFunc(nv.pods, func(p *corev1.Pod) bool { return p.UID == uid })
			}) {
				nv.grewAt, v.lastGrewAt = b.epoch+1, b.epoch+1
			}
			nv.bound = nil
		}
	}
	if refreshed {
		b.forgetRequests()
	}
	cl := &cluster{
		nodes:    make([]*corev1.Node, len(v.order)),
		packed:   make([]packer.Node, len(v.order)),
		used:     make([]resources.Vector, len(v.order)),
		nsLabel:  v.nsLabel,
		requests: b.podRequests,
	}
	seen := map[string]bool{}
	for i, nv := range v.order {
		cl.nodes[i] = nv.node
		cl.packed[i] = nv.packed
		// Clipped and cloned, so that what the pass adds goes to copies.
		cl.packed[i].Pods = slices.Clip(nv.pods)
		cl.used[i] = nv.used.Clone()
		for _, r := range nv.anti {
			if !seen[r.key] {
				seen[r.key] = true
				cl.repellers = append(cl.repellers, r)
			}
		}
	}
	// In key order, whatever the nodes' order: the list only ever answers
	// "does any select this pod", but a fixed order keeps it comparable.
	slices.SortFunc(cl.repellers, func(x, y repeller) int { return strings.Compare(x.key, y.key) })
	// The packer takes each node's summed requests from used (kept current
	// by add) instead of adding its pods up again for every check.
	for i := range cl.packed {
		cl.packed[i].Requested = &cl.used[i]
	}
	return cl
}

// fill reads the pods bound to the node again: those not finished, in
// namespace/name order, with the sum of their requests.
func (b *Binder) fill(nv *nodeView, stamp uint64) {
	nv.pods, nv.used, nv.anti = nil, resources.Vector{}, nil
	for _, o := range b.api.Select(podGVK, "spec.nodeName", nv.node.Name) {
		p := o.(*corev1.Pod)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		nv.pods = append(nv.pods, p)
		nv.used.Add(b.podRequests(p))
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				r := b.repeller(p.Namespace, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
				if !slices.ContainsFunc(nv.anti, func(x repeller) bool { return x.key == r.key }) {
					nv.anti = append(nv.anti, r)
				}
			}
		}
	}
	nv.podStamp, nv.filled = stamp, true
}

// podLeft reports whether a pod of before, a node's pods in namespace/name
// order, is not in after, the node's pods later in the same order.
func podLeft(before, after []*corev1.Pod) bool {
	j := 0
	for _, p := range before {
		for j < len(after) && (after[j].Namespace < p.Namespace || after[j].Namespace == p.Namespace && after[j].Name < p.Name) {
			j++
		}
		if j == len(after) || after[j].UID != p.UID {
			return true
		}
	}
	return false
}

// sameRepellers reports whether two nodes' lists of anti-affinity terms
// are the same.
func sameRepellers(a, b []repeller) bool {
	return slices.EqualFunc(a, b, func(x, y repeller) bool { return x.key == y.key })
}

// samePlacement reports whether two views of a node are the same to a
// placement: name, labels, taints, allocatable and schedulability.
func samePlacement(a, b *packer.Node) bool {
	return a.Name == b.Name && a.Unschedulable == b.Unschedulable && maps.Equal(a.Labels, b.Labels) &&
		slices.EqualFunc(a.Taints, b.Taints, func(x, y corev1.Taint) bool { return x.MatchTaint(&y) && x.Value == y.Value }) &&
		sameAmounts(a.Allocatable, b.Allocatable)
}

// sameAmounts reports whether two vectors of non-negative amounts are
// equal, each fitting in the other (an amount of zero and one left out are
// the same).
func sameAmounts(a, b resources.Vector) bool { return a.Fits(b) && b.Fits(a) }

// sameBound reports whether two lists of a node's bound pods are the same
// to a placement: the same pods, with the same labels, spec generation and
// deletion state (a status update, such as a pod becoming Ready, changes
// none of them).
func sameBound(a, b []*corev1.Pod) bool {
	return slices.EqualFunc(a, b, func(x, y *corev1.Pod) bool {
		return x.UID == y.UID && x.Generation == y.Generation && (x.DeletionTimestamp == nil) == (y.DeletionTimestamp == nil) &&
			maps.Equal(x.Labels, y.Labels)
	})
}

func (cl *cluster) add(i int, p *corev1.Pod) {
	cl.packed[i].Pods = append(cl.packed[i].Pods, p)
	cl.used[i].Add(cl.requests(p))
}

// podRequests returns what a pod requests, from the cache.
func (b *Binder) podRequests(p *corev1.Pod) resources.Vector {
	v, ok := b.requests[p.UID]
	if !ok {
		v = resources.PodVector(p)
		b.requests[p.UID] = v
	}
	return v
}

// forgetRequests drops the cached requests of pods that are gone, once the
// cache has grown well past the number of pods.
func (b *Binder) forgetRequests() {
	if len(b.requests) < 2*b.api.Len(podGVK)+1000 {
		return
	}
	pods := b.api.Objects(podGVK)
	live := make(map[types.UID]bool, len(pods))
	for _, o := range pods {
		live[o.GetUID()] = true
	}
	for uid := range b.requests {
		if !live[uid] {
			delete(b.requests, uid)
		}
	}
}

// simple reports whether the cheap filters decide for the pod: it has no
// host ports, no pod (anti-)affinity and no topology spread constraints.
func simple(p *corev1.Pod) bool {
	if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return false
	}
	if len(p.Spec.TopologySpreadConstraints) > 0 {
		return false
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, port := range c.Ports {
				if port.HostPort != 0 {
					return false
				}
			}
		}
	}
	return true
}

// place returns the index of the node the pod goes to, or -1 and the
// scheduler's message.
func (b *Binder) place(ctx context.Context, pod *corev1.Pod, cl *cluster) (int, string, error) {
	if len(cl.nodes) == 0 {
		return -1, "no nodes available to schedule pods", nil
	}
	zones, err := b.volumeZones(ctx, pod)
	if err != nil {
		return -1, err.Error(), nil
	}
	req := cl.requests(pod)
	cheap := !b.alwaysFull && simple(pod) && !cl.repelled(pod)
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	reasons := map[string]int{}
	var fits, rest []int
	for i := range cl.nodes {
		if why := prefilter(pod, req, cl, i, zones, true); why != "" {
			reasons[why]++
			continue
		}
		if !cheap {
			rest = append(rest, i)
			continue
		}
		if ok, _ := affinity.Match(cl.nodes[i]); !ok {
			reasons["node(s) didn't match Pod's node affinity/selector"]++
			continue
		}
		fits = append(fits, i)
	}
	// The nodes left for the full check are judged together: the packer
	// builds its view of the cluster once for the pod, not once per node.
	if len(rest) > 0 {
		for k, err := range b.feasible.FeasibleNodes(pod, cl.packed, rest, cl.nsLabel) {
			if err != nil {
				reasons[err.Error()]++
				continue
			}
			fits = append(fits, rest[k])
		}
	}
	if len(fits) == 0 {
		parts := make([]string, 0, len(reasons))
		for r, n := range reasons {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
		slices.Sort(parts)
		return -1, fmt.Sprintf("0/%d nodes are available: %s.", len(cl.nodes), strings.Join(parts, ", ")), nil
	}
	return best(pod, req, cl, fits), "", nil
}

// rejected is what prefilter says, when not asked to explain, about a node
// that fails a filter.
const rejected = "rejected"

// prefilter runs the cheap filters; "" when the node passes them, else the
// scheduler's reason or, without explain, rejected (the reasons' text is
// most of the cost of a node turned away).
func prefilter(pod *corev1.Pod, req resources.Vector, cl *cluster, i int, zones []string, explain bool) string {
	n := cl.nodes[i]
	if n.Spec.Unschedulable && !taints.Tolerates(pod.Spec.Tolerations, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return "node(s) were unschedulable"
	}
	if ok, t := taints.ToleratesAll(pod.Spec.Tolerations, n.Spec.Taints, taints.Blocking); !ok {
		if !explain {
			return rejected
		}
		return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
	}
	if zones != nil && !slices.Contains(zones, n.Labels[corev1.LabelTopologyZone]) {
		return "node(s) had volume node affinity conflict"
	}
	free := cl.packed[i].Allocatable.Clone()
	free.Sub(cl.used[i])
	if !explain {
		if !req.Fits(free) {
			return rejected
		}
		return ""
	}
	if missing := req.Insufficient(free); len(missing) > 0 {
		parts := make([]string, 0, len(missing))
		for _, m := range missing {
			if m == corev1.ResourcePods {
				parts = append(parts, "Too many pods")
				continue
			}
			parts = append(parts, "Insufficient "+string(m))
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// best returns the fitting node with the highest score (see the package
// documentation).
func best(pod *corev1.Pod, req resources.Vector, cl *cluster, fits []int) int {
	type scored struct {
		i                  int
		fit, balance       float64
		affinity, tolerate float64
	}
	var pref *nodeaffinity.PreferredSchedulingTerms
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		pref, _ = nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	out := make([]scored, len(fits))
	maxAff, maxBad := 0.0, 0.0
	for k, i := range fits {
		s := scored{i: i}
		alloc := cl.packed[i].Allocatable
		used := cl.used[i].Clone()
		used.Add(req)
		cpu := fraction(used.CPU, alloc.CPU)
		mem := fraction(used.Memory, alloc.Memory)
		s.fit = ((1-cpu)*100 + (1-mem)*100) / 2
		diff := cpu - mem
		if diff < 0 {
			diff = -diff
		}
		s.balance = (1 - diff/2) * 100
		if pref != nil {
			s.affinity = float64(pref.Score(cl.nodes[i]))
		}
		for _, t := range cl.nodes[i].Spec.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule && !taints.Tolerates(pod.Spec.Tolerations, t) {
				s.tolerate++
			}
		}
		maxAff, maxBad = max(maxAff, s.affinity), max(maxBad, s.tolerate)
		out[k] = s
	}
	bestI, bestScore := -1, -1.0
	for _, s := range out {
		total := s.fit + s.balance
		if maxAff > 0 {
			total += 2 * s.affinity * 100 / maxAff
		}
		if maxBad > 0 {
			total += 3 * (100 - s.tolerate*100/maxBad)
		} else {
			total += 3 * 100
		}
		if total > bestScore+1e-9 {
			bestI, bestScore = s.i, total
		}
	}
	return bestI
}

func fraction(used, alloc int64) float64 {
	if alloc <= 0 {
		return 1
	}
	f := float64(used) / float64(alloc)
	return min(f, 1)
}

// bind binds the pod to the node: spec.nodeName, then PodScheduled=True.
// It returns the bound pod.
func (b *Binder) bind(ctx context.Context, pod *corev1.Pod, node *corev1.Node) (*corev1.Pod, error) {
	// pod is the API's own object: it is the first patch's base, and only
	// the copy is changed.
	p := pod.DeepCopy()
	p.Spec.NodeName = node.Name
	if err := b.api.Patch(ctx, p, apiserver.MergeFrom(pod, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, err
	}
	base := p.DeepCopy()
	setCondition(p, corev1.ConditionTrue, "", "", b.clock.Now())
	if err := b.api.Status().Patch(ctx, p, apiserver.MergeFrom(base)); err != nil {
		return nil, err
	}
	if err := b.bindVolumes(ctx, p, node); err != nil {
		return nil, err
	}
	return p, nil
}

// markUnschedulable sets PodScheduled=False, reason Unschedulable, unless the
// pod says so already with the same message.
func (b *Binder) markUnschedulable(ctx context.Context, pod *corev1.Pod, msg string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == ReasonUnschedulable && c.Message == msg {
			return nil
		}
	}
	// pod is the API's own object: it is the patch's base, and only the
	// copy is changed.
	p := pod.DeepCopy()
	setCondition(p, corev1.ConditionFalse, ReasonUnschedulable, msg, b.clock.Now())
	if err := b.api.Status().Patch(ctx, p, apiserver.MergeFrom(pod)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func setCondition(p *corev1.Pod, status corev1.ConditionStatus, reason, msg string, now time.Time) {
	t := metav1.NewTime(now)
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != corev1.PodScheduled {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = t
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		c.LastProbeTime = t
		return
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: status, Reason: reason, Message: msg, LastTransitionTime: t, LastProbeTime: t,
	})
}
