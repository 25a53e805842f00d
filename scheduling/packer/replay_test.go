package packer_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads/karpenterbench"
)

// The kinds of constraint a replayed binding can break.
const (
	violZoneSpread   = "zone-spread"
	violHostSpread   = "hostname-spread"
	violOtherSpread  = "other-spread"
	violAffinity     = "pod-affinity"
	violAnti         = "pod-anti-affinity"
	violExistingAnti = "bound-pods-anti-affinity"
	violResources    = "resources"
	violNode         = "node-affinity-or-taints"
	violPorts        = "host-ports"
)

var violationKinds = []string{violZoneSpread, violHostSpread, violOtherSpread, violAffinity, violAnti, violExistingAnti, violResources, violNode, violPorts}

// replayReport is what binding a plan's pods in creation order found.
type replayReport struct {
	// bound is the number of pods replayed (those the plan placed).
	bound int
	// violations counts, per kind, the bindings that broke a constraint
	// of that kind; a binding that breaks two kinds counts in both.
	violations map[string]int
	// first describes the first violation of each kind.
	first map[string]string
	// zoneSpreadPods counts, per zone, the pods with a required zone
	// spread constraint.
	zoneSpreadPods map[string]int
	// selectedSkew is the largest difference, over the zone spread
	// constraints, between two zones' counts of the pods a constraint
	// selects, once every pod is bound; ownerSkew the same for the pods
	// that carry each constraint (grouped by constraint).
	selectedSkew, ownerSkew int
	// failed are the pods whose binding broke some constraint.
	failed map[types.NamespacedName]bool
}

func (r replayReport) total() int {
	n := 0
	for _, v := range r.violations {
		n += v
	}
	return n
}

func (r replayReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods bound;", r.bound)
	for _, k := range violationKinds {
		if n := r.violations[k]; n > 0 {
			fmt.Fprintf(&b, " %s %d (first: %s);", k, n, r.first[k])
		}
	}
	fmt.Fprintf(&b, " zone spread pods by zone %v, selected skew %d, owner skew %d", r.zoneSpreadPods, r.selectedSkew, r.ownerSkew)
	return b.String()
}

// replayNode is a node of the replay: an existing node or a NodeClaim of
// the plan, as it would register.
type replayNode struct {
	name   string
	labels map[string]string
	taints []corev1.Taint
	alloc  resources.Vector
	used   resources.Vector
	ports  []corev1.ContainerPort
}

// replay binds the pods of in in the order kube-scheduler takes them from
// its queue (higher priority first, then the earlier creation timestamp,
// then the order of in.Pods, which is their creation order when the
// timestamps are equal or missing), each on the node res gives it, and
// checks every binding as
// kube-scheduler's filters would at that moment: resources, node affinity
// and taints, host ports, required pod affinity and anti-affinity (the
// pod's own and that of the pods already bound), and required topology
// spread, with every node of the plan present from the start and counting
// only the pods bound so far. A binding that breaks a constraint is counted
// and made all the same, as the plan has it.
//
// A NodeClaim becomes a node of its cheapest instance type, in its first
// zone and capacity type, with the labels its NodePool and requirements
// give it; its allocatable is that type's less the DaemonSet overhead the
// claim's requests include.
//
// The checker shares no code with the packer: it follows kube-scheduler's
// PodTopologySpread and InterPodAffinity filters directly.
func replay(t testing.TB, in packer.Input, res packer.Result) replayReport {
	t.Helper()
	nodes, at := planNodes(t, in, res)
	rp := newReplayer(in)
	for _, n := range nodes {
		rp.addNode(n.Name, n.Labels, n.Taints, n.Allocatable)
	}
	for i, n := range nodes {
		for _, p := range n.Pods {
			rp.bind(p, i, false)
		}
	}
	for _, p := range queueOrder(in.Pods) {
		nn := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		i, ok := at[nn]
		if !ok {
			continue // unschedulable or ignored
		}
		before := rp.report.total()
		rp.check(p, i)
		if rp.report.total() > before {
			rp.report.failed[nn] = true
		}
		rp.bind(p, i, true)
		rp.report.bound++
	}
	rp.finish()
	return rp.report
}

