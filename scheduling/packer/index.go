package packer

import (
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
)

// poolIdx is a NodePool with its instance types indexed: sorted by their
// cheapest available price, with DaemonSet overhead subtracted per type, and
// with candidate sets memoized per requirement signature.
type poolIdx struct {
	np    *NodePool
	table *typeTable
	idx   int
	types []*InstanceType // cheapest available offering first, then by name
	price []float64       // cheapest available offering; +Inf if none
	eff   []resources.Vector
	over  []resources.Vector
	cap   []resources.Vector

	sets    map[string]*candSet
	root    *candSet
	domains map[int][]string // topology key index -> values a new node can take

	limited []corev1.ResourceName
	rem     resources.Vector // limit minus in use minus what this result launches
	// limNodes is the remaining node count when nodeLimit is set: the
	// limit minus the nodes in use minus those this result launches. It
	// may be negative (more nodes in use than the limit allows).
	limNodes  int64
	nodeLimit bool

	// minv are the pool's requirements with minValues; nil when none.
	minv   []minValue
	mvSeen [][]bool // scratch of coverMinValues, per key
	mvList []int    // scratch of minValuesShort
	mvBuf  []int
}

// candSet is a memoized set of instance types of one pool that are
// compatible with one set of requirements and have an available offering
// there. Claims with equal requirements share one.
type candSet struct {
	pool  *poolIdx
	reqs  requirements.Requirements
	bits  []uint64
	n     int
	max   resources.Vector // per-dimension maximum of eff over the set
	first int              // lowest member, or len(types)
	// typeOK counts types whose requirements are compatible, before offerings.
	typeOK int
	alts   map[int]*candSet
	pins   map[pinKey]*candSet
	// front lists, in price order, the members that no cheaper member
	// dominates (has at least as much of every resource): only they can be
	// the cheapest fit. Built on first use.
	front []int32
	// prices memoizes offerPrice of each type under reqs; NaN when unknown.
	prices []float64
}

// priceOf is the cheapest available offering of type i that c's
// requirements allow.
func (c *candSet) priceOf(i int) float64 {
	if c.prices == nil {
		c.prices = make([]float64, len(c.pool.types))
		for k := range c.prices {
			c.prices[k] = math.NaN()
		}
	}
	if p := c.prices[i]; !math.IsNaN(p) {
		return p
	}
	p := offerPrice(c.pool.types[i], c.reqs)
	c.prices[i] = p
	return p
}

type pinKey struct {
	key int
	val string
}

func (c *candSet) has(i int) bool { return c.bits[i>>6]&(1<<(uint(i)&63)) != 0 }

// typeTable is the part of a pool's index that depends only on the pool and
// the DaemonSets, not on the pods and nodes of one packing: its instance
// types in price order with their DaemonSet overhead. A Cache lets
// consecutive packings share it.
type typeTable struct {
	np      *NodePool
	daemons []*corev1.Pod
	types   []*InstanceType
	price   []float64
	eff     []resources.Vector
	over    []resources.Vector
	cap     []resources.Vector
	// members memoizes candidate sets' members by requirements key.
	members map[string]setMembers
}

