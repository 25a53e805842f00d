package packer

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
)

// Verdict codes of NodePoolVerdict.Code.
const (
	CodeTaintNotTolerated       = "TaintNotTolerated"
	CodeRequirementIncompatible = "RequirementIncompatible"
	CodeLimitExceeded           = "LimitExceeded"
	CodeNoInstanceTypeFits      = "NoInstanceTypeFits"
	CodeTopologyUnsatisfiable   = "TopologyUnsatisfiable"
	CodeAffinityUnsatisfiable   = "AffinityUnsatisfiable"
	CodeHostPortConflict        = "HostPortConflict"
	CodeNoAvailableOffering     = "NoAvailableOffering"
	CodeMinValuesUnsatisfiable  = "MinValuesUnsatisfiable"
)

// DefaultMaxInstanceTypes caps the instance types listed on a NodeClaim when
// Input.MaxInstanceTypes is 0.
const DefaultMaxInstanceTypes = 600

// variant is a shape with a chosen subset of its preferences promoted to
// requirements: what one attempt to place the pod checks.
type variant struct {
	id      int
	sh      *shape
	alts    []requirements.Requirements
	altIDs  []int
	empty   bool
	tols    []corev1.Toleration
	effects taints.Effects
	spread  []spreadC
	aff     []*group
	anti    []*group
	keys    []int // topology keys with constraints, hostname included
	primary int   // first non-hostname key, or -1
	selfAll bool  // the pod matches every affinity term of the variant
}

// bootstrap reports whether the first pod of a self-affine series may go
// anywhere: no pod matches any of its affinity terms yet.
func (v *variant) bootstrap() bool {
	if !v.selfAll {
		return false
	}
	for _, g := range v.aff {
		if g.total > 0 {
			return false
		}
	}
	return true
}

func (s *state) newVariant(sh *shape, active []pref, effects taints.Effects) *variant {
	v := &variant{id: s.variants, sh: sh, tols: sh.tols, effects: effects, primary: -1}
	s.variants++
	v.alts = sh.alts
	v.spread = slices.Clone(sh.spread)
	v.aff = slices.Clone(sh.aff)
	v.anti = slices.Clone(sh.anti)
	for _, p := range active {
		switch p.kind {
		case prefPodAffinity:
			v.aff = append(v.aff, p.g)
		case prefPodAntiAffinity:
			v.anti = append(v.anti, p.g)
		case prefSpread:
			v.spread = append(v.spread, p.spread)
		case prefNodeAffinity:
			alts := make([]requirements.Requirements, 0, len(v.alts))
			for _, a := range v.alts {
				alts = append(alts, a.Intersect(p.alt))
			}
			v.alts = alts
		}
	}
	v.empty = len(v.alts) == 1 && v.alts[0].Len() == 0
	for _, a := range v.alts {
		v.altIDs = append(v.altIDs, s.altID(a))
	}
	keys := map[int]bool{}
	for _, c := range v.spread {
		keys[c.g.key] = true
	}
	for _, g := range v.aff {
		keys[g.key] = true
	}
	for _, g := range v.anti {
		keys[g.key] = true
	}
	for _, g := range sh.forbidden {
		keys[g.key] = true
	}
	for k := range keys {
		v.keys = append(v.keys, k)
	}
	slices.Sort(v.keys)
	for _, k := range v.keys {
		if k != s.hostKey {
			v.primary = k
			break
		}
	}
	v.selfAll = true
	for _, g := range v.aff {
		if !g.t.matches(sh.ns, sh.labels) {
			v.selfAll = false
		}
	}
	return v
}

// buildVariants returns the ladder of attempts for a shape under a policy,
// strictest first; the last one carries no preference.
func (s *state) buildVariants(sh *shape, policy PreferencePolicy, softTaints bool) []*variant {
	if policy == PreferenceIgnore || len(sh.prefs) == 0 && !(policy == PreferenceRespect && softTaints) {
		return []*variant{s.newVariant(sh, nil, taints.Blocking)}
	}
	prefs := slices.Clone(sh.prefs)
	if policy == PreferenceRespect {
		// Karpenter's relaxation order: pod affinity, pod anti-affinity,
		// node affinity (heaviest first, one active at a time), spread.
		slices.SortStableFunc(prefs, func(a, b pref) int {
			if c := cmp.Compare(a.kind, b.kind); c != 0 {
				return c
			}
			if a.kind == prefNodeAffinity {
				return cmp.Compare(b.weight, a.weight)
			}
			return 0
		})
		var out []*variant
		effects := taints.Blocking
		if softTaints {
			effects = taints.AllEffects
		}
		for i := 0; i <= len(prefs); i++ {
			active := prefs[i:]
			// Only the heaviest remaining node affinity preference is active.
			var act []pref
			seenNA := false
			for _, p := range active {
				if p.kind == prefNodeAffinity {
					if seenNA {
						continue
					}
					seenNA = true
				}
				act = append(act, p)
			}
			out = append(out, s.newVariant(sh, act, effects))
		}
		if softTaints {
			out = append(out, s.newVariant(sh, nil, taints.Blocking))
		}
		return out
	}
	// Score: drop the lightest preference first.
	slices.SortStableFunc(prefs, func(a, b pref) int { return cmp.Compare(b.weight, a.weight) })
	var out []*variant
	for n := len(prefs); n >= 0; n-- {
		out = append(out, s.newVariant(sh, prefs[:n], taints.Blocking))
	}
	return out
}

type bucketKey struct {
	key int
	dom int32
}

type ptrKey struct {
	variant int
	list    int32 // -1 existing, -2 all claims, otherwise a bucket id
}

