package disruption

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// world is the packer's view of the cluster, built once per decision and
// narrowed per simulation: which nodes exist, which may take pods in a
// consolidation simulation, and which in a drift simulation.
type world struct {
	in      *Input
	base    packer.Input
	index   map[string]int // node name -> index in base.Nodes
	pending []*corev1.Pod  // provisionable pods, which keep their claim on capacity
	cooling []bool         // may not take pods moved by consolidation
	drifted []bool         // about to be replaced: may not take pods moved by drift
	// notReady nodes (uninitialized or in flight) are packed onto like any
	// other, but a moved pod that lands on one fails the simulation.
	notReady []bool
	// away are nodes already being taken away (marked for deletion by a
	// command, or deleting): left out of every packing, as Karpenter's
	// simulation leaves them out. Their pods (leaving) move as well and
	// keep their claim on capacity, as pending pods do, so that the room a
	// replacement was launched for is not offered to a candidate's pods
	// too, nor taken for a consolidated node's pods. viewAt is each node's
	// place in the views, -1 for those away.
	away     []bool
	leaving  []leavingPod
	viewAt   []int
	poolByNm map[string]*packer.NodePool
	rooms    *roomIndex // built on first use
	// views are base.Nodes as each mode's simulations see them (see
	// pack), and notReadyIn the names of those that are not ready and not
	// Unschedulable there.
	views      [modeCount][]packer.Node
	notReadyIn [modeCount]map[string]bool
	// scratch is memory one goroutine's simulations reuse.
	scratch *packScratch
	// totals are the Balanced NodePools' cost and disruption (see Score).
	totals map[string]poolTotals
}

