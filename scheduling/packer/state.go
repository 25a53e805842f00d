package packer

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
)

const (
	domAbsent   int32 = -1 // the node does not have the label
	domUnpinned int32 = -2 // a new claim that may still take several values
)

// bin is a place pods can go: an existing node, an in-flight NodeClaim, or a
// NodeClaim this Result proposes.
type bin struct {
	id       int
	claim    bool
	inflight bool
	node     *Node
	// facts are an existing node's (Cache.factsFor).
	facts   *nodeFacts
	labels  map[string]string
	taints  []corev1.Taint
	unsched bool
	alloc   resources.Vector
	used    resources.Vector
	ports   []hostPort
	dom     []int32
	npods   int

	// hostOwners counts the pods the packer put on the bin that carry a
	// required hostname spread constraint.
	hostOwners int

	// New claims only (pods: on any bin, the pods the packer put there).
	pool  *poolIdx
	cand  *candSet
	cheap int
	pods  []int32
	// mvMin are the claim's minValues, per key of pool.minv, once the
	// BestEffort policy relaxed them for its first pod; nil while they are
	// the pool's.
	mvMin []int
	// fits remembers cheapestFit answers for the claim as it stands (see
	// bin.cheapestFit).
	fits []fitMemo
}

// fitMemo is one cheapestFit answer: the cheapest member of cand at or after
// from that holds used plus req.
type fitMemo struct {
	cand      *candSet
	from      int
	used, req [4]int64
	fit       int
}

// fitMemos bounds the answers a claim remembers.
const fitMemos = 8

func scalars(v resources.Vector) [4]int64 {
	return [4]int64{v.CPU, v.Memory, v.EphemeralStorage, v.Pods}
}

// cheapestFit is cand.cheapestFit for the claim, remembered while the claim
// stays as it is. First fit asks every claim whether each new pod variant
// fits, and variants that differ only in labels and constraints share their
// requests (Karpenter's benchmark pods: thousands of variants, a few dozen
// requests), so the same question comes back many times. Shapes with
// extended resources are not remembered: the answer depends on them too.
func (b *bin) cheapestFit(cand *candSet, sh *shape) int {
	if len(sh.ext) > 0 {
		return cand.cheapestFit(b.cheap, b.used, sh)
	}
	used, req := scalars(b.used), scalars(sh.req)
	for _, m := range b.fits {
		if m.cand == cand && m.from == b.cheap && m.used == used && m.req == req {
			return m.fit
		}
	}
	fit := cand.cheapestFit(b.cheap, b.used, sh)
	if len(b.fits) > 0 && (b.fits[0].used != used || b.fits[0].from != b.cheap) {
		b.fits = b.fits[:0] // the claim changed: every answer is stale
	}
	m := fitMemo{cand: cand, from: b.cheap, used: used, req: req, fit: fit}
	if len(b.fits) < fitMemos {
		b.fits = append(b.fits, m)
	} else {
		copy(b.fits, b.fits[1:])
		b.fits[fitMemos-1] = m
	}
	return fit
}

// state is the packer's world: bins, topology keys and domains, and the
// counting groups. Feasible builds one from nodes without pools.
type state struct {
	packer bool // new nodes may be opened: hostname spread counts a fresh node as the minimum

	keys    []string
	keyIdx  map[string]int
	hostKey int
	domIdx  []map[string]int32
	domName [][]string
	// keyCID are the cache's numbers of the keys, and domOfVal, per key,
	// the domain plus one of each value the cache numbers (0: none yet);
	// see domainOf.
	keyCID   []int32
	domOfVal [][]int32
	// owners are the owner groups of the nodes' pods' anti-affinity terms,
	// by the cache's number of their signature (see addOwnerGroups).
	owners []*group

	groups     []*group
	groupBySig map[string]*group
	nsLabels   map[string]map[string]string

	bins  []*bin
	pools []*poolIdx
	// binSlab and domSlab are where addNode takes bins and domains from
	// (see reserveNodeBins).
	binSlab []bin
	domSlab []int32

	altIDs map[string]int

	maxTypes int // instance types a new NodeClaim may list
	// relaxMin is the BestEffort minValues policy: a new claim whose types
	// fall short of a minValues opens with it lowered instead of failing.
	relaxMin bool

	// cache, when set, memoizes per-node facts across Solves.
	cache *Cache

	pinHook  func(b *bin, k int)
	variants int
	checks   int   // calls of check, for the tests of first fit's cost
	newDom   int32 // hostname domain of a claim being planned; never counted
	// pinTo, when set, is the only domain per key an unpinned claim may
	// take in pickPin: a pod moved by the improvement pass keeps its own.
	pinTo []int32
	// ord is the pods' creation order; nil outside the packer.
	ord *podOrder
	// fix are the domains decided for the pod being checked (see
	// fixDomains): it goes to one of them, and its spread constraints over
	// their keys are not checked again.
	fix []*keyQuota
}