type step struct {
	pod int32
	bin int
}

type solver struct {
	s       *state
	in      Input
	policy  PreferencePolicy
	pods    []*corev1.Pod
	shapeOf []*shape

	existing []int
	claims   []int
	buckets  map[bucketKey]int32
	lists    [][]int
	ptr      map[ptrKey]int32 // by variant and list
	cptr     map[ptrKey]int32 // by resource class and list
	// dead are, by variant, the existing nodes past its pointer that it
	// can never take (see skipDead).
	dead    map[int][]int32
	classes resClasses
	// Scratch of classRejects.
	candScratch []*candSet
	fixScratch  []int
	// Scratch of bestSplit.
	splitKeep, splitMove []int32
	out                  outcome
	poolsOrd             []*poolIdx
	trace                []step
	binOf                []int
	alone                map[int]alone // variant id → the cheapest claim for one pod
	ord                  *podOrder
	doms                 []int32 // scratch of tryDecided
	// fixedOf are the domains fixDomains decided for each pod, by pod
	// index; nil for most.
	fixedOf [][]*keyQuota
}

// Solve packs in.Pods onto in.Nodes and new NodeClaims of in.NodePools.
func Solve(in Input) Result {
	r, _ := solve(in)
	return r
}

func solve(in Input) (Result, []step) {
	r, t, _ := solveCounted(in)
	return r, t
}

func solveCounted(in Input) (Result, []step, int) {
	var res Result
	s := newState(in.NamespaceLabels, true)
	policy := in.PreferencePolicy
	if policy == "" {
		policy = PreferenceScore
	}
	sv := &solver{s: s, in: in, policy: policy, buckets: map[bucketKey]int32{}, ptr: map[ptrKey]int32{}, cptr: map[ptrKey]int32{}}
	// Without a cache from the caller, one for this packing: building the
	// state reads each node's facts more than once.
	callerCache := in.Cache != nil
	if !callerCache {
		in.Cache = NewCache()
	}
	in.Cache.compact()
	in.Cache.scratch.reset()
	s.cache = in.Cache
	s.maxTypes = in.MaxInstanceTypes
	s.relaxMin = in.MinValuesPolicy == MinValuesBestEffort
	if s.maxTypes <= 0 {
		s.maxTypes = DefaultMaxInstanceTypes
	}
	s.pinHook = sv.onPin

	// Compile pods into shapes.
	c := &compiler{s: s, shapes: map[string]*shape{}}
	if callerCache {
		// Only a cache that outlives this packing gains from the memo.
		in.Cache.sigs.turn()
		c.sigs = &in.Cache.sigs
	}
	for _, pod := range in.Pods {
		nn := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if why := ignoreReason(pod, in.VolumeZones); why != "" {
			res.Ignored = append(res.Ignored, Unschedulable{Pod: nn, Reason: why})
			continue
		}
		zones, hasZones := in.VolumeZones[nn]
		sh, err := c.compile(pod, zones, hasZones)
		if err != nil {
			res.Ignored = append(res.Ignored, Unschedulable{Pod: nn, Reason: err.Error()})
			continue
		}
		sv.pods = append(sv.pods, pod)
		sv.shapeOf = append(sv.shapeOf, sh)
	}
	slices.SortFunc(res.Ignored, func(a, b Unschedulable) int { return cmpNN(a.Pod, b.Pod) })

	// Pools in Karpenter's order: weight descending, then name descending.
	var daemonAlts [][]requirements.Requirements
	var daemons []*corev1.Pod
	for _, d := range in.DaemonSetPods {
		alts, err := requirements.FromPod(d)
		if err != nil {
			continue
		}
		daemons = append(daemons, d)
		daemonAlts = append(daemonAlts, alts)
	}
	softTaints := false
	for i := range in.NodePools {
		np := &in.NodePools[i]
		s.pools = append(s.pools, newPoolIdx(np, i, in.Cache.table(np, daemons, daemonAlts)))
		for _, t := range np.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				softTaints = true
			}
		}
	}
	sv.poolsOrd = slices.Clone(s.pools)
	slices.SortStableFunc(sv.poolsOrd, func(a, b *poolIdx) int {
		if c := cmp.Compare(b.np.Weight, a.np.Weight); c != 0 {
			return c
		}
		return strings.Compare(b.np.Name, a.np.Name)
	})

	// Existing nodes, sorted by name (registered before in flight).
	sc := &in.Cache.scratch
	if cap(sc.nodes) < len(in.Nodes) {
		sc.nodes = make([]*Node, len(in.Nodes))
		sc.existing = make([]int, 0, len(in.Nodes))
	}
	nodes := sc.nodes[:len(in.Nodes)]
	for i := range in.Nodes {
		nodes[i] = &in.Nodes[i]
	}
	// Callers mostly pass the nodes in this order already, which
	// nodeFacts tells mostly without comparing names.
	facts, sorted := s.nodeFacts(nodes)
	if !sorted {
		slices.SortStableFunc(nodes, func(a, b *Node) int { return packingOrder(a.Name, a.InFlight, b.Name, b.InFlight) })
		facts, _ = s.nodeFacts(nodes)
	}
	s.indexSpreadKeys(facts)
	s.reserveNodeBins(len(nodes), len(s.keys))
	sv.existing = sc.existing[:0]
	for i, n := range nodes {
		sv.existing = append(sv.existing, s.addNode(n, facts[i]).id)
	}
	s.addOwnerGroups(in.Nodes)
	s.keyIndex(wellknown.LabelHostname)
	s.newDom = s.domain(s.hostKey, "\x00new")
	for _, b := range s.bins {
		for len(b.dom) < len(s.keys) {
			b.dom = append(b.dom, s.binDomain(b, len(b.dom)))
		}
	}
	for _, p := range s.pools {
		for k := range s.keys {
			for _, v := range s.domainsFor(p, k) {
				s.domain(k, v)
			}
		}
	}
	s.countExisting()
	s.registerDomains()
	for _, sh := range c.list {
		s.link(sh)
		sh.variants = s.buildVariants(sh, policy, softTaints)
	}

	// Order: first the pods that need a node apart from every other pod
	// like them, then by largest cpu, then memory, then name, as first-fit
	// decreasing. The first open the nodes that the rest must fill: packed
	// after the rest, they find the nodes that the rest opened full and
	// open nodes of their own beside them.
	order := make([]int32, len(sv.pods))
	for i := range order {
		order[i] = int32(i)
	}
	apart := map[*shape]bool{}
	for _, sh := range c.list {
		apart[sh] = s.apart(sh)
	}
	var first []bool
	if len(sv.in.First) > 0 {
		first = make([]bool, len(sv.pods))
		for i, p := range sv.pods {
			first[i] = sv.in.First[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if first != nil && first[a] != first[b] {
			if first[a] {
				return -1
			}
			return 1
		}
		if aa, ab := apart[sv.shapeOf[a]], apart[sv.shapeOf[b]]; aa != ab {
			if aa {
				return -1
			}
			return 1
		}
		ra, rb := &sv.shapeOf[a].req, &sv.shapeOf[b].req
		if c := cmp.Compare(rb.CPU, ra.CPU); c != 0 {
			return c
		}
		if c := cmp.Compare(rb.Memory, ra.Memory); c != 0 {
			return c
		}
		pa, pb := sv.pods[a], sv.pods[b]
		if c := strings.Compare(pa.Namespace, pb.Namespace); c != 0 {
			return c
		}
		return strings.Compare(pa.Name, pb.Name)
	})
	sv.ord = &podOrder{rank: creationRanks(sv.pods), shapeOf: sv.shapeOf, cur: -1}
	sv.fixDomains(c, order)
	s.ord = sv.ord
	sv.binOf = make([]int, len(sv.pods))
	for i := range sv.binOf {
		sv.binOf[i] = -1
	}
	pending := sv.placeAll(order)
	// A pod that found no place in the domain fixDomains chose for it
	// (its types there are too small, or the pool's limits leave no
	// room) tries every domain its own constraints allow.
	unfixed := false
	for _, pi := range pending {
		if sv.fixedOf[pi] != nil {
			sv.fixedOf[pi] = nil
			unfixed = true
		}
	}
	if unfixed {
		pending = sv.placeAll(pending)
	}
	sv.improve()
	sv.rightSize()
	sv.result(&res, pending)
	// The plan holds in creation order: that is the order of the trace.
	rank := sv.ord.rank
	slices.SortFunc(sv.trace, func(a, b step) int { return cmp.Compare(rank[a.pod], rank[b.pod]) })
	return res, sv.trace, s.checks
}

