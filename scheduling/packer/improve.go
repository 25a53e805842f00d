package packer

import (
	"cmp"
	"slices"

	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// improve moves pods from crowded claims into room that other claims already
// pay for, then shrinks every claim to the cheapest type that still holds its
// pods and drops the claims left empty.
//
// First fit cannot know which pods are still to come. Pods that must each
// have a node of their own (hostname self-anti-affinity) open their nodes
// first, each at the cheapest type for that one pod; the pods after them
// grow the first claims that take them into large nodes, and the nodes
// opened first keep the room their type has beyond the one pod. Moving a pod
// into that room costs nothing, and once enough have left a crowded claim it
// drops to a smaller type.
//
// A move never makes the plan dearer: the target keeps its type, and the
// source's only shrinks. It never changes what a constraint sees anywhere
// but on the two nodes:
//   - the pod keeps its domain on every key but the hostname (the target
//     must already be in, or take, the source's zone and every other
//     domain), so zone and other counts stay as they were;
//   - on the target the pod passes every check it passed when first placed
//     (state.check: requirements, taints, ports, resources, its own spread,
//     affinity and anti-affinity, and the anti-affinity of the pods there);
//   - no other pod's hostname constraint can object: a pod another pod
//     needs on its node (required pod affinity on the hostname) is not
//     moved, and one counted by a hostname spread constraint goes only
//     where that constraint counts none, so the target holds at most one
//     such pod, within any maxSkew of at least 1 over a minimum of 0 (the
//     packer opens fresh nodes, so the hostname minimum is 0). Taking pods
//     away from a node never breaks another's required constraint.
//
// After the moves, balance swaps pods between claims that fill opposite
// resources, under the same rules (see balance).
//
// Pods with preferences are left where first fit put them, which honours
// the preferences the placement chose. So are pods of pools with minValues.
func (sv *solver) improve() {
	s := sv.s
	if len(sv.claims) < 2 {
		return
	}
	// Groups some pod needs on its own node: the pods they select stay.
	needed := map[*group]bool{}
	var shapes []*shape
	seen := map[*shape]bool{}
	for _, sh := range sv.shapeOf {
		if !seen[sh] {
			seen[sh] = true
			shapes = append(shapes, sh)
		}
	}
	// By signature, not id: ids follow the order of the input pods.
	slices.SortFunc(shapes, func(a, b *shape) int { return cmp.Compare(a.sig, b.sig) })
	for _, sh := range shapes {
		for _, g := range sh.aff {
			if g.key == s.hostKey {
				needed[g] = true
			}
		}
	}
	movableShape := func(sh *shape) bool {
		if len(sh.prefs) > 0 || len(sh.variants) != 1 {
			return false
		}
		for _, g := range sh.aff {
			if g.key == s.hostKey {
				return false
			}
		}
		for _, g := range sh.matchedBy {
			if needed[g] {
				return false
			}
		}
		return true
	}
	// Memoized: balance asks for every pod of every pair it tries.
	isMovable := map[*shape]bool{}
	movable := func(sh *shape) bool {
		m, ok := isMovable[sh]
		if !ok {
			m = movableShape(sh)
			isMovable[sh] = m
		}
		return m
	}
	// The pods on claims, by shape and by the sources' domains on the keys
	// other than the hostname (a pod moves only within its domains, so a
	// target looks only at the lists it could take from); shapes largest
	// first, as first-fit decreasing fills room.
	onClaims := map[*shape][]*moveList{}
	for _, id := range sv.claims {
		b := s.bins[id]
		if b.pool.minv != nil {
			continue
		}
		for _, pi := range b.pods {
			sh := sv.shapeOf[pi]
			if !movable(sh) {
				continue
			}
			var ml *moveList
			for _, l := range onClaims[sh] {
				if sameDomainsExact(s, l.dom, b.dom) {
					ml = l
					break
				}
			}
			if ml == nil {
				ml = &moveList{dom: slices.Clone(b.dom)}
				onClaims[sh] = append(onClaims[sh], ml)
			}
			ml.pods = append(ml.pods, pi)
		}
	}
	var order []*shape
	for _, sh := range shapes {
		if len(onClaims[sh]) > 0 {
			order = append(order, sh)
		}
	}
	slices.SortStableFunc(order, func(a, b *shape) int {
		if c := cmp.Compare(b.req.CPU, a.req.CPU); c != 0 {
			return c
		}
		return cmp.Compare(b.req.Memory, a.req.Memory)
	})
	// Runs of shapes in that order with the same requests: a target too
	// full for one is too full for all, and the pass skips them at once
	// (thousands of shapes, a few dozen requests).
	var runs [][]*shape
	for i, sh := range order {
		if i == 0 || scalars(sh.req) != scalars(order[i-1].req) {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], sh)
	}
	traceAt := make([]int32, len(sv.pods))
	for i, st := range sv.trace {
		traceAt[st.pod] = int32(i)
	}
	// A pod moved once stays: it went to a claim no more crowded than its
	// target, and skipping it keeps later targets' looks for pods that can
	// still move.
	moved := make([]bool, len(sv.pods))

	var out outcome
	for _, tid := range sv.claims {
		t := s.bins[tid]
		if t.pool.minv != nil {
			continue
		}
		for _, run := range runs {
			// Extended resources differ within a run; quickFits does not
			// look at them.
			if !quickFits(t.used, run[0], t.pool.eff[t.cheap]) {
				continue
			}
			for _, sh := range run {
				sv.moveInto(t, sh, onClaims[sh], moved, traceAt, &out)
			}
		}
	}
	sv.balance(movable, traceAt)
	sv.shrink()
}