// queueOrder returns the pods in the order kube-scheduler's queue gives
// them: priority descending, then creation timestamp, then list order.
func queueOrder(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	prio := func(p *corev1.Pod) int32 {
		if p.Spec.Priority != nil {
			return *p.Spec.Priority
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		if pa, pb := prio(a), prio(b); pa != pb {
			return cmp.Compare(pb, pa)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out
}

// planNodes returns the nodes of a plan: in.Nodes with the pods already on
// them, then a node per NodeClaim of res, without pods; and the index of the
// node res puts each placed pod on.
func planNodes(t testing.TB, in packer.Input, res packer.Result) ([]packer.Node, map[types.NamespacedName]int) {
	t.Helper()
	nodes := slices.Clone(in.Nodes)
	at := map[types.NamespacedName]int{}
	for _, p := range res.Placements {
		i := slices.IndexFunc(nodes, func(n packer.Node) bool { return n.Name == p.Node })
		if i < 0 {
			t.Fatalf("pod %s placed on unknown node %s", p.Pod, p.Node)
		}
		at[p.Pod] = i
	}
	byName := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range in.Pods {
		byName[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	typeOf := map[string]*packer.InstanceType{}
	pools := map[string]packer.NodePool{}
	for _, np := range in.NodePools {
		pools[np.Name] = np
		for _, it := range np.InstanceTypes {
			typeOf[it.Name] = it
		}
	}
	for i, nc := range res.NodeClaims {
		if len(nc.InstanceTypes) == 0 || len(nc.Zones) == 0 || len(nc.CapacityTypes) == 0 {
			t.Fatalf("claim %d lists no instance type, zone or capacity type", i)
		}
		it := typeOf[nc.InstanceTypes[0]]
		name := fmt.Sprintf("new-%d", i)
		l := map[string]string{}
		for k, v := range pools[nc.NodePool].Labels {
			l[k] = v
		}
		for k, v := range nc.Requirements.Labels() {
			l[k] = v
		}
		l[wellknown.LabelHostname] = name
		l[wellknown.LabelInstanceType] = it.Name
		l[wellknown.LabelTopologyZone] = nc.Zones[0]
		l[wellknown.LabelCapacityType] = nc.CapacityTypes[0]
		// The claim's requests less its pods' are the DaemonSet overhead.
		over := nc.Requests.Clone()
		for _, nn := range nc.Pods {
			p, ok := byName[nn]
			if !ok {
				t.Fatalf("claim %d holds pod %s, which is not in the input", i, nn)
			}
			over.Sub(resources.PodVector(p))
			at[nn] = len(nodes)
		}
		alloc := it.Allocatable.Clone()
		alloc.Sub(over)
		nodes = append(nodes, packer.Node{Name: name, NodePool: nc.NodePool, Labels: l, Taints: pools[nc.NodePool].Taints, Allocatable: alloc})
	}
	return nodes, at
}

type replayer struct {
	nsLabels map[string]map[string]string
	nodes    []*replayNode
	index    map[string]int
	// bound are the pods bound so far, with their nodes, so that a counter
	// made late counts them.
	bound    []boundPod
	spreads  map[string]*spreadCounter
	terms    map[string]*termCounter
	owners   map[string]*termCounter // required anti-affinity terms of bound pods
	ownerSig []string                // keys of owners, in the order first seen
	report   replayReport
	// owned counts, per zone spread constraint, the pods that carry it, by
	// zone.
	owned map[string]map[string]int
}

type boundPod struct {
	pod  *corev1.Pod
	node int
}

func newReplayer(in packer.Input) *replayer {
	return &replayer{
		nsLabels: in.NamespaceLabels,
		index:    map[string]int{},
		spreads:  map[string]*spreadCounter{},
		terms:    map[string]*termCounter{},
		owners:   map[string]*termCounter{},
		owned:    map[string]map[string]int{},
		report:   replayReport{violations: map[string]int{}, first: map[string]string{}, zoneSpreadPods: map[string]int{}, failed: map[types.NamespacedName]bool{}},
	}
}

func (rp *replayer) addNode(name string, l map[string]string, tt []corev1.Taint, alloc resources.Vector) {
	rp.index[name] = len(rp.nodes)
	rp.nodes = append(rp.nodes, &replayNode{name: name, labels: l, taints: tt, alloc: alloc})
}

func (rp *replayer) violate(kind string, p *corev1.Pod, n *replayNode, format string, args ...any) {
	if rp.report.violations[kind] == 0 {
		rp.report.first[kind] = fmt.Sprintf("%s/%s on %s: %s", p.Namespace, p.Name, n.name, fmt.Sprintf(format, args...))
	}
	rp.report.violations[kind]++
}

// check judges binding p on node i, counting every kind of constraint it
// breaks once.
func (rp *replayer) check(p *corev1.Pod, i int) {
	n := rp.nodes[i]
	req := resources.PodVector(p)
	total := n.used.Clone()
	total.Add(req)
	if !total.Fits(n.alloc) {
		rp.violate(violResources, p, n, "requests %v on top of %v exceed %v", req, n.used, n.alloc)
	}
	if !rp.nodeMatches(p, n) {
		rp.violate(violNode, p, n, "node affinity or taints")
	} else if ok, taint := taints.ToleratesAll(p.Spec.Tolerations, n.taints, taints.Blocking); !ok {
		rp.violate(violNode, p, n, "untolerated taint %s", taint.Key)
	}
	if portsTaken(podPorts(p), n.ports) {
		rp.violate(violPorts, p, n, "host port taken")
	}
	broken := map[string]string{}
	for _, c := range hardSpread(p) {
		kind := violOtherSpread
		switch c.TopologyKey {
		case wellknown.LabelTopologyZone:
			kind = violZoneSpread
		case wellknown.LabelHostname:
			kind = violHostSpread
		}
		if _, done := broken[kind]; done {
			continue
		}
		if why := rp.spreadCounter(p, c).judge(p, c, i); why != "" {
			broken[kind] = why
		}
	}
	for _, kind := range violationKinds {
		if why, ok := broken[kind]; ok {
			rp.violate(kind, p, n, "%s", why)
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		if why := rp.affinity(p, i); why != "" {
			rp.violate(violAffinity, p, n, "%s", why)
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			tc := rp.termCounter(p, []corev1.PodAffinityTerm{term}, rp.terms, nil)
			if v, ok := n.labels[tc.keys[0]]; ok && tc.counts[0][v] > 0 {
				rp.violate(violAnti, p, n, "%d pods its term selects in %s=%s", tc.counts[0][v], tc.keys[0], v)
				break
			}
		}
	}
	for _, sig := range rp.ownerSig {
		tc := rp.owners[sig]
		if !tc.matches(p) {
			continue
		}
		if v, ok := n.labels[tc.keys[0]]; ok && tc.counts[0][v] > 0 {
			rp.violate(violExistingAnti, p, n, "a bound pod's anti-affinity selects it in %s=%s", tc.keys[0], v)
			break
		}
	}
}

// bind puts p on node i and counts it everywhere it counts; planned says
// that it is one of the plan's pods, not one already on a node, and counts
// it in the report's zones too.
func (rp *replayer) bind(p *corev1.Pod, i int, planned bool) {
	n := rp.nodes[i]
	n.used.Add(resources.PodVector(p))
	n.ports = append(n.ports, podPorts(p)...)
	rp.bound = append(rp.bound, boundPod{p, i})
	for _, sc := range rp.spreads {
		sc.add(p, i)
	}
	for _, tc := range rp.terms {
		tc.add(p, n)
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && p.DeletionTimestamp == nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			// The owner counter counts owners, not the pods they select.
			tc := rp.termCounter(p, []corev1.PodAffinityTerm{term}, rp.owners, &rp.ownerSig)
			if v, ok := n.labels[tc.keys[0]]; ok {
				tc.counts[0][v]++
			}
		}
	}
	if zone, ok := n.labels[wellknown.LabelTopologyZone]; ok && planned {
		seen := false
		for _, c := range hardSpread(p) {
			if c.TopologyKey != wellknown.LabelTopologyZone {
				continue
			}
			sig := rp.spreadCounter(p, c).sig
			if rp.owned[sig] == nil {
				rp.owned[sig] = map[string]int{}
			}
			rp.owned[sig][zone]++
			if !seen {
				rp.report.zoneSpreadPods[zone]++
				seen = true
			}
		}
	}
}

// finish works out the skews once every pod is bound.
func (rp *replayer) finish() {
	zones := map[string]bool{}
	for _, n := range rp.nodes {
		if z, ok := n.labels[wellknown.LabelTopologyZone]; ok {
			zones[z] = true
		}
	}
	skew := func(count func(zone string) int) int {
		lo, hi := -1, 0
		for z := range zones {
			c := count(z)
			if lo < 0 || c < lo {
				lo = c
			}
			hi = max(hi, c)
		}
		return hi - max(lo, 0)
	}
	for sig, sc := range rp.spreads {
		if sc.key != wellknown.LabelTopologyZone {
			continue
		}
		rp.report.selectedSkew = max(rp.report.selectedSkew, skew(func(z string) int {
			if d, ok := sc.domIdx[z]; ok {
				return sc.counts[d]
			}
			return 0
		}))
		owned := rp.owned[sig]
		rp.report.ownerSkew = max(rp.report.ownerSkew, skew(func(z string) int { return owned[z] }))
	}
}

func (rp *replayer) nodeMatches(p *corev1.Pod, n *replayNode) bool {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels}}
	ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(node)
	return err == nil && ok
}

func hardSpread(p *corev1.Pod) []corev1.TopologySpreadConstraint {
	var out []corev1.TopologySpreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			out = append(out, c)
		}
	}
	return out
}

// withKeys returns the selector of ls with the owner's values of match
// keys (In) and mismatch keys (NotIn) added; nil selects nothing.
func withKeys(ls *metav1.LabelSelector, own map[string]string, match, mismatch []string) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	for _, keys := range []struct {
		keys []string
		op   selection.Operator
	}{{match, selection.In}, {mismatch, selection.NotIn}} {
		for _, k := range keys.keys {
			if v, ok := own[k]; ok {
				if r, err := labels.NewRequirement(k, keys.op, []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
	}
	return sel
}

// spreadCounter counts, per domain of one topology key, the bound pods a
// spread constraint selects, over the nodes it considers.
type spreadCounter struct {
	sig    string
	key    string
	ns     string
	sel    labels.Selector
	dom    []int // per node: its domain, or -1 when the constraint leaves it out
	domIdx map[string]int
	counts []int // per domain
	// hist[c] is how many domains count c pods; low the least c with
	// domains (counts only grow).
	hist []int
	low  int
}

// spreadCounter returns the counter for constraint c of p, making it (and
// counting the pods bound so far) the first time.
func (rp *replayer) spreadCounter(p *corev1.Pod, c corev1.TopologySpreadConstraint) *spreadCounter {
	sel := withKeys(c.LabelSelector, p.Labels, c.MatchLabelKeys, nil)
	var keys []string
	for _, o := range hardSpread(p) {
		keys = append(keys, o.TopologyKey)
	}
	slices.Sort(keys)
	honorAff := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	sig := fmt.Sprintf("%s\x00%s\x00%s\x00%v", c.TopologyKey, p.Namespace, sel.String(), keys)
	if _, ok := sel.Requirements(); !ok {
		sig += "\x00nothing"
	}
	if honorAff {
		js, _ := json.Marshal([]any{p.Spec.NodeSelector, p.Spec.Affinity})
		sig += "\x00A" + string(js)
	}
	if honorTaints {
		js, _ := json.Marshal(p.Spec.Tolerations)
		sig += "\x00T" + string(js)
	}
	if sc, ok := rp.spreads[sig]; ok {
		return sc
	}
	sc := &spreadCounter{sig: sig, key: c.TopologyKey, ns: p.Namespace, sel: sel, domIdx: map[string]int{}}
	if sel.Empty() {
		// kube-scheduler counts no pod for an empty selector.
		sc.sel = labels.Nothing()
	}
	for _, n := range rp.nodes {
		d := -1
		ok := true
		for _, k := range keys {
			if _, has := n.labels[k]; !has {
				ok = false
			}
		}
		if ok && honorAff {
			ok = rp.nodeMatches(p, n)
		}
		if ok && honorTaints {
			ok, _ = taints.ToleratesAll(p.Spec.Tolerations, n.taints, taints.Blocking)
		}
		if ok {
			v := n.labels[c.TopologyKey]
			var seen bool
			if d, seen = sc.domIdx[v]; !seen {
				d = len(sc.counts)
				sc.domIdx[v] = d
				sc.counts = append(sc.counts, 0)
			}
		}
		sc.dom = append(sc.dom, d)
	}
	sc.hist = []int{len(sc.counts)}
	for _, b := range rp.bound {
		sc.add(b.pod, b.node)
	}
	rp.spreads[sig] = sc
	return sc
}

func (sc *spreadCounter) add(p *corev1.Pod, i int) {
	d := sc.dom[i]
	if d < 0 || p.Namespace != sc.ns || p.DeletionTimestamp != nil || !sc.sel.Matches(labels.Set(p.Labels)) {
		return
	}
	c := sc.counts[d]
	sc.counts[d]++
	sc.hist[c]--
	if c+1 == len(sc.hist) {
		sc.hist = append(sc.hist, 0)
	}
	sc.hist[c+1]++
	for sc.low < len(sc.hist)-1 && sc.hist[sc.low] == 0 {
		sc.low++
	}
}

// judge says why binding p on node i breaks c, or "".
func (sc *spreadCounter) judge(p *corev1.Pod, c corev1.TopologySpreadConstraint, i int) string {
	d := sc.dom[i]
	if d < 0 {
		return fmt.Sprintf("the node is not among those its %s constraint counts", c.TopologyKey)
	}
	low := sc.low
	if c.MinDomains != nil && len(sc.counts) < int(*c.MinDomains) {
		low = 0
	}
	self := 0
	if withKeys(c.LabelSelector, p.Labels, c.MatchLabelKeys, nil).Matches(labels.Set(p.Labels)) {
		self = 1
	}
	if skew := sc.counts[d] + self - low; skew > int(c.MaxSkew) {
		return fmt.Sprintf("%s: %d selected pods in its domain, %d in the emptiest: skew %d > %d", c.TopologyKey, sc.counts[d], low, skew, c.MaxSkew)
	}
	return ""
}

// termCounter counts, per term, the bound pods that match every term of a
// list (required pod affinity counts a pod only when it matches all of the
// owner's terms), per value of the term's topology key.
type termCounter struct {
	keys   []string
	ns     [][]string // nil: every namespace
	sels   []labels.Selector
	counts []map[string]int
	owner  bool // counts owners (bind adds them), not the pods selected
}

func (rp *replayer) termCounter(p *corev1.Pod, terms []corev1.PodAffinityTerm, into map[string]*termCounter, order *[]string) *termCounter {
	tc := &termCounter{owner: order != nil}
	var sig strings.Builder
	for _, t := range terms {
		sel := withKeys(t.LabelSelector, p.Labels, t.MatchLabelKeys, t.MismatchLabelKeys)
		var ns []string
		switch {
		case len(t.Namespaces) == 0 && t.NamespaceSelector == nil:
			ns = []string{p.Namespace}
		default:
			ns = slices.Clone(t.Namespaces)
			if t.NamespaceSelector != nil {
				nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
				if err == nil && nsSel.Empty() {
					ns = nil
				} else if err == nil {
					for name, l := range rp.nsLabels {
						if nsSel.Matches(labels.Set(l)) {
							ns = append(ns, name)
						}
					}
				}
			}
			if ns != nil {
				slices.Sort(ns)
				ns = slices.Compact(ns)
				if len(ns) == 0 {
					ns = []string{}
				}
			}
		}
		tc.keys = append(tc.keys, t.TopologyKey)
		tc.ns = append(tc.ns, ns)
		tc.sels = append(tc.sels, sel)
		tc.counts = append(tc.counts, map[string]int{})
		_, some := sel.Requirements()
		fmt.Fprintf(&sig, "%s\x00%v\x00%v\x00%s\x01", t.TopologyKey, ns == nil, ns, sel.String())
		if !some {
			sig.WriteString("nothing\x01")
		}
	}
	if got, ok := into[sig.String()]; ok {
		return got
	}
	into[sig.String()] = tc
	if order != nil {
		*order = append(*order, sig.String())
	} else {
		for _, b := range rp.bound {
			tc.add(b.pod, rp.nodes[b.node])
		}
	}
	return tc
}

func (tc *termCounter) matches(p *corev1.Pod) bool {
	for i := range tc.sels {
		if tc.ns[i] != nil && !slices.Contains(tc.ns[i], p.Namespace) {
			return false
		}
		if !tc.sels[i].Matches(labels.Set(p.Labels)) {
			return false
		}
	}
	return true
}

func (tc *termCounter) add(p *corev1.Pod, n *replayNode) {
	if tc.owner || p.DeletionTimestamp != nil || !tc.matches(p) {
		return
	}
	for i, k := range tc.keys {
		if v, ok := n.labels[k]; ok {
			tc.counts[i][v]++
		}
	}
}

func (tc *termCounter) empty() bool {
	for _, c := range tc.counts {
		if len(c) > 0 {
			return false
		}
	}
	return true
}

// affinity says why binding p on node i breaks its required pod affinity,
// or "": every term needs a pod that matches all of them in the node's
// domain, except that the first pod of a series that matches its own terms
// may go anywhere while no pod matches them.
func (rp *replayer) affinity(p *corev1.Pod, i int) string {
	n := rp.nodes[i]
	tc := rp.termCounter(p, p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, rp.terms, nil)
	exist := true
	for k, key := range tc.keys {
		v, ok := n.labels[key]
		if !ok {
			return "the node lacks " + key
		}
		if tc.counts[k][v] <= 0 {
			exist = false
		}
	}
	if exist || tc.empty() && tc.matches(p) {
		return ""
	}
	return "no pod its terms select in the node's domains"
}

func podPorts(p *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, hostPorts(c.Ports)...)
		}
	}
	for _, c := range p.Spec.Containers {
		out = append(out, hostPorts(c.Ports)...)
	}
	return out
}