func newTypeTable(np *NodePool, daemons []*corev1.Pod, daemonAlts [][]requirements.Requirements) *typeTable {
	t := &typeTable{np: np, daemons: daemons, types: slices.Clone(np.InstanceTypes), members: map[string]setMembers{}}
	price := func(it *InstanceType) float64 {
		best := math.Inf(1)
		for _, o := range it.Offerings {
			if o.Available && o.PricePerHour < best {
				best = o.PricePerHour
			}
		}
		return best
	}
	slices.SortStableFunc(t.types, func(a, b *InstanceType) int {
		pa, pb := price(a), price(b)
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	// A DaemonSet's pod runs on a new node of this pool if it tolerates the
	// pool's taints and one of its requirement alternatives fits the type.
	var daemonReq []resources.Vector
	var tolerated []bool
	if len(daemons) > 0 {
		daemonReq = make([]resources.Vector, len(daemons))
		tolerated = make([]bool, len(daemons))
		for di, d := range daemons {
			daemonReq[di] = resources.PodVector(d)
			tolerated[di], _ = taints.ToleratesAll(d.Spec.Tolerations, np.Taints, taints.Blocking)
		}
	}
	t.price = make([]float64, len(t.types))
	t.eff = make([]resources.Vector, len(t.types))
	t.over = make([]resources.Vector, len(t.types))
	t.cap = make([]resources.Vector, len(t.types))
	for i, it := range t.types {
		t.price[i] = price(it)
		var over resources.Vector
		if len(daemons) > 0 {
			combined := np.Requirements.Intersect(it.Requirements)
			for di := range daemons {
				if !tolerated[di] {
					continue
				}
				for _, a := range daemonAlts[di] {
					if _, bad := combined.Conflict(a, requirements.AllowUndefinedWellKnown); !bad {
						over.Add(daemonReq[di])
						break
					}
				}
			}
		}
		eff := it.Allocatable.Clone()
		eff.Sub(over)
		t.over[i], t.eff[i] = over, eff
		t.cap[i] = it.Capacity
		if t.cap[i].IsZero() {
			t.cap[i] = it.Allocatable
		}
	}
	return t
}

// Cache carries work from one Solve to the next, for callers that pack many
// variations of one cluster (consolidation tries one per candidate, and
// keeps its cache from decision to decision): each pool's instance-type
// table (see builtFrom), what packing derives from each node's pods (found
// again only for the very same pod list) and its label values (read again
// for another labels map). Inputs must not be changed in place while a
// Cache is in use: pass a new NodePool, pod list, labels or
// namespace-labels map instead, which the Cache recognises as new. It is
// not safe for concurrent use (see Sibling), and it lends memory to one
// packing at a time. The zero value is not usable: call NewCache.
type Cache struct {
	// tables holds one table per NodePool name: a Cache kept across
	// decisions, each with its own copies of the pools, holds no more than
	// one per pool.
	tables map[string]*typeTable
	// facts memoizes, per node name, what packing derives from the node's
	// pods and labels, with the pod list it was derived from.
	facts map[string]*nodeFacts
	// termIDs numbers the terms whose selections nodeFacts count, by
	// signature; keyIDs numbers the label keys whose values nodeFacts hold,
	// and values numbers, per key number, the values of that label seen on
	// nodes (names lists them by number). Numbers let a packing find a
	// node's counts and topology domains by index instead of hashing
	// strings, for every node of every packing.
	termIDs map[string]int32
	// keyLists holds one list per distinct list of spread keys, by the keys
	// joined (see keyList).
	keyLists map[string][]string
	keyIDs   map[string]int32
	keys     []string
	values   []map[string]int32
	names    [][]string
	// scratch is memory lent to one packing after another (see
	// reserveNodeBins): allocating it anew for every packing of a large
	// cluster made consolidation's garbage collection cost as much as its
	// packing.
	scratch scratch
	// sibling is the cache Sibling returns, made on first use.
	sibling *Cache
	// sigs are pods' signatures by object (see sigMemo).
	sigs sigMemo
}

// sigMemo remembers pods' grouping signatures by pod object from one
// packing to the next. A disruption decision packs the same pending and
// leaving pods for every candidate it tries, and writing their signatures
// (which encode affinity, tolerations and spread constraints) cost a third
// of such a decision at a few hundred nodes. Pods are not changed in place
// while a Cache is in use, so an object's signature stands; what one
// packing did not read is forgotten at the end of the next.
type sigMemo struct {
	cur, prev map[*corev1.Pod]string
}

// turn starts a packing: the signatures read since the last turn become the
// ones kept for it, and the older ones are dropped.
func (m *sigMemo) turn() {
	m.prev, m.cur = m.cur, m.prev
	if m.cur == nil {
		m.cur = map[*corev1.Pod]string{}
	}
	clear(m.cur)
}

// of returns pod's signature, from the memo when the object was signed in
// this packing or the previous one.
func (m *sigMemo) of(pod *corev1.Pod) string {
	if sig, ok := m.cur[pod]; ok {
		return sig
	}
	sig, ok := m.prev[pod]
	if !ok {
		sig = podSig(pod, nil)
	}
	m.cur[pod] = sig
	return sig
}

// scratch is the memory of the existing nodes' bins, their domains, the
// list of every bin, the nodes in packing order, their facts and their bin
// ids, each overwritten by the packing it is lent to.
type scratch struct {
	bins     []bin
	dom      []int32
	list     []*bin
	facts    []*nodeFacts
	nodes    []*Node
	existing []int
	// prev are the nodes of the previous packing, in its order, with their
	// facts (see state.nodeFacts).
	prev []seenNode
	// Slices as long as the nodes, per topology key or per group: domain
	// names and numbers, counts, eligibility and registered domains.
	strs  arena[string]
	ints  arena[int32]
	bytes arena[int8]
	bools arena[bool]
}

// reset gives back everything the previous packing took.
func (sc *scratch) reset() {
	sc.strs.reset()
	sc.ints.reset()
	sc.bytes.reset()
	sc.bools.reset()
}

// arena lends slices to one packing; they all come back when the next
// packing starts (reset).
type arena[T any] struct {
	lent [][]T
	next int
}

func (a *arena[T]) reset() { a.next = 0 }

// take returns an empty slice with room for n. What lies beyond its length
// is left from an earlier packing: the packing appends what it needs.
func (a *arena[T]) take(n int) []T {
	if a.next == len(a.lent) {
		a.lent = append(a.lent, nil)
	}
	if cap(a.lent[a.next]) < n {
		a.lent[a.next] = make([]T, 0, n)
	}
	out := a.lent[a.next][:0]
	a.next++
	return out
}

type seenNode struct {
	name     string
	inFlight bool
	facts    *nodeFacts
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{tables: map[string]*typeTable{}, facts: map[string]*nodeFacts{}, termIDs: map[string]int32{}, keyLists: map[string][]string{}, keyIDs: map[string]int32{}}
}

// nodeFacts are what packing derives from a node's pods alone, and the
// node's label values as a packing reads them. Building a packing state
// reads them for every node, so consolidation, which packs the same nodes
// once per candidate, keeps them in its Cache.
type nodeFacts struct {
	pods **corev1.Pod
	len  int
	// ports are the pods' host ports; the slice is full (len == cap), so
	// that a bin appending to it copies.
	ports []hostPort
	// spreadKeys are the normalized topology keys of the pods' spread
	// constraints, each once, in the order the pods first name them.
	spreadKeys []string
	// anti are the pods, not being deleted, with required pod
	// anti-affinity terms.
	anti []*corev1.Pod
	// antiTerms are those pods' terms, resolved (see ownerTerms) against
	// the namespace labels resolvedNS, ownerSigs the signatures of the
	// owner groups they make, and ownerIDs the cache's numbers of those
	// signatures (Cache.termIDs). Holding the map keeps another from taking
	// its address.
	antiTerms  []term
	ownerSigs  []string
	ownerIDs   []int32
	resolvedNS map[string]map[string]string
	// selected counts, by term number (Cache.termIDs), the pods not being
	// deleted that the term selects; -1 where not counted yet.
	selected []int32
	// values are, by key number (Cache.keyIDs), the number of the node's
	// value of that label (Cache.values), noValue when it has none, and
	// unread where it was not read yet, all read from the map labels (held
	// so that no other map takes its address while it is compared).
	labels map[string]string
	values []int32
}

// Values of nodeFacts.values that number no label value.
const (
	noValue int32 = -1
	unread  int32 = -2
)

// ownerTerms returns the resolved required anti-affinity terms of the
// node's pods, in pod and term order, leaving out terms that do not
// resolve, with the signatures of their owner groups. Resolving reads the
// namespaces' labels: the terms are resolved once per namespace-labels map,
// which the Solves of one decision share (a caller that keeps a Cache
// longer builds a new map when labels change).
func (f *nodeFacts) ownerTerms(s *state) ([]term, []int32) {
	if f.resolvedNS == nil || reflect.ValueOf(f.resolvedNS).Pointer() != reflect.ValueOf(s.nsLabels).Pointer() {
		f.antiTerms, f.ownerSigs, f.ownerIDs = nil, nil, nil
		for _, p := range f.anti {
			for _, t := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				if rt, err := s.resolveTerm(p, t); err == nil {
					f.antiTerms = append(f.antiTerms, rt)
					f.ownerSigs = append(f.ownerSigs, groupSig(gOwner, &rt, ""))
				}
			}
		}
		f.resolvedNS = s.nsLabels
	}
	if len(f.ownerIDs) != len(f.ownerSigs) {
		f.ownerIDs = f.ownerIDs[:0]
		for _, sig := range f.ownerSigs {
			f.ownerIDs = append(f.ownerIDs, s.cache.termID(sig))
		}
	}
	return f.antiTerms, f.ownerIDs
}

func factsOf(n *Node) *nodeFacts {
	f := &nodeFacts{pods: unsafe.SliceData(n.Pods), len: len(n.Pods)}
	for _, p := range n.Pods {
		f.ports = append(f.ports, podHostPorts(p)...)
		for _, t := range p.Spec.TopologySpreadConstraints {
			if k := wellknown.NormalizeLabel(t.TopologyKey); !slices.Contains(f.spreadKeys, k) {
				f.spreadKeys = append(f.spreadKeys, k)
			}
		}
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && p.DeletionTimestamp == nil &&
			len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			f.anti = append(f.anti, p)
		}
	}
	f.ports = f.ports[:len(f.ports):len(f.ports)]
	return f
}