// moveInto moves pods of shape sh from the lists into target t while they
// fit, looking at a bounded number per list (see improve).
func (sv *solver) moveInto(t *bin, sh *shape, lists []*moveList, moved []bool, traceAt []int32, out *outcome) {
	s := sv.s
	// Each target looks at a bounded number of pods per shape and list, so
	// the pass costs targets × shapes, not targets × pods. Pods already
	// moved do not count: otherwise the first targets take the pods listed
	// first, and every later target spends its looks on them and finds
	// nothing, however many movable pods remain further down.
	const looks = 16
	for _, ml := range lists {
		if !sameDomainsAs(s, ml.dom, t) {
			continue
		}
		for ml.head < len(ml.pods) && moved[ml.pods[ml.head]] {
			ml.head++
		}
		next := ml.head
		for quickFits(t.used, sh, t.pool.eff[t.cheap]) && next < len(ml.pods) {
			ok := false
			for tries := 0; next < len(ml.pods) && tries < looks; {
				pi := ml.pods[next]
				next++
				if moved[pi] {
					continue
				}
				tries++
				src := s.bins[sv.binOf[pi]]
				// Only out of claims more crowded than the target: the
				// sum of squared pod counts falls with every move, so the
				// pass ends.
				if src == t || len(src.pods) <= len(t.pods)+1 || !sameDomains(s, src, t) {
					continue
				}
				if sv.move(pi, src, t, out) {
					sv.trace[traceAt[pi]].bin = t.id
					moved[pi] = true
					ok = true
					break
				}
			}
			if !ok {
				break
			}
		}
	}
}