// newWorld builds the packer's view; hosts are the nodes' placeholder pods
// (bufferHosts), whose room is taken.
func newWorld(in *Input, hosts map[string][]*corev1.Pod) *world {
	snap := in.Snapshot
	w := &world{in: in, index: map[string]int{}, poolByNm: map[string]*packer.NodePool{}}
	// Static NodePools launch only to keep their replica count: moved pods
	// may land on their nodes but never on a new node of theirs.
	w.base = snap.PackerInput(nil, dynamicPools(snap, in.Pools), in.Options.PreferencePolicy)
	w.base.MaxInstanceTypes = in.Options.MaxInstanceTypes
	w.base.MinValuesPolicy = in.Options.MinValuesPolicy
	// Pods that move together should open as few nodes as their spread
	// allows: a replacement split over zones leaves room on nodes that
	// have not initialized, which holds up the next candidates (see pack).
	w.base.CompactSpread = true
	// Every simulation of this decision packs onto the same pools: their
	// instance-type tables are built once.
	w.base.Cache = in.Options.Cache
	if w.base.Cache == nil {
		w.base.Cache = packer.NewCache()
	}
	w.pending = snap.ProvisionablePods()
	// Pending pods and the pods of nodes being taken away (below) are
	// placed before the pods a simulation moves: the room they are to take
	// was promised first, often on a node launched for them that has not
	// initialized, and a moved pod that took it instead would fail its
	// candidate until that node is up.
	for _, p := range w.pending {
		w.first(p)
	}
	w.cooling = make([]bool, len(w.base.Nodes))
	w.drifted = make([]bool, len(w.base.Nodes))
	w.notReady = make([]bool, len(w.base.Nodes))
	pools := map[string]*karpv1.NodePool{}
	for _, np := range snap.NodePools {
		pools[np.Name] = np
	}
	for i := range w.base.NodePools {
		w.poolByNm[w.base.NodePools[i].Name] = &w.base.NodePools[i]
	}
	w.away = make([]bool, len(w.base.Nodes))
	for i, n := range snap.Nodes {
		w.index[n.Name()] = i
		if n.MarkedForDeletion || n.Deleting() {
			w.away[i] = true
			for _, p := range n.Pods {
				if Reschedulable(p) {
					cp := *p
					cp.Spec.NodeName = ""
					w.leaving = append(w.leaving, leavingPod{pod: &cp, node: i})
					w.first(p)
				}
			}
			continue
		}
		// Every simulation reuses these nodes: add their pods' requests up
		// once rather than on every Solve.
		// The state memoizes the bound pods' sum per pod list; the pods
		// still to come (PackerNode adds them) are few.
		used := n.PodRequests()
		for _, p := range slices.Concat(n.Daemons, n.NominatedPods, hosts[n.Name()]) {
			used.Add(resources.PodVector(p))
		}
		w.base.Nodes[i].Requested = &used
		// Pods must not be moved onto nodes that are not ready for them: a
		// pod landing on an uninitialized or in-flight node would have to
		// wait, and that node may never come up. Such a node still takes
		// part in the packing, as Karpenter's simulation has it: were it
		// left out, the moved pods would ask for yet another node, and a
		// replacement that never initializes would be followed by another
		// on every pass. A moved pod that lands on it fails the candidate
		// instead (pack), which waits until the node is up or gone.
		if !n.Initialized() || n.InFlight() {
			w.notReady[i] = true
			continue
		}
		if n.NodeClaim == nil {
			continue
		}
		w.cooling[i] = coolingDown(n, pools[n.NodePool()])
		c := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, karpv1.ConditionTypeDrifted)
		w.drifted[i] = c != nil && c.Status == metav1.ConditionTrue
	}
	w.viewAt = make([]int, len(w.base.Nodes))
	for i := range w.viewAt {
		w.viewAt[i] = -1
	}
	for m := range modeCount {
		w.views[m] = make([]packer.Node, 0, len(w.base.Nodes))
		for i := range w.base.Nodes {
			if w.away[i] {
				continue
			}
			w.viewAt[i] = len(w.views[m])
			w.views[m] = append(w.views[m], w.base.Nodes[i])
			n := &w.views[m][len(w.views[m])-1]
			if (m == modeConsolidate && w.cooling[i]) || (m == modeDrift && w.drifted[i]) || (m == modeForceful && w.notReady[i]) {
				n.Unschedulable = true
			}
			if w.notReady[i] && !n.Unschedulable {
				if w.notReadyIn[m] == nil {
					w.notReadyIn[m] = map[string]bool{}
				}
				w.notReadyIn[m][n.Name] = true
			}
		}
	}
	w.scratch = &packScratch{}
	return w
}