func hostPorts(ports []corev1.ContainerPort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range ports {
		if p.HostPort > 0 {
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
			if p.HostIP == "" {
				p.HostIP = "0.0.0.0"
			}
			out = append(out, p)
		}
	}
	return out
}

func portsTaken(want, taken []corev1.ContainerPort) bool {
	for _, a := range want {
		for _, b := range taken {
			if a.HostPort == b.HostPort && a.Protocol == b.Protocol && (a.HostIP == b.HostIP || a.HostIP == "0.0.0.0" || b.HostIP == "0.0.0.0") {
				return true
			}
		}
	}
	return false
}

// replayClaim is a NodeClaim of pool("p", 10) in zone, of type fake-it-<typ>
// (typ+1 vCPU), holding pods.
func replayClaim(zone string, typ int, pods ...*corev1.Pod) packer.NodeClaim {
	nc := packer.NodeClaim{NodePool: "p", InstanceTypes: []string{fmt.Sprintf("fake-it-%d", typ)}, Zones: []string{zone}, CapacityTypes: []string{packer.CapacityTypeOnDemand}}
	for _, p := range pods {
		nc.Requests.Add(resources.PodVector(p))
		nc.Pods = append(nc.Pods, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	}
	return nc
}

func TestReplay(t *testing.T) {
	a, b, c := pod("a", "100m", "100Mi", spreadZone("x")), pod("b", "100m", "100Mi", spreadZone("x")), pod("c", "100m", "100Mi", spreadZone("x"))
	h1, h2 := pod("h1", "100m", "100Mi", spreadHost("x")), pod("h2", "100m", "100Mi", spreadHost("x"))
	// The follower does not match its own term, so it may not go first.
	follower, leader := pod("follower", "100m", "100Mi", affZone("x"), withLabels("aff", "y")), pod("leader", "100m", "100Mi", withLabels("aff", "x"))
	anti1, anti2 := pod("anti1", "100m", "100Mi", antiHost("y")), pod("anti2", "100m", "100Mi", antiHost("y"))
	big1, big2 := pod("big1", "1", "100Mi"), pod("big2", "1", "100Mi")
	cases := []struct {
		name   string
		pods   []*corev1.Pod
		claims []packer.NodeClaim
		want   map[string]int
		zones  map[string]int
	}{
		{
			name:   "zone spread balanced in creation order",
			pods:   []*corev1.Pod{a, b, c},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 3, a), replayClaim("test-zone-2", 3, b), replayClaim("test-zone-3", 3, c)},
			zones:  map[string]int{"test-zone-1": 1, "test-zone-2": 1, "test-zone-3": 1},
		},
		{
			name:   "two of three in one zone first",
			pods:   []*corev1.Pod{a, b, c},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 3, a, b), replayClaim("test-zone-2", 3, c)},
			want:   map[string]int{violZoneSpread: 1},
			zones:  map[string]int{"test-zone-1": 2, "test-zone-2": 1},
		},
		{
			// The same plan holds when the pod in the other zone is
			// created second (with no node in the third zone).
			name:   "the same plan in another creation order",
			pods:   []*corev1.Pod{a, c, b},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 3, a, b), replayClaim("test-zone-2", 3, c)},
			zones:  map[string]int{"test-zone-1": 2, "test-zone-2": 1},
		},
		{
			name:   "hostname spread",
			pods:   []*corev1.Pod{h1, h2},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 3, h1, h2), replayClaim("test-zone-1", 3)},
			want:   map[string]int{violHostSpread: 1},
		},
		{
			name:   "affinity to a pod created later",
			pods:   []*corev1.Pod{follower, leader},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 3, follower, leader)},
			want:   map[string]int{violAffinity: 1},
		},
		{
			name:   "affinity to a pod created earlier",
			pods:   []*corev1.Pod{leader, follower},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 3, leader), replayClaim("test-zone-1", 3, follower)},
		},
		{
			name:   "anti-affinity both ways",
			pods:   []*corev1.Pod{anti1, anti2},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 3, anti1, anti2)},
			want:   map[string]int{violAnti: 1, violExistingAnti: 1},
		},
		{
			name:   "resources",
			pods:   []*corev1.Pod{big1, big2},
			claims: []packer.NodeClaim{replayClaim("test-zone-1", 0, big1, big2)},
			want:   map[string]int{violResources: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := packer.Input{Pods: tc.pods, NodePools: []packer.NodePool{pool("p", 10)}}
			rep := replay(t, in, packer.Result{NodeClaims: tc.claims})
			got := map[string]int{}
			for k, v := range rep.violations {
				if v > 0 {
					got[k] = v
				}
			}
			if len(tc.want) == 0 && len(got) == 0 {
				got = nil
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("violations %v, want %v (%s)", got, tc.want, rep)
			}
			if tc.zones != nil && fmt.Sprint(rep.zoneSpreadPods) != fmt.Sprint(tc.zones) {
				t.Errorf("zone spread pods %v, want %v", rep.zoneSpreadPods, tc.zones)
			}
		})
	}
}