// factsFor returns n's facts, from the memo when n's pod list is the very
// one they were derived from. A nil Cache derives them afresh.
func (c *Cache) factsFor(n *Node) *nodeFacts {
	if c == nil {
		return factsOf(n)
	}
	if f, ok := c.facts[n.Name]; ok && f.pods == unsafe.SliceData(n.Pods) && f.len == len(n.Pods) {
		return f
	}
	f := factsOf(n)
	f.spreadKeys = c.keyList(f.spreadKeys)
	c.facts[n.Name] = f
	return f
}

// keyList returns a list equal to keys, the same one for every node that
// names the same keys in the same order, so that a packing reads each list
// once. Lists are told apart by their keys joined with a NUL, which no
// label key contains.
func (c *Cache) keyList(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	sig := strings.Join(keys, "\x00")
	if l, ok := c.keyLists[sig]; ok {
		return l
	}
	c.keyLists[sig] = keys
	return keys
}

// selected counts the pods of the node whose facts f are that the term
// numbered tid selects (see selectedOn), from the memo when it was counted
// before.
func (f *nodeFacts) selectedBy(tid int32, t *term, n *Node) int32 {
	if int(tid) >= len(f.selected) {
		grown := make([]int32, int(tid)+1+len(f.selected)/2)
		copy(grown, f.selected)
		for i := len(f.selected); i < len(grown); i++ {
			grown[i] = -1
		}
		f.selected = grown
	}
	if c := f.selected[tid]; c >= 0 {
		return c
	}
	c := selectedOn(t, n)
	f.selected[tid] = c
	return c
}