// balance swaps pods between claims that fill opposite resources: one
// whose cpu is fuller than its memory (A) gives a cpu-heavy pod for a
// memory-heavy one of a claim whose memory is fuller (B). First fit packs
// the largest cpu requests first, so the claims it grows early fill their
// cpu and leave memory free, and those it grows late the reverse; neither
// can then drop to a smaller type. Each swap lowers A's cpu and B's memory
// and is made only while each stays on its side (A's cpu at least as full
// as its memory, B's memory at least as full as its cpu), so both end
// closer to balance and shrink can drop them.
//
// A swap is two moves by the rules of improve (same domains, the check of
// a first placement on the target's current type, hostname spread), each
// checked after both pods are off their claims. A pod whose move would pin
// its target or narrow its instance types is not swapped, so that the first
// move of a swap can be undone exactly when the second fails. A claim is A
// or B for the whole pass, so A's cpu and B's memory only fall: the pass
// ends.
func (sv *solver) balance(movable func(*shape) bool, traceAt []int32) {
	s := sv.s
	// fill is how much fuller a claim's cpu is than its memory, as
	// fractions of its type's allocatable.
	fill := func(b *bin, used resources.Vector) float64 {
		e := b.pool.eff[b.cheap]
		if e.CPU <= 0 || e.Memory <= 0 {
			return 0
		}
		return float64(used.CPU)/float64(e.CPU) - float64(used.Memory)/float64(e.Memory)
	}
	const (
		minPods  = 4    // claims with fewer have little to swap
		minSkew  = 0.05 // claims closer to balance are left
		pairsPer = 32   // B claims an A claim tries
		misses   = 64   // failed swaps before a pair is left
	)
	var as, bs []*bin
	for _, id := range sv.claims {
		b := s.bins[id]
		if b.pool.minv != nil || len(b.pods) < minPods {
			continue
		}
		switch f := fill(b, b.used); {
		case f > minSkew:
			as = append(as, b)
		case f < -minSkew:
			bs = append(bs, b)
		}
	}
	if len(as) == 0 || len(bs) == 0 {
		return
	}
	// Largest first: they have the most to gain. Ties by id.
	bySize := func(x, y *bin) int {
		ex, ey := x.pool.eff[x.cheap], y.pool.eff[y.cheap]
		if c := cmp.Compare(ey.CPU, ex.CPU); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	}
	slices.SortFunc(as, bySize)
	slices.SortFunc(bs, bySize)
	var out outcome
	var pa, pb []int32
	var scratch []keyedPod
	for _, a := range as {
		tried := 0
		ea := a.pool.eff[a.cheap] // a swap never changes a's type
		stale := true
		for _, b := range bs {
			if tried == pairsPer || fill(a, a.used) <= minSkew {
				break
			}
			if fill(b, b.used) >= -minSkew || !sameDomainsExact(s, a.dom, b.dom) || b.pool != a.pool {
				continue
			}
			tried++
			// a's pods are sorted again only after they changed.
			if stale {
				pa, scratch = sv.heaviest(a, ea, 1, movable, pa[:0], scratch)
				stale = false
			}
			pb, scratch = sv.heaviest(b, ea, -1, movable, pb[:0], scratch)
			if sv.balancePair(a, b, pa, pb, traceAt, fill, misses, &out) {
				stale = true
			}
		}
	}
}

// keyedPod is a pod with its sort key.
type keyedPod struct {
	key float64
	pi  int32
}

// heavy is how much more of the cpu than of the memory of allocatable e a
// request takes.
func heavy(r *resources.Vector, e resources.Vector) float64 {
	return float64(r.CPU)/float64(e.CPU) - float64(r.Memory)/float64(e.Memory)
}

// heaviest appends to dst the movable pods of c, heaviest first against
// allocatable e (sign 1: in cpu; -1: in memory), ties by index. The keys
// are computed once per pod, not per comparison, in scratch.
func (sv *solver) heaviest(c *bin, e resources.Vector, sign float64, movable func(*shape) bool, dst []int32, scratch []keyedPod) ([]int32, []keyedPod) {
	ks := scratch[:0]
	for _, pi := range c.pods {
		if sh := sv.shapeOf[pi]; movable(sh) {
			ks = append(ks, keyedPod{sign * heavy(&sh.req, e), pi})
		}
	}
	slices.SortFunc(ks, func(x, y keyedPod) int {
		if c := cmp.Compare(y.key, x.key); c != 0 {
			return c
		}
		return cmp.Compare(x.pi, y.pi)
	})
	for _, k := range ks {
		dst = append(dst, k.pi)
	}
	return dst, ks
}

// balancePair swaps pods between a (cpu fuller) and b (memory fuller), the
// most cpu-heavy of a's (pa) against the most memory-heavy of b's (pb),
// while each claim stays on its side, and reports whether it swapped any.
func (sv *solver) balancePair(a, b *bin, pa, pb []int32, traceAt []int32, fill func(*bin, resources.Vector) float64, misses int, out *outcome) bool {
	ea := a.pool.eff[a.cheap]
	heavy := func(pi int32) float64 { return heavy(&sv.shapeOf[pi].req, ea) }
	swapped := false
	i, j, miss := 0, 0, 0
	for i < len(pa) && j < len(pb) && miss < misses {
		x, y := pa[i], pb[j]
		rx, ry := sv.shapeOf[x].req, sv.shapeOf[y].req
		if rx.CPU <= ry.CPU || ry.Memory <= rx.Memory {
			// Not a swap that helps both; try the next of the side with
			// the smaller gain.
			if heavy(x) < -heavy(y) {
				i++
			} else {
				j++
			}
			miss++
			continue
		}
		ua, ub := a.used.Clone(), b.used.Clone()
		ua.Sub(rx)
		ua.Add(ry)
		ub.Sub(ry)
		ub.Add(rx)
		if fill(a, ua) < 0 || fill(b, ub) > 0 {
			// Past balance: a smaller pair may still fit.
			if heavy(x) < -heavy(y) {
				j++
			} else {
				i++
			}
			miss++
			continue
		}
		if sv.swap(x, a, y, b, traceAt, out) {
			sv.trace[traceAt[x]].bin = b.id
			sv.trace[traceAt[y]].bin = a.id
			swapped = true
			i++
			j++
			continue
		}
		i++
		miss++
	}
	return swapped
}