func newState(nsLabels map[string]map[string]string, packer bool) *state {
	return &state{packer: packer, keyIdx: map[string]int{}, hostKey: -1, groupBySig: map[string]*group{}, nsLabels: nsLabels, altIDs: map[string]int{}}
}

func (s *state) altID(r requirements.Requirements) int {
	if r.Len() == 0 {
		return 0
	}
	k := r.String()
	if id, ok := s.altIDs[k]; ok {
		return id
	}
	id := len(s.altIDs) + 1
	s.altIDs[k] = id
	return id
}

// addNode adds an existing or in-flight node, whose facts are f, as a bin.
// Its pods are counted later by countExisting, once every group is known.
func (s *state) addNode(n *Node, f *nodeFacts) *bin {
	b := s.nodeBin()
	*b = bin{id: len(s.bins), node: n, facts: f, inflight: n.InFlight, labels: n.Labels, taints: n.Taints, unsched: n.Unschedulable, alloc: n.Allocatable}
	if n.Requested != nil {
		b.used = n.Requested.Clone()
	}
	if n.Requested == nil {
		for _, p := range n.Pods {
			b.used.Add(resources.PodVector(p))
		}
	}
	b.ports = f.ports
	b.npods = len(n.Pods)
	b.dom = s.domSlice(len(s.keys))
	if s.cache == nil || n.InFlight {
		for k := range s.keys {
			b.dom[k] = s.nodeDomain(n, k)
		}
	} else {
		// binDomain for every key, the values read at once: this runs for
		// every node of every packing.
		vals := s.cache.valuesOf(f, n, s.cacheKeys())
		for k, kid := range s.keyCID {
			switch vid := vals[kid]; {
			case vid < 0:
				b.dom[k] = domAbsent
			case k < len(s.domOfVal) && int(vid) < len(s.domOfVal[k]) && s.domOfVal[k][vid] != 0:
				b.dom[k] = s.domOfVal[k][vid] - 1
			default:
				b.dom[k] = s.domainOf(k, vid)
			}
		}
	}
	s.bins = append(s.bins, b)
	return b
}

// binDomain is nodeDomain for the node of bin b, read by number from the
// node's facts when the cache can hold its labels.
func (s *state) binDomain(b *bin, k int) int32 {
	if s.cache == nil || b.facts == nil || b.inflight {
		return s.nodeDomain(b.node, k)
	}
	vid := s.cache.valueOf(b.facts, b.node, s.cacheKey(k))
	if vid < 0 {
		return domAbsent
	}
	return s.domainOf(k, vid)
}

// reserveNodeBins makes room for n nodes' bins and their domains (with k
// keys) in two allocations, instead of two per node per packing; with a
// cache, in the memory the cache's previous packing used, which addNode
// overwrites.
func (s *state) reserveNodeBins(n, k int) {
	if s.cache == nil {
		s.binSlab = make([]bin, n)
		s.domSlab = make([]int32, n*k)
		return
	}
	sc := &s.cache.scratch
	if cap(sc.bins) < n {
		sc.bins = make([]bin, n)
	}
	if cap(sc.dom) < n*k {
		sc.dom = make([]int32, n*k)
	}
	// Room for the claims too, which the nodes' bins are usually many
	// times more than.
	if want := n + n/4 + 64; cap(sc.list) < want {
		sc.list = make([]*bin, 0, want)
	}
	s.binSlab, s.domSlab = sc.bins[:n], sc.dom[:n*k]
	s.bins = sc.list[:0]
}