// termID numbers a term by its signature.
func (c *Cache) termID(sig string) int32 {
	if id, ok := c.termIDs[sig]; ok {
		return id
	}
	id := int32(len(c.termIDs))
	c.termIDs[sig] = id
	return id
}

// keyID numbers a label key.
func (c *Cache) keyID(key string) int32 {
	if id, ok := c.keyIDs[key]; ok {
		return id
	}
	id := int32(len(c.keyIDs))
	c.keyIDs[key] = id
	c.keys = append(c.keys, key)
	c.values = append(c.values, map[string]int32{})
	c.names = append(c.names, nil)
	return id
}

// valueID is the number of a value of the label numbered kid, if a node
// had it.
func (c *Cache) valueID(kid int32, value string) (int32, bool) {
	id, ok := c.values[kid][value]
	return id, ok
}

// valueOf is the number of node n's value of the label numbered kid, or
// noValue when n lacks the label; f are n's facts. Values are read from
// the node's labels once per labels map.
func (c *Cache) valueOf(f *nodeFacts, n *Node, kid int32) int32 {
	if !sameMap(f.labels, n.Labels) || f.values == nil {
		f.labels, f.values = n.Labels, f.values[:0]
	}
	for int(kid) >= len(f.values) {
		f.values = append(f.values, unread)
	}
	if id := f.values[kid]; id != unread {
		return id
	}
	id := noValue
	if v, ok := n.Labels[c.keys[kid]]; ok {
		id = c.internValue(kid, v)
	}
	f.values[kid] = id
	return id
}