// placeAll places the pods in order, then those that failed again for as
// long as some succeed, and returns those that never did.
func (sv *solver) placeAll(pending []int32) []int32 {
	for len(pending) > 0 {
		var failed []int32
		for _, pi := range pending {
			if !sv.place(pi) {
				failed = append(failed, pi)
			}
		}
		if len(failed) == len(pending) {
			break
		}
		pending = failed
	}
	return pending
}

// apart reports whether no two pods of the shape may share a node: a
// required anti-affinity term on the hostname key selects the pod itself.
func (s *state) apart(sh *shape) bool {
	for _, g := range sh.anti {
		if g.key == s.hostKey && g.t.matches(sh.ns, sh.labels) {
			return true
		}
	}
	return false
}

func cmpNN(a, b types.NamespacedName) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func (sv *solver) onPin(b *bin, k int) {
	if k == sv.s.hostKey {
		return
	}
	sv.appendBucket(bucketKey{k, b.dom[k]}, b.id)
}

func (sv *solver) appendBucket(bk bucketKey, id int) {
	li, ok := sv.buckets[bk]
	if !ok {
		li = int32(len(sv.lists))
		sv.buckets[bk] = li
		sv.lists = append(sv.lists, nil)
	}
	sv.lists[li] = append(sv.lists[li], id)
}

// place puts one pod somewhere, or reports that it cannot.
func (sv *solver) place(pi int32) bool {
	sv.current(pi)
	defer sv.current(-1)
	sh := sv.shapeOf[pi]
	vs := sh.variants
	if sv.policy == PreferenceRespect {
		for _, v := range vs {
			if sv.tryOpen(v, pi) || sv.tryNew(v, pi) {
				return true
			}
		}
		return false
	}
	for _, v := range vs {
		if sv.tryOpen(v, pi) {
			return true
		}
	}
	relaxed := vs[len(vs)-1]
	plan, ok := sv.planNew(relaxed)
	if !ok {
		return false
	}
	for _, v := range vs[:len(vs)-1] {
		if p, ok := sv.planNew(v); ok && p.price <= plan.price*(1+1e-9) {
			sv.openNew(p, pi)
			return true
		}
	}
	sv.openNew(plan, pi)
	return true
}

func (sv *solver) tryNew(v *variant, pi int32) bool {
	p, ok := sv.planNew(v)
	if ok {
		sv.openNew(p, pi)
	}
	return ok
}