// swap moves pod x from claim a to b and pod y from b to a, both or
// neither, and reports whether it did.
func (sv *solver) swap(x int32, a *bin, y int32, b *bin, traceAt []int32, out *outcome) bool {
	s := sv.s
	shx, shy := sv.shapeOf[x], sv.shapeOf[y]
	ax, by := slices.Index(a.pods, x), slices.Index(b.pods, y)
	s.detach(shx, a, ax)
	s.detach(shy, b, by)
	undo := func() {
		s.attach(shy, b, y, by)
		s.attach(shx, a, x, ax)
	}
	defer sv.current(-1)
	sv.current(x)
	if !sv.mayCount(shx, a, b, true) || !sv.fitsKeeping(shx, a.dom, b, out) || len(out.pins) > 0 || out.cand != b.cand {
		undo()
		return false
	}
	s.commit(shx.variants[0], b, out, x)
	sv.current(y)
	if !sv.mayCount(shy, b, a, true) || !sv.fitsKeeping(shy, b.dom, a, out) || len(out.pins) > 0 || out.cand != a.cand {
		s.detach(shx, b, len(b.pods)-1)
		undo()
		return false
	}
	s.commit(shy.variants[0], a, out, y)
	sv.binOf[x], sv.binOf[y] = b.id, a.id
	return true
}

// moveList is the movable pods of one shape on claims that share their
// domains on every key but the hostname.
type moveList struct {
	dom  []int32
	pods []int32
	head int // pods before head have moved
}

// sameDomainsExact reports whether two claims' domains agree on every key
// but the hostname.
func sameDomainsExact(s *state, a, b []int32) bool {
	for k := range s.keys {
		if k != s.hostKey && a[k] != b[k] {
			return false
		}
	}
	return true
}

// sameDomainsAs is sameDomains for a source with domains dom.
func sameDomainsAs(s *state, dom []int32, t *bin) bool {
	for k := range s.keys {
		if k != s.hostKey && t.dom[k] != domUnpinned && t.dom[k] != dom[k] {
			return false
		}
	}
	return true
}

// sameDomains reports whether target t is in every domain of src on the keys
// other than the hostname, or not yet pinned on them.
func sameDomains(s *state, src, t *bin) bool {
	for k := range s.keys {
		if k != s.hostKey && t.dom[k] != domUnpinned && t.dom[k] != src.dom[k] {
			return false
		}
	}
	return true
}

// move puts pod pi from claim src on claim t when the rules of improve
// allow it, and reports whether it did; otherwise src is as it was.
func (sv *solver) move(pi int32, src, t *bin, out *outcome) bool {
	s := sv.s
	sh := sv.shapeOf[pi]
	if !sv.mayCount(sh, src, t, false) {
		return false
	}
	at := slices.Index(src.pods, pi)
	s.detach(sh, src, at)
	sv.current(pi)
	defer sv.current(-1)
	if !sv.fitsKeeping(sh, src.dom, t, out) {
		s.attach(sh, src, pi, at)
		return false
	}
	s.commit(sh.variants[0], t, out, pi)
	sv.binOf[pi] = t.id
	return true
}

// mayCount reports whether the groups that count a pod of sh see no
// difference between src and t that a move could break: no hostname spread
// constraint counts a pod on t, and every spread constraint finds both
// eligible or both not.
//
// For a swap, a hostname spread constraint may count pods on t: the check
// of the moved pod on t (laterOwnersAllow) keeps the constraints of the
// pods on t created after it, and those created before it never see it
// (the scheduler checks a constraint only when it binds the pod that owns
// it).
func (sv *solver) mayCount(sh *shape, src, t *bin, swap bool) bool {
	s := sv.s
	for _, g := range sh.matchedBy {
		if g.key == s.hostKey && g.kind == gSpread && g.count(t.dom[s.hostKey]) > 0 && !swap {
			return false
		}
		if g.kind == gSpread && s.eligible(g, src) != s.eligible(g, t) {
			return false
		}
	}
	return true
}