// valuesOf is valueOf for each of the keys numbered kids: the node's
// values, by key number, read where they were not yet.
func (c *Cache) valuesOf(f *nodeFacts, n *Node, kids []int32) []int32 {
	for _, kid := range kids {
		if int(kid) >= len(f.values) || f.values[kid] == unread || !sameMap(f.labels, n.Labels) {
			c.valueOf(f, n, kid)
		}
	}
	return f.values
}

// internValue numbers a value of the label numbered kid.
func (c *Cache) internValue(kid int32, v string) int32 {
	if id, ok := c.values[kid][v]; ok {
		return id
	}
	id := int32(len(c.names[kid]))
	c.values[kid][v] = id
	c.names[kid] = append(c.names[kid], v)
	return id
}

// sameMap reports whether a and b are the very same map.
func sameMap(a, b map[string]string) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// Nodes is how many nodes the cache keeps facts about.
func (c *Cache) Nodes() int { return len(c.facts) }

// Sibling returns a second cache kept with c (the same one every time),
// for packings of the same cluster that run on another goroutine while c's
// run: a Cache is for one goroutine at a time. RetainNodes on c also trims
// the sibling.
func (c *Cache) Sibling() *Cache {
	if c.sibling == nil {
		c.sibling = NewCache()
	}
	return c.sibling
}

// RetainNodes drops what the cache keeps about nodes keep does not name,
// so that a cache that lives as long as the cluster does not grow with
// every node that ever was.
func (c *Cache) RetainNodes(keep func(node string) bool) {
	if c.sibling != nil {
		c.sibling.RetainNodes(keep)
	}
	for name := range c.facts {
		if !keep(name) {
			delete(c.facts, name)
		}
	}
	c.compact()
}

// Bounds of the numbering a Cache keeps (see compact); the tests lower
// them.
var (
	maxTermIDs  = 4096
	slackValues = 1024
)

// compact starts the numbering of terms and of label values over when it
// has grown well past what the nodes still kept need: terms come and go
// with the pods' selectors (a matchLabelKeys term per ReplicaSet, say), and
// values with the nodes (every hostname). What the nodes' facts hold by
// those numbers is forgotten with them and read again when next needed.
// It must run between packings, never during one: a packing holds numbers.
//
// The previous packing's facts are forgotten with the numbers: some may no
// longer be the cache's (a node whose pods changed since), and what they
// hold by number would not be cleared.
func (c *Cache) compact() {
	if len(c.termIDs) > maxTermIDs {
		clear(c.termIDs)
		for _, f := range c.facts {
			f.selected, f.ownerIDs = nil, nil
		}
		c.scratch.prev = nil
	}
	for kid := range c.names {
		if len(c.names[kid]) <= 2*len(c.facts)+slackValues {
			continue
		}
		for i := range c.values {
			c.values[i] = map[string]int32{}
			c.names[i] = nil
		}
		for _, f := range c.facts {
			f.labels, f.values = nil, nil
		}
		c.scratch.prev = nil
		return
	}
}

// Pools returns how many NodePools' type tables the cache holds.
func (c *Cache) Pools() int { return len(c.tables) }