// TestReplayAgreesWithFeasible checks the replay against the packer's own
// Feasible (kube-scheduler's filters), pod by pod, on a plan of the diverse
// workload bound in the reverse of the order it was made for, which breaks
// constraints: the same pods must fail.
func TestReplayAgreesWithFeasible(t *testing.T) {
	in := karpenterbench.Input(karpenterbench.DiversePods(500), packer.PreferenceScore)
	res := packer.Solve(in)
	in.Pods = slices.Clone(in.Pods)
	slices.Reverse(in.Pods)
	rep := replay(t, in, res)
	nodes, at := planNodes(t, in, res)
	failed := 0
	for _, p := range in.Pods {
		nn := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		i := at[nn]
		err := packer.Feasible(p, nodes, i, in.NamespaceLabels)
		if (err != nil) != rep.failed[nn] {
			t.Errorf("pod %s on %s: Feasible says %v, the replay failed=%v", nn, nodes[i].Name, err, rep.failed[nn])
		}
		if err != nil {
			failed++
		}
		nodes[i].Pods = append(nodes[i].Pods, p)
	}
	if failed == 0 {
		t.Fatal("no binding fails: the test checks nothing")
	}
	t.Logf("%d of %d bindings fail; %s", failed, len(in.Pods), rep)
}