// nodeFacts returns the facts of nodes (Cache.factsFor), in a slice that
// the packing may keep until the next one, and whether the nodes are in
// packing order.
//
// Consecutive packings of one cluster mostly see the same nodes in the same
// order, a few left out: the nodes are walked beside the previous packing's,
// and a node found there, with the very pod list its facts were derived
// from, takes them without a lookup by name.
func (s *state) nodeFacts(nodes []*Node) ([]*nodeFacts, bool) {
	sc := &s.cache.scratch
	if cap(sc.facts) < len(nodes) {
		sc.facts = make([]*nodeFacts, len(nodes))
	}
	out := sc.facts[:len(nodes)]
	prev := sc.prev
	// Two nodes found one after the other in the previous packing's
	// order (the walk only goes forward) are in order; a node not found
	// is compared with the one before it.
	inOrder, last := true, -1
	j := 0
	for i, n := range nodes {
		// Mostly the very next node of the previous packing; otherwise
		// skip those left out since, which come before in its order.
		if j < len(prev) && (prev[j].name != n.Name || prev[j].inFlight != n.InFlight) {
			for j < len(prev) && packingOrder(prev[j].name, prev[j].inFlight, n.Name, n.InFlight) < 0 {
				j++
			}
		}
		at := -1
		if j < len(prev) && prev[j].name == n.Name && prev[j].inFlight == n.InFlight {
			at = j
		}
		if i > 0 && inOrder && (at < 0 || last < 0) {
			m := nodes[i-1]
			inOrder = packingOrder(m.Name, m.InFlight, n.Name, n.InFlight) <= 0
		}
		last = at
		if at >= 0 {
			j++
			if f := prev[at].facts; f.pods == unsafe.SliceData(n.Pods) && f.len == len(n.Pods) {
				out[i] = f
				continue
			}
		}
		out[i] = s.cache.factsFor(n)
	}
	sc.prev = sc.prev[:0]
	for i, n := range nodes {
		sc.prev = append(sc.prev, seenNode{name: n.Name, inFlight: n.InFlight, facts: out[i]})
	}
	return out, inOrder
}

// packingOrder orders nodes as a packing takes them: registered nodes
// before those in flight, then by name.
func packingOrder(aName string, aInFlight bool, bName string, bInFlight bool) int {
	if aInFlight != bInFlight {
		if aInFlight {
			return 1
		}
		return -1
	}
	return strings.Compare(aName, bName)
}

func (s *state) nodeBin() *bin {
	if len(s.binSlab) == 0 {
		return &bin{}
	}
	b := &s.binSlab[0]
	s.binSlab = s.binSlab[1:]
	return b
}

// domSlice returns a slice of n domains, for the caller to fill; its
// capacity is n, so that a bin that learns more keys appends into a new
// array, not a neighbour's.
func (s *state) domSlice(n int) []int32 {
	if len(s.domSlab) < n {
		return make([]int32, n)
	}
	d := s.domSlab[:n:n]
	s.domSlab = s.domSlab[n:]
	return d
}

func (s *state) nodeDomain(n *Node, k int) int32 {
	key := s.keys[k]
	if v, ok := n.Labels[key]; ok {
		return s.domain(k, v)
	}
	if n.InFlight {
		if r, ok := n.Requirements.Get(key); ok && r.Finite() && r.Len() == 1 && !r.AllowsAbsent() {
			for v := range r.Values() {
				return s.domain(k, v)
			}
		}
	}
	return domAbsent
}