// RetainPools drops the type tables of the NodePools keep does not name, so
// that a cache that lives as long as the cluster does not grow with every
// NodePool that ever was.
func (c *Cache) RetainPools(keep func(nodePool string) bool) {
	if c.sibling != nil {
		c.sibling.RetainPools(keep)
	}
	for name := range c.tables {
		if !keep(name) {
			delete(c.tables, name)
		}
	}
}

// table returns the type table of np, from the cache when it holds one
// built from the same pool and DaemonSet pods (see builtFrom).
func (c *Cache) table(np *NodePool, daemons []*corev1.Pod, daemonAlts [][]requirements.Requirements) *typeTable {
	if c == nil {
		return newTypeTable(np, daemons, daemonAlts)
	}
	if t, ok := c.tables[np.Name]; ok && t.builtFrom(np, daemons) {
		return t
	}
	t := newTypeTable(np, daemons, daemonAlts)
	c.tables[np.Name] = t
	return t
}

// builtFrom reports whether t is the table of np with daemons. The same
// values (pointers) are the quick answer. A caller that keeps a Cache
// between decisions hands in a copy of each NodePool and new DaemonSet pods
// every time, so the table also stands for a NodePool with the very same
// instance types (the same slice: types are replaced, never changed),
// requirements and taints, and DaemonSet pods with equal specs (all a table
// reads of them); t then takes on those values, so that the decision's
// other packings find them at once.
func (t *typeTable) builtFrom(np *NodePool, daemons []*corev1.Pod) bool {
	if t.np == np && slices.Equal(t.daemons, daemons) {
		return true
	}
	old := t.np
	if len(old.InstanceTypes) != len(np.InstanceTypes) || unsafe.SliceData(old.InstanceTypes) != unsafe.SliceData(np.InstanceTypes) ||
		!old.Requirements.Equal(np.Requirements) || !equality.Semantic.DeepEqual(old.Taints, np.Taints) {
		return false
	}
	if !slices.EqualFunc(t.daemons, daemons, func(a, b *corev1.Pod) bool { return a == b || equality.Semantic.DeepEqual(a.Spec, b.Spec) }) {
		return false
	}
	t.np, t.daemons = np, daemons
	return true
}

func newPoolIdx(np *NodePool, idx int, t *typeTable) *poolIdx {
	p := &poolIdx{np: np, idx: idx, sets: map[string]*candSet{}, domains: map[int][]string{}}
	p.table = t
	p.types, p.price, p.eff, p.over, p.cap = t.types, t.price, t.eff, t.over, t.cap
	if np.Limits != nil {
		lim := resources.NewVector(withoutNodes(np.Limits))
		used := resources.NewVector(withoutNodes(np.InUse))
		lim.Sub(used)
		p.rem = lim
		for name := range np.Limits {
			if name != "nodes" {
				p.limited = append(p.limited, name)
			}
		}
		slices.Sort(p.limited)
		if q, ok := np.Limits["nodes"]; ok {
			p.nodeLimit = true
			p.limNodes = resources.Value(q)
			if u, ok := np.InUse["nodes"]; ok {
				p.limNodes = resources.SubSaturating(p.limNodes, resources.Value(u))
			}
		}
	}
	p.indexMinValues()
	p.root = p.set(np.Requirements)
	return p
}

func withoutNodes(l corev1.ResourceList) corev1.ResourceList {
	if _, ok := l["nodes"]; !ok {
		return l
	}
	out := corev1.ResourceList{}
	for k, v := range l {
		if k != "nodes" {
			out[k] = v
		}
	}
	return out
}