// first marks a pod to be placed before the moved ones (packer.Input.First).
func (w *world) first(p *corev1.Pod) {
	if w.base.First == nil {
		w.base.First = map[types.NamespacedName]bool{}
	}
	w.base.First[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = true
}

// leavingPod is a pod of a node being taken away, unbound, with the node's
// index.
type leavingPod struct {
	pod  *corev1.Pod
	node int
}

// packScratch is memory that the simulations of one goroutine reuse: a
// simulation over thousands of nodes otherwise allocates a copy of them.
type packScratch struct {
	nodes []packer.Node
	gone  []int
}

// coolingDown reports whether consolidation must leave a node alone as a
// destination: it had pod activity within its NodePool's consolidateAfter.
// Moving pods onto such a node would restart its timer and make pods bounce
// between nodes.
func coolingDown(n *state.StateNode, np *karpv1.NodePool) bool {
	if np == nil {
		return false
	}
	ca := np.Spec.Disruption.ConsolidateAfter
	if ca == nil || ca.IsNever() || ca.Duration == nil || *ca.Duration == 0 {
		return false
	}
	c := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	return c == nil || c.Status != metav1.ConditionTrue
}

// outcome is where the candidates' pods would go.
type outcome struct {
	// replacements are the new NodeClaims that hold at least one moved pod.
	replacements []packer.NodeClaim
	// failed names a moved pod that fits nowhere, with why; empty on success.
	failed string
	// unplaced lists every moved pod that fits nowhere (place only).
	unplaced []string
}

// mode selects which nodes may take moved pods.
type mode int

const (
	modeConsolidate mode = iota
	modeDrift
	// modeForceful lets pods go to any ready node: the nodes go anyway.
	modeForceful
	modeCount
)

// simulate packs the candidates' pods, and the pods still pending, onto
// every other node and, where they do not fit, onto new NodeClaims. It
// stops at the first moved pod that fits nowhere.
func (w *world) simulate(cands []*Candidate, m mode) outcome {
	return w.pack(cands, m, true)
}

// place is simulate that places what it can and lists what it cannot.
func (w *world) place(cands []*Candidate, m mode) outcome {
	return w.pack(cands, m, false)
}

func (w *world) pack(cands []*Candidate, m mode, strict bool) outcome {
	gone := w.scratch.gone[:0]
	var moved []*corev1.Pod
	movedKeys := map[types.NamespacedName]bool{}
	var goneNodes []int // by the nodes' index, for their leaving pods
	for _, c := range cands {
		i := w.index[c.Name()]
		goneNodes = append(goneNodes, i)
		if v := w.viewAt[i]; v >= 0 {
			gone = append(gone, v)
		}
		for _, p := range c.Pods {
			cp := *p.pod
			cp.Spec.NodeName = ""
			moved = append(moved, &cp)
			movedKeys[types.NamespacedName{Namespace: cp.Namespace, Name: cp.Name}] = true
		}
	}
	slices.Sort(gone)
	gone = slices.Compact(gone)
	w.scratch.gone = gone
	in := w.base
	// The other nodes, as the mode sees them, copied in runs between the
	// candidates into memory the previous simulation used: the packer
	// keeps nothing of them once it has answered.
	view := w.views[m]
	nodes := w.scratch.nodes[:0]
	from := 0
	for _, i := range gone {
		nodes = append(nodes, view[from:i]...)
		from = i + 1
	}
	nodes = append(nodes, view[from:]...)
	w.scratch.nodes = nodes
	in.Nodes = nodes
	notReady := w.notReadyIn[m]
	in.Pods = make([]*corev1.Pod, 0, len(moved)+len(w.pending)+len(w.leaving))
	in.Pods = append(in.Pods, moved...)
	in.Pods = append(in.Pods, w.pending...)
	for _, l := range w.leaving {
		// A candidate's own pods are among the moved ones.
		if !slices.Contains(goneNodes, l.node) {
			in.Pods = append(in.Pods, l.pod)
		}
	}
	in.VolumeZones = nil
	for _, p := range in.Pods {
		if state.UsesVolumes(p) {
			if zones, ok := w.in.Snapshot.VolumeZones(p); ok {
				if in.VolumeZones == nil {
					in.VolumeZones = map[types.NamespacedName][]string{}
				}
				in.VolumeZones[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = zones
			}
		}
	}
	res := packer.Solve(in)
	var out outcome
	for _, list := range [][]packer.Unschedulable{res.Unschedulable, res.Ignored} {
		for _, u := range list {
			if !movedKeys[u.Pod] {
				continue
			}
			if strict {
				out.failed = fmt.Sprintf("pod %s would not fit anywhere: %s", u.Pod, u.Reason)
				return out
			}
			out.unplaced = append(out.unplaced, u.Pod.String())
		}
	}
	if len(notReady) > 0 {
		if pod, node := swapOffNotReady(res, in, movedKeys, notReady); node != "" {
			out.failed = fmt.Sprintf("pod %s would move to node %s, which has not initialized", pod, node)
			return out
		}
	}
	for _, c := range res.NodeClaims {
		if slices.ContainsFunc(c.Pods, func(k types.NamespacedName) bool { return movedKeys[k] }) {
			out.replacements = append(out.replacements, c)
		}
	}
	return out
}

// offeringsFor returns, for one instance type of a replacement, the
// available offerings its requirements allow.
func offeringsFor(it *packer.InstanceType, r packer.NodeClaim) []packer.Offering {
	var out []packer.Offering
	for _, o := range it.Offerings {
		if !o.Available || !slices.Contains(r.Zones, o.Zone) || !slices.Contains(r.CapacityTypes, o.CapacityType) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// names lists candidate names for messages.
func names(cands []*Candidate) string {
	s := make([]string, len(cands))
	for i, c := range cands {
		s[i] = c.Name()
	}
	return strings.Join(s, ", ")
}

// roomIndex answers, without packing, whether a set of pods could possibly
// move: the packer is exact but costs milliseconds per call over a large
// cluster, and in a cluster with nothing to consolidate most candidates
// fail on resources alone. The checks are necessary conditions only
// (taints, affinity and DaemonSet overhead are ignored), so a candidate
// they turn away could never have been consolidated.
type roomIndex struct {
	free  []resources.Vector // per node that may take moved pods
	total resources.Vector
	// types are every instance type of every NodePool with an available
	// offering, cheapest first, with that price.
	types []pricedType
}

type pricedType struct {
	price float64
	alloc resources.Vector
}

func (w *world) room() *roomIndex {
	if w.rooms != nil {
		return w.rooms
	}
	r := &roomIndex{}
	for i, n := range w.base.Nodes {
		if n.Unschedulable || w.cooling[i] || w.notReady[i] {
			continue
		}
		f := n.Allocatable.Clone()
		if n.Requested != nil {
			f.Sub(*n.Requested)
		}
		r.free = append(r.free, f)
		r.total.Add(f)
	}
	for _, p := range w.base.NodePools {
		for _, it := range p.InstanceTypes {
			lo := math.Inf(1)
			for _, o := range it.Offerings {
				if o.Available {
					lo = math.Min(lo, o.PricePerHour)
				}
			}
			if !math.IsInf(lo, 1) {
				r.types = append(r.types, pricedType{price: lo, alloc: it.Allocatable})
			}
		}
	}
	slices.SortStableFunc(r.types, func(a, b pricedType) int { return cmp.Compare(a.price, b.price) })
	w.rooms = r
	return r
}

// mayMove reports whether the candidates' pods could fit on the other nodes
// plus at most one new node cheaper than price; when they cannot, it says
// why. Free room on the candidates themselves is not subtracted: this is a
// bound, and a loose one only costs a Solve.
func (r *roomIndex) mayMove(cands []*Candidate, price float64) (code, why string, ok bool) {
	var need resources.Vector
	cheaper := 0
	for cheaper < len(r.types) && r.types[cheaper].price < price {
		cheaper++
	}
	var biggest resources.Vector
	for _, t := range r.types[:cheaper] {
		biggest = maxVector(biggest, t.alloc)
	}
	// homeless are the pods that fit on no other node: they can only go to
	// the one new node, together.
	var homeless resources.Vector
	for _, c := range cands {
		for _, p := range c.Pods {
			v := resources.PodVector(p.pod)
			need.Add(v)
			if slices.ContainsFunc(r.free, func(f resources.Vector) bool { return v.Fits(f) }) {
				continue
			}
			if cheaper == 0 {
				return CodeNotCheaper, fmt.Sprintf("pod %s/%s fits on no other node, and no instance type costs less than the $%.4f/h the node(s) cost now", p.pod.Namespace, p.pod.Name, price), false
			}
			if !v.Fits(biggest) {
				return CodePodsDoNotFit, fmt.Sprintf("pod %s/%s (%s) fits on no other node nor on any instance type cheaper than $%.4f/h", p.pod.Namespace, p.pod.Name, v, price), false
			}
			homeless.Add(v)
		}
	}
	if !homeless.Fits(biggest) {
		return CodeWouldNeedMany, fmt.Sprintf("pods requesting %s fit on no other node, more than any one instance type cheaper than $%.4f/h holds; consolidation never replaces one node with several", homeless, price), false
	}
	room := r.total.Clone()
	room.Add(biggest)
	if !need.Fits(room) {
		return CodePodsDoNotFit, fmt.Sprintf("the pods request %s; the other nodes have %s free and the largest cheaper instance type adds %s", need, r.total, biggest), false
	}
	return "", "", true
}

// maxVector is the per-resource maximum of the core resources of a and b
// (extended resources are left out: a bound that ignores them only lets
// more through to the packer).
func maxVector(a, b resources.Vector) resources.Vector {
	return resources.Vector{
		CPU:              max(a.CPU, b.CPU),
		Memory:           max(a.Memory, b.Memory),
		EphemeralStorage: max(a.EphemeralStorage, b.EphemeralStorage),
		Pods:             max(a.Pods, b.Pods),
	}
}

// swapOffNotReady finds the moved pods res places on nodes that are not
// ready and trades each with a pod of the same ReplicaSet that was placed
// first (in.First) somewhere else: such pods come from one template, so
// which of them lands where is the packer's arbitrary choice, not a need.
// A pod of a node being replaced and a moved pod of the same Deployment
// otherwise swap places whenever the moved pod's zone spread counts tip the
// other way, and the candidate waits for a node that has room only because
// of it. The trade rewrites res (the NodeClaims' pod lists among it). It
// returns the first moved pod that cannot be traded, with its node.
func swapOffNotReady(res packer.Result, in packer.Input, movedKeys map[types.NamespacedName]bool, notReady map[string]bool) (types.NamespacedName, string) {
	var stuck []int // indexes in res.Placements
	for i, pl := range res.Placements {
		if movedKeys[pl.Pod] && notReady[pl.Node] {
			stuck = append(stuck, i)
		}
	}
	if len(stuck) == 0 {
		return types.NamespacedName{}, ""
	}
	owners := map[types.NamespacedName]types.UID{}
	for _, p := range in.Pods {
		if k := (types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); in.First[k] || movedKeys[k] {
			owners[k] = replicaSetOf(p)
		}
	}
	// The pods placed first off the not-ready nodes and not traded yet, in
	// the result's order: each at a placement, or in a claim at a position.
	type spot struct {
		pod                  types.NamespacedName
		placement, claim, at int
	}
	var free []spot
	for i, pl := range res.Placements {
		if in.First[pl.Pod] && !notReady[pl.Node] && owners[pl.Pod] != "" {
			free = append(free, spot{pod: pl.Pod, placement: i, claim: -1})
		}
	}
	for ci, c := range res.NodeClaims {
		for j, k := range c.Pods {
			if in.First[k] && owners[k] != "" {
				free = append(free, spot{pod: k, placement: -1, claim: ci, at: j})
			}
		}
	}
	for _, i := range stuck {
		pl := &res.Placements[i]
		uid := owners[pl.Pod]
		j := -1
		if uid != "" {
			j = slices.IndexFunc(free, func(sp spot) bool { return owners[sp.pod] == uid })
		}
		if j < 0 {
			return pl.Pod, pl.Node
		}
		sp := free[j]
		free = slices.Delete(free, j, j+1)
		if sp.claim >= 0 {
			res.NodeClaims[sp.claim].Pods[sp.at] = pl.Pod
		} else {
			res.Placements[sp.placement].Pod = pl.Pod
		}
		pl.Pod = sp.pod
	}
	return types.NamespacedName{}, ""
}

// replicaSetOf returns the UID of the ReplicaSet that controls p, or "".
// Pods of one ReplicaSet share a template: for placement, any of them is as
// good as another. It reads the references in place: a simulation asks
// this of every pod placed first, and metav1.GetControllerOf copies the
// reference it returns.
func replicaSetOf(p *corev1.Pod) types.UID {
	for i := range p.OwnerReferences {
		if ref := &p.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			if ref.Kind == "ReplicaSet" {
				return ref.UID
			}
			return ""
		}
	}
	return ""
}