// tryOpen places the pod on an existing node or an open claim.
func (sv *solver) tryOpen(v *variant, pi int32) bool {
	if len(sv.existing) > 0 {
		if id := sv.scan(v, -1, sv.existing, -1); id >= 0 {
			sv.commit(v, id, pi)
			return true
		}
	}
	if len(sv.claims) == 0 {
		return false
	}
	if len(sv.s.fix) > 0 {
		return sv.tryDecided(v, pi)
	}
	if v.primary < 0 {
		if id := sv.scan(v, -2, sv.claims, -1); id >= 0 {
			sv.commit(v, id, pi)
			return true
		}
		return false
	}
	s := sv.s
	k := v.primary
	type cand struct {
		d     int32
		score int64
	}
	var doms []cand
	for d := range s.domName[k] {
		dd := int32(d)
		if code, _ := s.topoAt(v, nil, k, dd); code != okCode {
			continue
		}
		var score int64
		for i := range v.spread {
			if v.spread[i].g.key == k {
				score += int64(v.spread[i].g.count(dd))
			}
		}
		doms = append(doms, cand{dd, score})
	}
	slices.SortStableFunc(doms, func(a, b cand) int { return cmp.Compare(a.score, b.score) })
	for _, d := range doms {
		li, ok := sv.buckets[bucketKey{k, d.d}]
		if !ok {
			continue
		}
		if id := sv.scan(v, li, sv.lists[li], -1); id >= 0 {
			sv.commit(v, id, pi)
			return true
		}
	}
	if li, ok := sv.buckets[bucketKey{k, domUnpinned}]; ok {
		if id := sv.scan(v, li, sv.lists[li], k); id >= 0 {
			sv.commit(v, id, pi)
			return true
		}
	}
	return false
}

// tryDecided places on an open claim a pod whose domains on some key are
// decided (s.fix; see fixDomains): on the first claim, in the order they
// were opened, that takes it in the domain with the most pods of its kind
// still to come, or else in the next such domain (the first domain among
// equals); without any, on the first claim not yet in a domain.
func (sv *solver) tryDecided(v *variant, pi int32) bool {
	s := sv.s
	q := s.fix[0]
	doms := sv.doms[:0]
	for d, left := range q.left {
		if left > 0 {
			doms = append(doms, int32(d))
		}
	}
	slices.SortStableFunc(doms, func(a, b int32) int { return cmp.Compare(q.left[b], q.left[a]) })
	sv.doms = doms
	for _, d := range doms {
		li, ok := sv.buckets[bucketKey{q.key, d}]
		if !ok {
			continue
		}
		if id := sv.scan(v, li, sv.lists[li], -1); id >= 0 {
			sv.commit(v, id, pi)
			return true
		}
	}
	if li, ok := sv.buckets[bucketKey{q.key, domUnpinned}]; ok {
		if id := sv.scan(v, li, sv.lists[li], q.key); id >= 0 {
			sv.commit(v, id, pi)
			return true
		}
	}
	return false
}

// scan returns the first bin of list that takes the variant, advancing the
// variant's pointer over the leading bins that never will, and its resource
// class's pointer over the leading bins that never take any pod of the class
// (see classOf).
func (sv *solver) scan(v *variant, list int32, ids []int, unpinnedKey int) int {
	pk := ptrKey{v.id, list}
	start := int(sv.ptr[pk])
	cls := sv.classOf(v)
	ck := ptrKey{int(cls), list}
	cstart, cadvance := 0, false
	if cls >= 0 {
		// What the class's pointer passed, this variant never takes; it
		// goes on from there only while it is at the class's front.
		cstart = int(sv.cptr[ck])
		start = max(start, cstart)
		cadvance = cstart == start
	}
	advance, found := true, -1
	out := &sv.out
	var dead []int32
	if list == -1 {
		dead = sv.dead[v.id]
	}
	for i := start; i < len(ids); i++ {
		if dead != nil {
			if j := skipDead(dead, i); j != i {
				// Bins this variant never takes, past its pointer: the
				// pointer goes over them; the class's, which would have
				// to ask whether the class rejects each, stops.
				if advance {
					start = j
				}
				cadvance = false
				if i = j; i == len(ids) {
					break
				}
			}
		}
		b := sv.s.bins[ids[i]]
		if unpinnedKey >= 0 && b.dom[unpinnedKey] != domUnpinned {
			if advance {
				start = i + 1
			}
			if cadvance {
				cstart = i + 1
			}
			continue
		}
		sv.s.check(v, b, out)
		classWide := out.code == failResources && sv.classWide(out)
		if out.code == okCode && !sv.worthGrowing(v, b, out) {
			// Permanent for this variant: its pods all request the same,
			// so growing b only gets dearer until some other pod grows b,
			// and rescanning b for every later pod made the scan
			// quadratic in the number of claims.
			out.code, out.perm = failResources, true
			classWide = sv.classWide(out)
		}
		if out.code == okCode {
			found = b.id
			break
		}
		if advance && out.perm {
			start = i + 1
		} else {
			if list == -1 && out.perm && neverOnNode(out.code) {
				if dead == nil {
					dead = make([]int32, len(ids)+1)
					for k := range dead {
						dead[k] = int32(k)
					}
					if sv.dead == nil {
						sv.dead = map[int][]int32{}
					}
					sv.dead[v.id] = dead
				}
				dead[i] = int32(i + 1)
			}
			advance = false
		}
		if cadvance && (classWide || sv.classRejects(v, b)) {
			cstart = i + 1
		} else {
			cadvance = false
		}
	}
	sv.ptr[pk] = int32(start)
	if cls >= 0 {
		sv.cptr[ck] = int32(cstart)
	}
	return found
}