// countExisting counts the pods already on nodes into every group. Whether
// a node counts for a group is judged once per node; how many of its pods
// a term selects comes from the cache when the same node was counted for
// the same term by an earlier packing.
func (s *state) countExisting() {
	for _, g := range s.groups {
		if g.kind == gOwner {
			continue
		}
		// Every node's domains are known by now: size the counts once,
		// and a spread group's eligibility per bin.
		s.reserveCounts(g, len(s.domName[g.key]))
		if g.kind == gSpread && g.elig == nil {
			g.elig = s.cache.scratch.bytes.take(withClaims(len(s.bins)))
		}
		tid := s.termNumber(g)
		for _, b := range s.bins {
			if b.claim || len(b.node.Pods) == 0 {
				continue
			}
			d := b.dom[g.key]
			if d < 0 {
				continue
			}
			if g.kind == gSpread && !s.eligible(g, b) {
				continue
			}
			// selected, without the calls for a count already known.
			var n int32
			if f := b.facts; tid >= 0 && f != nil && int(tid) < len(f.selected) && f.selected[tid] >= 0 {
				n = f.selected[tid]
			} else {
				n = s.selected(g, b)
			}
			if n > 0 {
				g.inc(d, n)
			}
		}
	}
}

// selected counts the pods on existing node bin b that g's term selects,
// from the node's facts when counted before.
func (s *state) selected(g *group, b *bin) int32 {
	tid := s.termNumber(g)
	if tid < 0 || b.facts == nil || len(b.node.Pods) == 0 {
		return selectedOn(&g.t, b.node)
	}
	return b.facts.selectedBy(tid, &g.t, b.node)
}

// termNumber is the cache's number of g's term, or -1 when the cache does
// not count it.
func (s *state) termNumber(g *group) int32 {
	if s.cache == nil || g.t.sig == "" {
		return -1
	}
	if g.tid == 0 {
		g.tid = s.cache.termID(g.t.sig) + 1
	}
	return g.tid - 1
}

// selectedOn counts the pods of n, not being deleted, that t selects.
func selectedOn(t *term, n *Node) int32 {
	var count int32
	for _, p := range n.Pods {
		if p.DeletionTimestamp == nil && t.matches(p.Namespace, p.Labels) {
			count++
		}
	}
	return count
}

// addOwnerGroups turns the required anti-affinity of the pods on nodes into
// owner groups and counts them.
func (s *state) addOwnerGroups(nodes []Node) {
	for _, b := range s.bins {
		if b.claim {
			continue
		}
		terms, ids := b.facts.ownerTerms(s)
		for i, rt := range terms {
			// By the number of the group's signature: most nodes carry
			// the same few terms.
			for len(s.owners) <= int(ids[i]) {
				s.owners = append(s.owners, nil)
			}
			g := s.owners[ids[i]]
			if g == nil {
				g = s.groupWithSig(gOwner, rt, b.facts.ownerSigs[i])
				s.owners[ids[i]] = g
			}
			if g.counts == nil {
				s.reserveCounts(g, len(s.domName[g.key]))
			}
			// The term may have introduced a key (or several, through
			// earlier pods) that this node's domains do not cover yet.
			for len(b.dom) <= g.key {
				b.dom = append(b.dom, s.binDomain(b, len(b.dom)))
			}
			if d := b.dom[g.key]; d >= 0 {
				g.inc(d, 1)
			}
		}
	}
}

// eligible reports whether a spread group counts pods on bin b and
// considers its domain.
func (s *state) eligible(g *group, b *bin) bool {
	if g.everywhere() {
		return b.dom[g.key] != domAbsent
	}
	if b.id < 0 {
		return s.computeEligible(g, b)
	}
	for len(g.elig) <= b.id {
		g.elig = append(g.elig, 0)
	}
	if e := g.elig[b.id]; e != 0 {
		return e == 1
	}
	ok := s.computeEligible(g, b)
	if ok {
		g.elig[b.id] = 1
	} else {
		g.elig[b.id] = 2
	}
	return ok
}

func (s *state) computeEligible(g *group, b *bin) bool {
	ok := b.dom[g.key] != domAbsent
	for _, k := range g.keys {
		if ok && (k >= len(b.dom) || b.dom[k] == domAbsent) {
			ok = false
		}
	}
	if ok && g.honorAff {
		if g.nodeAff != nil && !b.claim {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: b.node.Name, Labels: b.labels}}
			ok, _ = g.nodeAff.Match(n)
		} else {
			ok = s.matchesAlts(b, g.affAlts)
		}
	}
	if ok && g.honorTaints {
		ok, _ = taints.ToleratesAll(g.tols, b.taints, taints.Blocking)
	}
	return ok
}