// set returns the candidate set for reqs, computing it on first use. Which
// types are members depends only on the pool's type table and reqs, so it
// is kept in the table, where the next Solve sharing the table (through a
// Cache) finds it; the set's own memos start empty in every Solve.
func (p *poolIdx) set(reqs requirements.Requirements) *candSet {
	key := reqs.String()
	if c, ok := p.sets[key]; ok {
		return c
	}
	if m, ok := p.table.members[key]; ok {
		c := &candSet{pool: p, reqs: reqs, bits: m.bits, n: m.n, max: m.max, first: m.first, typeOK: m.typeOK}
		p.sets[key] = c
		return c
	}
	c := &candSet{pool: p, reqs: reqs, bits: make([]uint64, (len(p.types)+63)/64), first: len(p.types)}
	zone, hasZone := reqs.Get(wellknown.LabelTopologyZone)
	ct, hasCT := reqs.Get(wellknown.LabelCapacityType)
	for i, it := range p.types {
		if !it.Requirements.Intersects(reqs) {
			continue
		}
		c.typeOK++
		if !offeringAllowed(it, hasZone, zone, hasCT, ct) {
			continue
		}
		c.bits[i>>6] |= 1 << (uint(i) & 63)
		c.n++
		if i < c.first {
			c.first = i
		}
		e := p.eff[i]
		c.max.CPU = max(c.max.CPU, e.CPU)
		c.max.Memory = max(c.max.Memory, e.Memory)
		c.max.EphemeralStorage = max(c.max.EphemeralStorage, e.EphemeralStorage)
		c.max.Pods = max(c.max.Pods, e.Pods)
	}
	p.sets[key] = c
	p.table.members[key] = setMembers{bits: c.bits, n: c.n, max: c.max, first: c.first, typeOK: c.typeOK}
	return c
}

// setMembers are a candidate set's members and what is derived from them
// alone. bits is shared by every candSet built from it and never written.
type setMembers struct {
	bits   []uint64
	n      int
	max    resources.Vector
	first  int
	typeOK int
}

func offeringAllowed(it *InstanceType, hasZone bool, zone requirements.Requirement, hasCT bool, ct requirements.Requirement) bool {
	for _, o := range it.Offerings {
		if !o.Available {
			continue
		}
		if hasZone && !zone.Allows(o.Zone) {
			continue
		}
		if hasCT && !ct.Allows(o.CapacityType) {
			continue
		}
		return true
	}
	return false
}

// withAlt returns the candidate set narrowed by a pod's requirement
// alternative, memoized by the alternative's id.
func (c *candSet) withAlt(id int, alt requirements.Requirements) *candSet {
	if alt.Len() == 0 {
		return c
	}
	if n, ok := c.alts[id]; ok {
		return n
	}
	if c.alts == nil {
		c.alts = map[int]*candSet{}
	}
	n := c.pool.set(c.reqs.Intersect(alt))
	c.alts[id] = n
	return n
}

// withPin returns the candidate set narrowed to one value of a topology key.
func (c *candSet) withPin(s *state, key int, val string) *candSet {
	pk := pinKey{key, val}
	if n, ok := c.pins[pk]; ok {
		return n
	}
	if c.pins == nil {
		c.pins = map[pinKey]*candSet{}
	}
	r, err := requirements.NewRequirement(s.keys[key], corev1.NodeSelectorOpIn, val)
	var n *candSet
	if err != nil {
		n = c
	} else {
		n = c.pool.set(c.reqs.Add(r))
	}
	c.pins[pk] = n
	return n
}

// cheapestFit returns the first member at or after from, in price order,
// whose allocatable after overhead fits used plus req; -1 if none.
func (c *candSet) cheapestFit(from int, used resources.Vector, sh *shape) int {
	if !quickFits(used, sh, c.max) {
		return -1
	}
	// A member dominated by a cheaper one fits only where that one does;
	// when that one lies before from, it does not fit (from is where the
	// previous, smaller fit was), so neither does the dominated member.
	front := c.frontier()
	k, _ := slices.BinarySearch(front, int32(from))
	eff := c.pool.eff
	for _, i := range front[k:] {
		if sumFits(used, sh, eff[i]) {
			return int(i)
		}
	}
	return -1
}

// frontier returns c.front, computing it on first use.
func (c *candSet) frontier() []int32 {
	if c.front != nil || c.n == 0 {
		return c.front
	}
	eff := c.pool.eff
	front := make([]int32, 0, 64)
	n := len(c.pool.types)
	for i := c.first; i < n; {
		w := c.bits[i>>6] >> (uint(i) & 63)
		if w == 0 {
			i = (i | 63) + 1
			continue
		}
		i += bits.TrailingZeros64(w)
		if i >= n {
			break
		}
		dominated := false
		for _, j := range front {
			if eff[i].Fits(eff[j]) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, int32(i))
		}
		i++
	}
	c.front = front
	return front
}