// indexSpreadKeys numbers the topology keys of the nodes' pods' spread
// constraints, in the order the nodes' pods first name them. The cache
// shares one list among nodes with the same keys: each list is read once.
func (s *state) indexSpreadKeys(facts []*nodeFacts) {
	var read [][]string
	for _, f := range facts {
		if len(f.spreadKeys) == 0 || len(read) < 8 && slices.ContainsFunc(read, func(l []string) bool { return unsafe.SliceData(l) == unsafe.SliceData(f.spreadKeys) }) {
			continue
		}
		if len(read) < 8 {
			read = append(read, f.spreadKeys)
		}
		for _, k := range f.spreadKeys {
			s.keyIndex(k)
		}
	}
}

// neverOnNode reports whether a check of an existing node that failed
// with code fails for the variant until the packing ends: a node's labels,
// taints and schedulability do not change while packing, and its requests
// and host ports only grow. Scanning the existing nodes for each pod from
// the variant's pointer checked again, for every pod of a zone-spread
// Deployment, each full node past the first that the spread turned it
// away from.
func neverOnNode(code failCode) bool {
	switch code {
	case failUnschedulable, failTaint, failAffinity, failPorts, failResources:
		return true
	}
	return false
}

// skipDead returns the first index from i on that dead does not mark as
// never taken (dead[k] == k), halving the paths it follows so that later
// calls get there sooner.
func skipDead(dead []int32, i int) int {
	for int(dead[i]) != i {
		next := dead[i]
		dead[i] = dead[next]
		i = int(next)
	}
	return i
}

// worthGrowing reports whether moving claim b up to the larger instance type
// the outcome needs is better than opening a new claim for the pod. Without
// it, first fit keeps growing one claim into a large node where a second
// small node would be cheaper (ten 500m pods: one 8-vCPU node instead of a
// 4-vCPU and a 2-vCPU node at three quarters of the price).
//
// Growing is worth it when it costs no more than the new claim would, or
// when it buys room for pods like this one at a strictly lower price per pod
// than the new claim does. The second rule matters where small types are
// poor value (on real catalogs the cheapest type that fits a small pod may
// hold only a few pods or a sliver of memory after system reservations):
// comparing prices alone would keep every claim at its first, smallest type.
// Where prices are proportional to size, as in the example above, the rate
// of growing equals that of a new claim and the first rule decides.
func (sv *solver) worthGrowing(v *variant, b *bin, out *outcome) bool {
	if !b.claim || out.cheap == b.cheap {
		return true
	}
	growth := out.cand.priceOf(out.cheap) - b.cand.priceOf(b.cheap)
	a := sv.alonePlan(v)
	if growth <= a.price*(1+1e-9) {
		return true
	}
	n := copiesLeft(b.pool.eff[out.cheap], b.used, &v.sh.req)
	return n > 0 && growth/n < a.rate*(1-1e-9)
}

// alone is the cheapest new claim for one pod of a variant: its price and
// how many such pods its instance type holds.
type alone struct {
	price float64
	rate  float64
}

// alonePlan computes the cheapest new claim for one pod of the variant,
// once per variant; the price is +Inf when no new claim can hold it.
func (sv *solver) alonePlan(v *variant) alone {
	if a, ok := sv.alone[v.id]; ok {
		return a
	}
	// Any pod of the variant: not the one being placed, whose domain may
	// be fixed.
	fix := sv.s.fix
	sv.s.fix = nil
	defer func() { sv.s.fix = fix }()
	a := alone{price: math.Inf(1), rate: math.Inf(1)}
	if p, ok := sv.planNew(v); ok {
		a.price = p.price
		// The best price per pod of this kind among the types the new
		// claim could have.
		// A dominated type holds no more pods for no less, so the
		// frontier suffices.
		c := p.out.cand
		for _, i := range c.frontier() {
			if n := copiesLeft(c.pool.eff[i], resources.Vector{}, &v.sh.req); n >= 1 {
				a.rate = min(a.rate, c.priceOf(int(i))/n)
			}
		}
	}
	if sv.alone == nil {
		sv.alone = map[int]alone{}
	}
	sv.alone[v.id] = a
	return a
}

// copiesLeft is how many pods requesting req fit in avail beyond used,
// counting cpu, memory, ephemeral storage and pods (fractionally); +Inf
// when req asks for none of them.
func copiesLeft(avail, used resources.Vector, req *resources.Vector) float64 {
	n := math.Inf(1)
	dim := func(have, use, want int64) {
		if want > 0 {
			n = min(n, float64(max(have-use, 0))/float64(want))
		}
	}
	dim(avail.CPU, used.CPU, req.CPU)
	dim(avail.Memory, used.Memory, req.Memory)
	dim(avail.EphemeralStorage, used.EphemeralStorage, req.EphemeralStorage)
	dim(avail.Pods, used.Pods, req.Pods)
	return n
}

func (sv *solver) commit(v *variant, id int, pi int32) {
	b := sv.s.bins[id]
	sv.s.commit(v, b, &sv.out, pi)
	for _, q := range sv.fixedOf[pi] {
		q.left[b.dom[q.key]]--
	}
	sv.binOf[pi] = id
	sv.trace = append(sv.trace, step{pi, id})
}

// plan is a new claim ready to open.
type plan struct {
	v     *variant
	pool  *poolIdx
	base  *candSet
	out   outcome
	price float64
}