// matchesAlts reports whether some alternative can be met on b.
func (s *state) matchesAlts(b *bin, alts []requirements.Requirements) bool {
	for _, a := range alts {
		if s.matchesAlt(b, a) {
			return true
		}
	}
	return false
}

func (s *state) matchesAlt(b *bin, a requirements.Requirements) bool {
	switch {
	case b.claim:
		_, bad := b.cand.reqs.Conflict(a, requirements.AllowUndefinedWellKnown)
		return !bad
	case b.inflight:
		if _, bad := b.node.Requirements.Conflict(a, requirements.AllowUndefinedWellKnown); bad {
			return false
		}
		return true
	default:
		return a.Matches(b.labels) == nil
	}
}

// registerDomains marks, for every spread group, the domains it considers:
// those of eligible bins, and in packer mode those new nodes can take.
func (s *state) registerDomains() {
	for _, g := range s.groups {
		if g.kind != gSpread {
			continue
		}
		if g.reg == nil {
			g.reg = s.cache.scratch.bools.take(withClaims(len(s.domName[g.key])))
		}
		for _, b := range s.bins {
			if d := b.dom[g.key]; d >= 0 && s.eligible(g, b) {
				g.register(d)
			}
		}
		if !s.packer || g.key == s.hostKey {
			continue
		}
		for _, p := range s.pools {
			if g.honorTaints {
				if ok, _ := taints.ToleratesAll(g.tols, p.np.Taints, taints.Blocking); !ok {
					continue
				}
			}
			if !s.poolHasKeys(p, g.keys) {
				continue
			}
			for _, v := range s.domainsFor(p, g.key) {
				if g.honorAff {
					ok := false
					for _, a := range g.affAlts {
						if r, has := a.Get(s.keys[g.key]); !has || r.Allows(v) {
							if _, bad := p.np.Requirements.Conflict(a, requirements.AllowUndefinedWellKnown); !bad {
								ok = true
								break
							}
						}
					}
					if !ok {
						continue
					}
				}
				g.register(s.domain(g.key, v))
			}
		}
	}
}

// poolHasKeys reports whether new nodes of p can carry every key of keys.
func (s *state) poolHasKeys(p *poolIdx, keys []int) bool {
	for _, k := range keys {
		if k != s.hostKey && len(s.domainsFor(p, k)) == 0 {
			return false
		}
	}
	return true
}

// spreadMin is the global minimum a spread constraint compares against.
func (s *state) spreadMin(c *spreadC) int32 {
	g := c.g
	if g.key == s.hostKey && s.packer {
		return 0
	}
	if int32(g.nreg) < c.minDomains {
		return 0
	}
	min := int32(-1)
	for d, ok := range g.reg {
		if !ok {
			continue
		}
		if n := g.count(int32(d)); min < 0 || n < min {
			min = n
		}
	}
	if min < 0 {
		return 0
	}
	return min
}

// Failure codes of check, in the order kube-scheduler's filters run.
type failCode uint8

const (
	okCode failCode = iota
	failUnschedulable
	failTaint
	failAffinity
	failPorts
	failResources
	failLimit
	failSpreadLabel
	failSpread
	failPodAffinity
	failPodAnti
	failExistingAnti
	failNoPin
	failMinValues
)

// outcome is the answer of check.
type outcome struct {
	code  failCode
	perm  bool // the bin can never take this variant again
	alt   int
	cand  *candSet
	cheap int
	taint *corev1.Taint
	pins  []pinKey
	short *mvShort // why failMinValues
	mvMin []int    // minValues relaxed for an empty claim (see bin.mvMin)
}