// quickFits checks the scalar resources only, against an upper bound. It
// compares each request with what is left (avail minus used, both never
// negative, so no overflow) rather than adding: a request of
// resources.Infinite fits nowhere, and the check stays small enough to
// inline.
func quickFits(used resources.Vector, sh *shape, avail resources.Vector) bool {
	r := &sh.req
	return (r.CPU <= 0 || r.CPU <= avail.CPU-used.CPU) &&
		(r.Memory <= 0 || r.Memory <= avail.Memory-used.Memory) &&
		(r.EphemeralStorage <= 0 || r.EphemeralStorage <= avail.EphemeralStorage-used.EphemeralStorage) &&
		(r.Pods <= 0 || r.Pods <= avail.Pods-used.Pods)
}

// sumFits reports whether sh's requests fit on a node with avail allocatable
// and used already requested, as NodeResourcesFit judges: only what the pod
// requests is checked.
func sumFits(used resources.Vector, sh *shape, avail resources.Vector) bool {
	if !quickFits(used, sh, avail) {
		return false
	}
	for _, e := range sh.ext {
		if e.value > 0 && e.value > avail.Get(e.name)-used.Get(e.name) {
			return false
		}
	}
	return true
}

// growthAllowed reports whether the pool's limits let a claim move from
// type from to type to.
func (p *poolIdx) growthAllowed(from, to int) bool {
	if len(p.limited) == 0 {
		return true
	}
	for _, name := range p.limited {
		if d := p.cap[to].Get(name) - p.cap[from].Get(name); d > 0 && d > p.rem.Get(name) {
			return false
		}
	}
	return true
}

// limitAllows reports whether the pool may grow by delta (and by one node when
// newNode), and if not, which resource and by how much it would exceed.
func (p *poolIdx) limitAllows(delta resources.Vector, newNode bool) (corev1.ResourceName, int64, bool) {
	if newNode && p.nodeLimit && p.limNodes < 1 {
		return "nodes", resources.SubSaturating(1, p.limNodes), false
	}
	for _, name := range p.limited {
		d := delta.Get(name)
		if d > 0 && d > p.rem.Get(name) {
			return name, resources.SubSaturating(d, p.rem.Get(name)), false
		}
	}
	return "", 0, true
}

func (p *poolIdx) charge(delta resources.Vector, newNode bool) {
	if newNode && p.nodeLimit {
		p.limNodes--
	}
	if len(p.limited) > 0 {
		p.rem.Sub(delta)
	}
}

// domainsFor returns the values a new node of the pool can take for a
// topology key: zones and capacity types from available offerings, other
// keys from the pool's or the instance types' requirements.
func (s *state) domainsFor(p *poolIdx, k int) []string {
	if d, ok := p.domains[k]; ok {
		return d
	}
	key := s.keys[k]
	set := map[string]bool{}
	poolReq, hasPoolReq := p.np.Requirements.Get(key)
	switch key {
	case wellknown.LabelHostname:
	case wellknown.LabelTopologyZone, wellknown.LabelCapacityType:
		for i, it := range p.types {
			if !p.root.has(i) {
				continue
			}
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				v := o.Zone
				if key == wellknown.LabelCapacityType {
					v = o.CapacityType
				}
				set[v] = true
			}
		}
	default:
		if hasPoolReq && poolReq.Finite() {
			for v := range poolReq.Values() {
				set[v] = true
			}
		} else {
			for i, it := range p.types {
				if !p.root.has(i) {
					continue
				}
				if r, ok := it.Requirements.Get(key); ok && r.Finite() {
					for v := range r.Values() {
						set[v] = true
					}
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		if !hasPoolReq || poolReq.Allows(v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	p.domains[k] = out
	return out
}