// planNew finds the NodePool and instance types for a new claim holding
// the variant's pod: the first pool in order that can, or with
// EqualWeightPrice the cheapest of the highest weight that can.
func (sv *solver) planNew(v *variant) (plan, bool) {
	var best plan
	found := false
	byPrice := sv.in.EqualWeightOrder == EqualWeightPrice
	for _, p := range sv.poolsOrd {
		if found && (!byPrice || p.np.Weight < best.pool.np.Weight) {
			break
		}
		pl, ok := sv.planPool(v, p)
		if !ok {
			continue
		}
		if !found || pl.price < best.price {
			best, found = pl, true
		}
	}
	return best, found
}

// candidates yields, for each of the variant's alternatives that the pool
// can launch a node for (its taints tolerated, its requirements compatible,
// an instance type with an offering left), the pool's candidate types under
// that alternative, in the alternatives' order.
func (p *poolIdx) candidates(v *variant) iter.Seq[*candSet] {
	return func(yield func(*candSet) bool) {
		if ok, _ := taints.ToleratesAll(v.tols, p.np.Taints, v.effects); !ok {
			return
		}
		for i, a := range v.alts {
			if _, bad := p.np.Requirements.Conflict(a, requirements.AllowUndefinedWellKnown); bad {
				continue
			}
			if c := p.root.withAlt(v.altIDs[i], a); c.n > 0 && !yield(c) {
				return
			}
		}
	}
}

func (sv *solver) planPool(v *variant, p *poolIdx) (plan, bool) {
	s := sv.s
	for c := range p.candidates(v) {
		b := s.claimBin(p, c, -1)
		var out outcome
		s.check(v, b, &out)
		if out.code != okCode {
			continue
		}
		if _, _, ok := p.limitAllows(p.cap[out.cheap], true); !ok {
			continue
		}
		out.pins = slices.Clone(out.pins)
		return plan{v: v, pool: p, base: c, out: out, price: offerPrice(p.types[out.cheap], out.cand.reqs)}, true
	}
	return plan{}, false
}

func (sv *solver) openNew(p plan, pi int32) {
	s := sv.s
	b := s.newClaimBin(p.pool, p.base)
	b.cheap = p.out.cheap
	p.pool.charge(p.pool.cap[p.out.cheap], true)
	sv.claims = append(sv.claims, b.id)
	for k := range s.keys {
		if k == s.hostKey {
			continue
		}
		if b.dom[k] == domUnpinned {
			sv.appendBucket(bucketKey{k, domUnpinned}, b.id)
		} else if b.dom[k] >= 0 {
			sv.appendBucket(bucketKey{k, b.dom[k]}, b.id)
		}
	}
	sv.out = p.out
	sv.commit(p.v, b.id, pi)
}

// offerPrice is the cheapest available offering of it that reqs allow.
func offerPrice(it *InstanceType, reqs requirements.Requirements) float64 {
	zone, hasZone := reqs.Get(wellknown.LabelTopologyZone)
	ct, hasCT := reqs.Get(wellknown.LabelCapacityType)
	best := math.Inf(1)
	for _, o := range it.Offerings {
		if !o.Available || hasZone && !zone.Allows(o.Zone) || hasCT && !ct.Allows(o.CapacityType) {
			continue
		}
		best = min(best, o.PricePerHour)
	}
	return best
}

// result writes placements, claims and verdicts.
func (sv *solver) result(res *Result, failed []int32) {
	s := sv.s
	nn := func(pi int32) types.NamespacedName {
		p := sv.pods[pi]
		return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	}
	for pi, id := range sv.binOf {
		if id < 0 || s.bins[id].claim {
			continue
		}
		res.Placements = append(res.Placements, Placement{Pod: nn(int32(pi)), Node: s.bins[id].node.Name})
	}
	slices.SortFunc(res.Placements, func(a, b Placement) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return cmpNN(a.Pod, b.Pod)
	})
	maxTypes := s.maxTypes
	fin := newFinalizer()
	for _, id := range sv.claims {
		b := s.bins[id]
		nc := fin.claim(b, maxTypes)
		for _, pi := range b.pods {
			nc.Pods = append(nc.Pods, nn(pi))
		}
		slices.SortFunc(nc.Pods, cmpNN)
		res.NodeClaims = append(res.NodeClaims, nc)
	}
	slices.Sort(failed)
	for _, pi := range failed {
		res.Unschedulable = append(res.Unschedulable, sv.explain(pi, nn(pi)))
	}
	slices.SortFunc(res.Unschedulable, func(a, b Unschedulable) int { return cmpNN(a.Pod, b.Pod) })
}

// finalizer turns claim bins into NodeClaims. Claims with the same
// candidate set and the same fitting instance types share one template, so
// the type list, zones, capacity types and requirements are built once (the
// slices of such NodeClaims are shared and must be treated as read-only).
type finalizer struct {
	tmpl map[string]*claimTmpl
	key  []byte
	fit  []uint64
}

type claimTmpl struct {
	nc   NodeClaim
	over int // type whose DaemonSet overhead the requests include; -1 if none
}

func newFinalizer() *finalizer { return &finalizer{tmpl: map[string]*claimTmpl{}} }