// fitsKeeping checks a pod of sh, taken off a claim with domains dom, on
// claim t: it must pass the same check as a first placement, fit t's
// current type, and keep its domains on every key but the hostname.
func (sv *solver) fitsKeeping(sh *shape, dom []int32, t *bin, out *outcome) bool {
	s := sv.s
	// Where the target has no domain yet, it may take only the source's:
	// the pod keeps its domains.
	s.pinTo = dom
	s.check(sh.variants[0], t, out)
	s.pinTo = nil
	if out.code != okCode || out.cheap != t.cheap {
		return false
	}
	for k := range s.keys {
		if k == s.hostKey {
			continue
		}
		d := t.dom[k]
		for _, p := range out.pins {
			if p.key == k {
				d = s.domain(k, p.val)
			}
		}
		if d != dom[k] {
			return false
		}
	}
	return true
}

// detach takes the pod at position at of claim b off it: the inverse of
// state.commit, except that the claim keeps its type and candidates.
func (s *state) detach(sh *shape, b *bin, at int) {
	b.pods = slices.Delete(b.pods, at, at+1)
	if s.hostOwner(sh) {
		b.hostOwners--
	}
	b.used.Sub(sh.req)
	b.npods--
	for _, hp := range sh.ports {
		if i := slices.Index(b.ports, hp); i >= 0 {
			b.ports = slices.Delete(b.ports, i, i+1)
		}
	}
	s.recount(sh, b, -1)
}

// attach puts pod pi back at position at of claim b, undoing detach.
func (s *state) attach(sh *shape, b *bin, pi int32, at int) {
	b.pods = slices.Insert(b.pods, at, pi)
	if s.hostOwner(sh) {
		b.hostOwners++
	}
	b.used.Add(sh.req)
	b.npods++
	b.ports = append(b.ports, sh.ports...)
	s.recount(sh, b, 1)
}

// recount adds n to the counts of the groups that count a pod of sh on b,
// as state.commit does for n = 1.
func (s *state) recount(sh *shape, b *bin, n int32) {
	for _, g := range sh.matchedBy {
		d := b.dom[g.key]
		if d < 0 || g.kind == gSpread && !s.eligible(g, b) {
			continue
		}
		g.inc(d, n)
	}
	for _, g := range sh.ownsAnti {
		if d := b.dom[g.key]; d >= 0 {
			g.inc(d, n)
		}
	}
}

// shrink moves every claim to the cheapest of its types that holds its pods,
// drops the claims left without pods, and renumbers the rest so that claim
// i is bin len(existing)+i again.
func (sv *solver) shrink() {
	s := sv.s
	kept := sv.claims[:0]
	for _, id := range sv.claims {
		b := s.bins[id]
		p := b.pool
		if len(b.pods) == 0 {
			if len(p.limited) > 0 {
				p.rem.Add(p.cap[b.cheap])
			}
			if p.nodeLimit {
				p.limNodes++
			}
			continue
		}
		kept = append(kept, id)
		if p.minv != nil {
			continue
		}
		for _, i := range b.cand.frontier() {
			if int(i) >= b.cheap {
				break
			}
			if b.used.Fits(p.eff[i]) {
				delta := p.cap[i].Clone()
				delta.Sub(p.cap[b.cheap])
				p.charge(delta, false)
				b.cheap = int(i)
				break
			}
		}
	}
	sv.claims = kept
	if len(kept) == 0 || kept[len(kept)-1] == kept[0]+len(kept)-1 {
		return
	}
	base := kept[0]
	for _, id := range kept {
		if id < base {
			base = id
		}
	}
	renum := map[int]int{}
	for i, id := range kept {
		renum[id] = base + i
	}
	bins := s.bins[:base]
	for i, id := range kept {
		b := s.bins[id]
		b.id = base + i
		bins = append(bins, b)
	}
	s.bins = bins
	for i, id := range kept {
		sv.claims[i] = renum[id]
	}
	for pi, id := range sv.binOf {
		if n, ok := renum[id]; ok {
			sv.binOf[pi] = n
		}
	}
	for i := range sv.trace {
		if n, ok := renum[sv.trace[i].bin]; ok {
			sv.trace[i].bin = n
		}
	}
	// Eligibility is cached by bin id.
	for _, g := range s.groups {
		g.elig = nil
	}
}