// check reports whether the variant's pod may go on bin b now.
func (s *state) check(v *variant, b *bin, out *outcome) {
	s.checks++
	sh := v.sh
	out.code, out.perm, out.pins, out.mvMin = okCode, true, out.pins[:0], nil
	if b.unsched {
		if s.packer || !taints.Tolerates(sh.tols, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
			out.code = failUnschedulable
			return
		}
	}
	if len(b.taints) > 0 {
		if ok, t := taints.ToleratesAll(v.tols, b.taints, v.effects); !ok {
			out.code, out.taint = failTaint, t
			return
		}
	}
	// Node affinity (and, for claims, the instance types left after it).
	out.alt, out.cand = -1, b.cand
	if v.empty {
		out.alt = 0
	} else {
		for i, a := range v.alts {
			if !s.matchesAlt(b, a) {
				continue
			}
			if b.claim {
				c := b.cand.withAlt(v.altIDs[i], a)
				if c.n == 0 {
					continue
				}
				out.cand = c
			}
			out.alt = i
			break
		}
		if out.alt < 0 {
			out.code = failAffinity
			return
		}
	}
	if len(sh.ports) > 0 && portsConflict(sh.ports, b.ports) {
		out.code = failPorts
		return
	}
	if !b.claim {
		if !sumFits(b.used, sh, b.alloc) {
			out.code = failResources
			return
		}
	} else if !quickFits(b.used, sh, out.cand.max) {
		out.code = failResources
		return
	}
	// The pod's decided domains (while the improvement pass moves a pod,
	// pinTo keeps it in its own).
	for _, q := range s.fix {
		switch d := b.dom[q.key]; {
		case d == domUnpinned:
			if !s.pickPin(v, b, q.key, out) {
				return
			}
		case s.pinTo == nil && !q.open(d):
			out.code, out.perm = failAffinity, false
			return
		}
	}
	// Topology: spread, then pod affinity, anti-affinity and existing pods'
	// anti-affinity, key by key. Unpinned claims take a value here.
	for _, k := range v.keys {
		if s.decided(k) != nil {
			continue
		}
		d := b.dom[k]
		if d == domUnpinned {
			if !s.pickPin(v, b, k, out) {
				return
			}
			continue
		}
		if code, perm := s.topoAt(v, b, k, d); code != okCode {
			out.code, out.perm = code, perm
			return
		}
	}
	// A pod created before the owner of a hostname spread constraint on b
	// counts against it when kube-scheduler binds the owner.
	if b.hostOwners > 0 && sh.hostCounted && s.ord.cur >= 0 && !s.laterOwnersAllow(sh, b) {
		out.code, out.perm = failSpread, true
		return
	}
	// Relevant keys without constraints of the variant: pin a claim so that
	// the pods it counts for land in a known domain.
	if b.claim {
		for _, k := range sh.relevant {
			if b.dom[k] == domUnpinned && !out.pinned(k) {
				if !s.pickPin(v, b, k, out) {
					return
				}
			}
		}
		cheap := b.cheapestFit(out.cand, sh)
		if cheap < 0 {
			out.code = failResources
			return
		}
		// The types left must still cover the pool's minValues. Pods only
		// add requests and narrow the candidates, so once short, the claim
		// stays short for this variant. Under BestEffort, as in Karpenter,
		// only the pod that opens a claim relaxes them; later pods must
		// keep what it settled on.
		if b.pool.minv != nil {
			if short := s.minValuesShort(out.cand, b.used, sh, b.minValues()); short != nil {
				if !s.relaxMin || len(b.pods) > 0 {
					out.code, out.short = failMinValues, short
					return
				}
				total := b.used.Clone()
				total.Add(sh.req)
				out.mvMin = s.relaxMinValues(out.cand, total)
			}
		}
		out.cheap = cheap
		if cheap != b.cheap && !b.pool.growthAllowed(b.cheap, cheap) {
			out.code, out.perm = failLimit, false
			return
		}
	}
}

// minValues are the minValues a pod joining claim b must keep: the ones its
// first pod settled on, or the pool's while it is empty (a claim emptied by
// moving its pods away starts over).
func (b *bin) minValues() []int {
	if len(b.pods) == 0 {
		return nil
	}
	return b.mvMin
}