func (f *finalizer) claim(b *bin, maxTypes int) NodeClaim {
	p := b.pool
	c := b.cand
	// Types that fit the claim; a larger type than the cheapest only while
	// launching it instead stays within the pool's limits.
	f.fit = append(f.fit[:0], make([]uint64, len(c.bits))...)
	for i := c.first; i < len(p.types); i++ {
		if !c.has(i) || !b.used.Fits(p.eff[i]) {
			continue
		}
		if len(p.limited) > 0 && i != b.cheap {
			// What launching type i instead of the cheapest adds, per
			// limited resource: the same saturating difference as
			// subtracting the vectors, without copying one per type.
			ok := true
			for _, name := range p.limited {
				if d := resources.SubSaturating(p.cap[i].Get(name), p.cap[b.cheap].Get(name)); d > 0 && d > p.rem.Get(name) {
					ok = false
				}
			}
			if !ok {
				continue
			}
		}
		f.fit[i>>6] |= 1 << (uint(i) & 63)
	}
	if p.minv != nil && len(p.limited) > 0 && f.short(p, c, maxTypes, b.mvMin) {
		// Leaving out the types the limits would not let the claim grow
		// into breaks minValues: list every type that fits, as packing
		// checked. The pool is charged for the cheapest one either way.
		for i := c.first; i < len(p.types); i++ {
			if c.has(i) && b.used.Fits(p.eff[i]) {
				f.fit[i>>6] |= 1 << (uint(i) & 63)
			}
		}
	}
	f.key = append(f.key[:0], c.reqs.String()...)
	for _, w := range f.fit {
		f.key = binary.LittleEndian.AppendUint64(f.key, w)
	}
	// Claims relaxed differently list different types and requirements.
	for _, n := range b.mvMin {
		f.key = binary.LittleEndian.AppendUint64(f.key, uint64(n))
	}
	t, ok := f.tmpl[string(f.key)]
	if !ok {
		t = template(p, c, f.fit, maxTypes, b.mvMin)
		f.tmpl[string(f.key)] = t
	}
	nc := t.nc
	nc.Requests = b.used.Clone()
	if t.over >= 0 {
		nc.Requests.Add(p.over[t.over])
	}
	return nc
}