func spreadHost(app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels["app"] = app
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: wellknown.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}}
	}
}

// TestCreationOrder binds the plans of the diverse workload in creation
// order, as kube-scheduler would bind them: no binding may break a
// constraint, and every zone spread constraint must find its pods even
// across the zones at the end too. The pods are created in the order of the
// list, or, in the last case, a second apart in that order and listed
// shuffled; kube-scheduler takes those of a higher priority first.
func TestCreationOrder(t *testing.T) {
	catalog := func(in packer.Input) packer.Input {
		in.NodePools = []packer.NodePool{catalogPool(t)}
		return in
	}
	prioritized := func(in packer.Input) packer.Input {
		high := int32(1000)
		for i, p := range in.Pods {
			if i%3 == 0 {
				p.Spec.Priority = &high
			}
		}
		return in
	}
	shuffled := func(in packer.Input) packer.Input {
		created(in.Pods)
		in.Pods = slices.Clone(in.Pods)
		rand.New(rand.NewPCG(5, 6)).Shuffle(len(in.Pods), func(i, j int) { in.Pods[i], in.Pods[j] = in.Pods[j], in.Pods[i] })
		return in
	}
	cases := []struct {
		name string
		in   packer.Input
	}{
		{"benchmark types", karpenterbench.Input(karpenterbench.DiversePods(3000), packer.PreferenceScore)},
		{"without overhead", karpenterbench.InputWithoutOverhead(karpenterbench.DiversePods(3000), packer.PreferenceScore)},
		{"catalog", catalog(karpenterbench.Input(karpenterbench.DiversePods(2000), packer.PreferenceScore))},
		{"every third pod of a higher priority", prioritized(karpenterbench.Input(karpenterbench.DiversePods(2000), packer.PreferenceScore))},
		{"created a second apart, listed shuffled", shuffled(karpenterbench.Input(karpenterbench.DiversePods(2000), packer.PreferenceScore))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := packer.Solve(tc.in)
			if len(res.Unschedulable) > 0 || len(res.Ignored) > 0 {
				t.Fatalf("%d unschedulable, %d ignored", len(res.Unschedulable), len(res.Ignored))
			}
			rep := replay(t, tc.in, res)
			if rep.bound != len(tc.in.Pods) || rep.total() > 0 {
				t.Errorf("%s", rep)
			}
			if rep.selectedSkew > 1 {
				t.Errorf("a zone spread constraint's pods differ by %d between two zones at the end: %s", rep.selectedSkew, rep)
			}
		})
	}
}