// decided is what was decided about the domain of key k for the pod being
// checked, or nil.
func (s *state) decided(k int) *keyQuota {
	for _, q := range s.fix {
		if q.key == k {
			return q
		}
	}
	return nil
}

func (o *outcome) pinned(k int) bool {
	for _, p := range o.pins {
		if p.key == k {
			return true
		}
	}
	return false
}

// topoAt checks every topology constraint of v on key k for a bin in domain d.
func (s *state) topoAt(v *variant, b *bin, k int, d int32) (failCode, bool) {
	host := k == s.hostKey
	for i := range v.spread {
		c := &v.spread[i]
		if c.g.key != k {
			continue
		}
		if d == domAbsent {
			return failSpreadLabel, true
		}
		if c.g.count(d)+c.self-s.spreadMin(c) > c.maxSkew {
			if host && b != nil && s.ord != nil && s.ord.cur >= 0 && s.countedBefore(c.g, b, s.ord.cur)+c.self <= c.maxSkew {
				continue
			}
			return failSpread, host && s.packer
		}
	}
	for _, g := range v.aff {
		if g.key != k {
			continue
		}
		if d == domAbsent {
			return failPodAffinity, true
		}
		if g.count(d) <= 0 && !v.bootstrap() {
			return failPodAffinity, false
		}
	}
	for _, g := range v.anti {
		if g.key == k && d >= 0 && g.count(d) > 0 {
			return failPodAnti, true
		}
	}
	for _, g := range v.sh.forbidden {
		if g.key == k && d >= 0 && g.count(d) > 0 {
			return failExistingAnti, true
		}
	}
	return okCode, true
}

// pickPin chooses the value an unpinned claim takes for key k: one that
// every constraint of v allows, the least counted by v's spread constraints
// (and the spread groups that count the pod), with instance types left.
// Values whose types cover the pool's minValues come first; under
// BestEffort an empty claim falls back on the others, whose minValues check
// relaxes once every key is pinned.
func (s *state) pickPin(v *variant, b *bin, k int, out *outcome) bool {
	best, bestScore := "", int64(-1)
	var bestCand *candSet
	var short *mvShort
	bestShort := false
	relax := s.relaxMin && len(b.pods) == 0
	kr, hasKR := out.cand.reqs.Get(s.keys[k])
	for _, val := range s.domainsFor(b.pool, k) {
		if hasKR && !kr.Allows(val) {
			continue
		}
		d := s.domain(k, val)
		if s.pinTo != nil && d != s.pinTo[k] {
			continue
		}
		if q := s.decided(k); q != nil {
			if s.pinTo == nil && !q.open(d) {
				continue
			}
		} else if code, _ := s.topoAt(v, b, k, d); code != okCode {
			continue
		}
		var score int64
		for i := range v.spread {
			if v.spread[i].g.key == k {
				score += int64(v.spread[i].g.count(d))
			}
		}
		for _, g := range v.sh.matchedBy {
			if g.kind == gSpread && g.key == k {
				score += int64(g.count(d))
			}
		}
		if bestScore >= 0 && score >= bestScore && !bestShort {
			continue
		}
		c := out.cand.withPin(s, k, val)
		if c.n == 0 || !quickFits(b.used, v.sh, c.max) {
			continue
		}
		isShort := false
		if b.pool.minv != nil {
			if sh := s.minValuesShort(c, b.used, v.sh, b.minValues()); sh != nil {
				if !relax {
					short = sh
					continue
				}
				isShort = true
			}
		}
		// Here the best so far is short or scores higher; a short value
		// replaces only a short one that scores higher.
		if isShort && bestScore >= 0 && (!bestShort || score >= bestScore) {
			continue
		}
		best, bestScore, bestCand, bestShort = val, score, c, isShort
	}
	if bestScore < 0 {
		out.code, out.perm = failNoPin, false
		if short != nil {
			out.code, out.short = failMinValues, short
		}
		return false
	}
	out.cand = bestCand
	out.pins = append(out.pins, pinKey{k, best})
	return true
}