func template(p *poolIdx, c *candSet, fit []uint64, maxTypes int, mins []int) *claimTmpl {
	type tp struct {
		i     int
		price float64
	}
	var list []tp
	for i := range p.types {
		if fit[i>>6]&(1<<(uint(i)&63)) == 0 {
			continue
		}
		pr := offerPrice(p.types[i], c.reqs)
		if math.IsInf(pr, 1) {
			continue
		}
		list = append(list, tp{i, pr})
	}
	slices.SortStableFunc(list, func(a, b tp) int {
		if c := cmp.Compare(a.price, b.price); c != 0 {
			return c
		}
		return strings.Compare(p.types[a.i].Name, p.types[b.i].Name)
	})
	if len(list) > maxTypes {
		if p.minv == nil {
			list = list[:maxTypes]
		} else {
			// Keep the cheapest types, but enough distinct values of every
			// key with minValues.
			idx := make([]int, len(list))
			at := make(map[int]tp, len(list))
			for j, e := range list {
				idx[j] = e.i
				at[e.i] = e
			}
			chosen, short := p.coverMinValues(idx, maxTypes, nil, mins)
			if short != nil {
				// Packing checked the claim; keep the cheapest as before.
				chosen = idx[:maxTypes]
			}
			list = list[:0]
			for _, i := range chosen {
				list = append(list, at[i])
			}
		}
	}
	zone, hasZone := c.reqs.Get(wellknown.LabelTopologyZone)
	ct, hasCT := c.reqs.Get(wellknown.LabelCapacityType)
	t := &claimTmpl{nc: NodeClaim{NodePool: p.np.Name}, over: -1}
	zones, cts := map[string]bool{}, map[string]bool{}
	t.nc.InstanceTypes = make([]string, 0, len(list))
	for _, e := range list {
		it := p.types[e.i]
		t.nc.InstanceTypes = append(t.nc.InstanceTypes, it.Name)
		for _, o := range it.Offerings {
			if !o.Available || hasZone && !zone.Allows(o.Zone) || hasCT && !ct.Allows(o.CapacityType) {
				continue
			}
			zones[o.Zone] = true
			cts[o.CapacityType] = true
		}
	}
	t.nc.Zones = sortedKeys(zones)
	t.nc.CapacityTypes = sortedKeys(cts)
	if len(list) > 0 {
		t.nc.PricePerHour = list[0].price
		t.over = list[0].i
	}
	r := c.reqs
	// A claim relaxed under BestEffort records the minValues it was
	// launched with, as Karpenter does, so that it lists types that meet
	// them; the API takes no minValues below 1.
	for k, n := range mins {
		m := p.minv[k]
		if n >= m.min {
			continue
		}
		if q, ok := r.Get(m.key); ok {
			r = r.Replace(q.WithMinValues(max(n, 1)))
		}
		t.nc.MinValuesRelaxed = true
	}
	add := func(label string, vals []string) {
		if len(vals) == 0 {
			return
		}
		if q, err := requirements.NewRequirement(label, corev1.NodeSelectorOpIn, vals...); err == nil {
			r = r.Add(q)
		}
	}
	add(wellknown.LabelInstanceType, t.nc.InstanceTypes)
	add(wellknown.LabelCapacityType, t.nc.CapacityTypes)
	add(wellknown.LabelTopologyZone, t.nc.Zones)
	t.nc.Requirements = r
	return t
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// explain says why pod pi found no place, NodePool by NodePool.
func (sv *solver) explain(pi int32, nn types.NamespacedName) Unschedulable {
	sh := sv.shapeOf[pi]
	v := sh.variants[len(sh.variants)-1]
	u := Unschedulable{Pod: nn}
	for _, p := range sv.poolsOrd {
		u.NodePools = append(u.NodePools, sv.verdict(v, p))
	}
	switch {
	case len(u.NodePools) == 0:
		u.Reason = "no existing node can take the pod and no NodePool is available to launch one"
	default:
		u.Reason = fmt.Sprintf("no existing node can take the pod and no NodePool can launch one; NodePool %q: %s", u.NodePools[0].NodePool, u.NodePools[0].Message)
	}
	return u
}

func (sv *solver) verdict(v *variant, p *poolIdx) NodePoolVerdict {
	s := sv.s
	sh := v.sh
	out := NodePoolVerdict{NodePool: p.np.Name}
	if ok, t := taints.ToleratesAll(v.tols, p.np.Taints, v.effects); !ok {
		out.Code = CodeTaintNotTolerated
		out.Message = fmt.Sprintf("the pod does not tolerate the NodePool's taint {%s: %s} (effect %s)", t.Key, t.Value, t.Effect)
		return out
	}
	var first NodePoolVerdict
	for i, a := range v.alts {
		var vd NodePoolVerdict
		vd.NodePool = p.np.Name
		if err := p.np.Requirements.Compatible(a, requirements.AllowUndefinedWellKnown); err != nil {
			vd.Code, vd.Message = CodeRequirementIncompatible, "the NodePool's requirements conflict with the pod's: "+err.Error()
		} else if c := p.root.withAlt(v.altIDs[i], a); c.n == 0 {
			if c.typeOK == 0 {
				vd.Code = CodeRequirementIncompatible
				vd.Message = fmt.Sprintf("none of the NodePool's %d instance types meets the pod's requirements (%s)", len(p.types), a.String())
			} else {
				vd.Code = CodeNoAvailableOffering
				vd.Message = fmt.Sprintf("%d instance types meet the pod's requirements, but none has an available offering there (%s)", c.typeOK, c.reqs.String())
			}
		} else if c.cheapestFit(0, resources.Vector{}, sh) < 0 {
			vd.Code = CodeNoInstanceTypeFits
			vd.Message = largestMessage(p, c, sh)
		} else {
			b := s.claimBin(p, c, -1)
			var o outcome
			s.check(v, b, &o)
			switch o.code {
			case okCode:
				need := p.cap[o.cheap]
				if name, by, ok := p.limitAllows(need, true); !ok {
					vd.Code = CodeLimitExceeded
					if name == "nodes" {
						vd.Message = fmt.Sprintf("limit nodes reached: the NodePool may launch no more nodes (exceeded by %d)", by)
					} else {
						vd.Message = fmt.Sprintf("limit %s: the cheapest fitting type %s needs %s, which exceeds what is left by %s",
							name, p.types[o.cheap].Name, quantity(name, need.Get(name)), quantity(name, by))
					}
				} else {
					vd.Code = CodeTopologyUnsatisfiable
					vd.Message = "a new node fits the pod now, but none did when it was considered (its topology changed while packing)"
				}
			case failSpread, failSpreadLabel, failNoPin:
				vd.Code = CodeTopologyUnsatisfiable
				vd.Message = "no topology domain of the NodePool satisfies the pod's topology spread constraints: " + o.code.String()
			case failPodAffinity, failPodAnti, failExistingAnti:
				vd.Code = CodeAffinityUnsatisfiable
				vd.Message = "no domain of the NodePool satisfies the pod's inter-pod (anti-)affinity: " + o.code.String()
			case failPorts:
				vd.Code = CodeHostPortConflict
				vd.Message = o.code.String()
			case failLimit:
				vd.Code = CodeLimitExceeded
				vd.Message = "the NodePool's limits leave no room"
			case failMinValues:
				vd.Code = CodeMinValuesUnsatisfiable
				vd.Message = o.short.message()
			default:
				vd.Code = CodeNoInstanceTypeFits
				vd.Message = largestMessage(p, c, sh)
			}
		}
		if i == 0 {
			first = vd
		}
	}
	if first.Code == "" {
		first.Code, first.Message = CodeRequirementIncompatible, "the pod has no node affinity alternative"
	}
	return first
}

func quantity(name corev1.ResourceName, v int64) string {
	switch name {
	case corev1.ResourceCPU:
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return resource.NewQuantity(v, resource.BinarySI).String()
	}
	return resource.NewQuantity(v, resource.DecimalSI).String()
}

// requested formats want, what sh requests of name. A request too large to
// count (resources.Infinite) is shown as the pod asks for it, 1e30 say.
func requested(sh *shape, name corev1.ResourceName, want int64) string {
	if want == resources.Infinite && sh.pod != nil {
		if q, ok := resources.Requests(sh.pod)[name]; ok {
			return q.String()
		}
	}
	return quantity(name, want)
}

// largestMessage says which resources no candidate type has enough of.
func largestMessage(p *poolIdx, c *candSet, sh *shape) string {
	var parts []string
	check := func(name corev1.ResourceName, want, have int64) {
		if want > 0 && want > have {
			parts = append(parts, fmt.Sprintf("%s: requests %s, largest allocatable %s", name, requested(sh, name, want), quantity(name, have)))
		}
	}
	check(corev1.ResourceCPU, sh.req.CPU, c.max.CPU)
	check(corev1.ResourceMemory, sh.req.Memory, c.max.Memory)
	check(corev1.ResourceEphemeralStorage, sh.req.EphemeralStorage, c.max.EphemeralStorage)
	check(corev1.ResourcePods, sh.req.Pods, c.max.Pods)
	for _, e := range sh.ext {
		var have int64
		for i := range p.types {
			if c.has(i) {
				have = max(have, p.eff[i].Get(e.name))
			}
		}
		check(e.name, e.value, have)
	}
	if len(parts) == 0 {
		return "no single instance type has room for all of the pod's requests after DaemonSet overhead"
	}
	return "no instance type is large enough after DaemonSet overhead (" + strings.Join(parts, "; ") + ")"
}