// commit places pod index pi of shape sh (through variant v) on b.
func (s *state) commit(v *variant, b *bin, out *outcome, pi int32) {
	sh := v.sh
	if b.claim {
		for _, p := range out.pins {
			b.dom[p.key] = s.domain(p.key, p.val)
			s.onPin(b, p.key)
		}
		b.cand = out.cand
		if len(b.pods) == 0 {
			b.mvMin = out.mvMin
		}
		if out.cheap != b.cheap {
			delta := b.pool.cap[out.cheap].Clone()
			delta.Sub(b.pool.cap[b.cheap])
			b.pool.charge(delta, false)
			b.cheap = out.cheap
		}
	}
	b.pods = append(b.pods, pi)
	if s.ord != nil && s.hostOwner(sh) {
		b.hostOwners++
	}
	b.used.Add(sh.req)
	b.npods++
	if len(sh.ports) > 0 {
		b.ports = append(b.ports, sh.ports...)
	}
	for _, g := range sh.matchedBy {
		d := b.dom[g.key]
		if d < 0 {
			continue
		}
		if g.kind == gSpread && !s.eligible(g, b) {
			continue
		}
		g.inc(d, 1)
	}
	for _, g := range sh.ownsAnti {
		if d := b.dom[g.key]; d >= 0 {
			g.inc(d, 1)
		}
	}
}

// onPin is called when claim b takes a value for key k; the solver hooks
// its bucket lists here.
func (s *state) onPin(b *bin, k int) {
	if s.pinHook != nil {
		s.pinHook(b, k)
	}
}

// newClaimBin creates a claim bin of pool p with candidate set c.
func (s *state) newClaimBin(p *poolIdx, c *candSet) *bin {
	b := s.claimBin(p, c, len(s.bins))
	s.bins = append(s.bins, b)
	return b
}

// claimBin builds a claim bin without adding it; id -1 plans one.
func (s *state) claimBin(p *poolIdx, c *candSet, id int) *bin {
	b := &bin{id: id, claim: true, pool: p, cand: c, taints: p.np.Taints, cheap: c.first}
	b.dom = make([]int32, len(s.keys))
	for k := range s.keys {
		switch {
		case k == s.hostKey && id < 0:
			b.dom[k] = s.newDom
		case k == s.hostKey:
			b.dom[k] = s.domain(k, "\x00claim-"+strconv.Itoa(b.id))
		default:
			b.dom[k] = domUnpinned
			if r, ok := c.reqs.Get(s.keys[k]); ok && r.Finite() && r.Len() == 1 && !r.AllowsAbsent() {
				for val := range r.Values() {
					b.dom[k] = s.domain(k, val)
				}
			} else if len(s.domainsFor(p, k)) == 0 {
				b.dom[k] = domAbsent
			}
		}
	}
	return b
}

func (c failCode) String() string {
	switch c {
	case okCode:
		return "ok"
	case failUnschedulable:
		return "node(s) were unschedulable"
	case failTaint:
		return "node(s) had untolerated taint"
	case failAffinity:
		return "node(s) didn't match Pod's node affinity/selector"
	case failPorts:
		return "node(s) didn't have free ports for the requested pod ports"
	case failResources:
		return "Insufficient resources"
	case failLimit:
		return "NodePool limit reached"
	case failSpreadLabel:
		return "node(s) didn't match pod topology spread constraints (missing required label)"
	case failSpread:
		return "node(s) didn't match pod topology spread constraints"
	case failPodAffinity:
		return "node(s) didn't match pod affinity rules"
	case failPodAnti:
		return "node(s) didn't match pod anti-affinity rules"
	case failExistingAnti:
		return "node(s) didn't satisfy existing pods anti-affinity rules"
	case failNoPin:
		return "no topology domain satisfies the pod's constraints"
	case failMinValues:
		return "the instance types left do not cover the NodePool's minValues"
	}
	return fmt.Sprintf("code %d", c)
}

// availableOn is what an existing node has left.
func availableOn(b *bin) resources.Vector {
	a := b.alloc.Clone()
	a.Sub(b.used)
	return a
}
