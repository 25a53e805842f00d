package packer

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
)

// The packer places pods in an order of its own (those that need a node
// apart first, then the largest), but kube-scheduler binds them in the
// order it takes them from its queue: higher priority first, then by
// creation. Two kinds of constraint depend on that order, because
// kube-scheduler checks them against the pods already bound when it binds
// the pod that carries them and never again:
//
//   - a required topology spread constraint over zones (or any key but the
//     hostname) counts pods per domain, so whether a pod may join a zone
//     depends on which pods created before it are there; a plan whose zones
//     are balanced in the end can still break the constraint of every pod
//     created early, if the pods created first all sit in one zone;
//   - a required spread constraint over hostnames counts the pods on the
//     node, so a pod the packer places on a node after the owner of such a
//     constraint counts against it when it was created before the owner.
//
// The packer keeps both in creation order. For zones, fixDomains decides the
// domain of every pod such a constraint counts or carries before packing,
// by walking the pods in creation order and checking each constraint
// against the pods before it, as kube-scheduler will; the pods are then
// packed with their domains fixed, much like pods whose volumes pin their
// zone.
// For hostnames, check refuses to put a pod on a node where it would
// count against the constraint of a pod created after it (laterOwnersAllow).
// The plan therefore holds when its pods are bound in creation order.

// podOrder is the creation order of the pods of one packing, as check needs
// it.
type podOrder struct {
	// rank is each pod's place in creation order, by pod index.
	rank []int32
	// shapeOf is each pod's shape, by pod index (the solver's slice).
	shapeOf []*shape
	// cur is the rank of the pod being checked; -1 when none is.
	cur int32
}

// creationRanks returns each pod's place in the order kube-scheduler takes
// pending pods from its queue: higher priority first, then the earlier
// creation, and among pods created in the same second (or without a
// timestamp, as in a dry run) the order of the list, which is the only
// record of which came first.
func creationRanks(pods []*corev1.Pod) []int32 {
	idx := make([]int32, len(pods))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(priorityOf(pods[b]), priorityOf(pods[a])); c != 0 {
			return c
		}
		return pods[a].CreationTimestamp.Compare(pods[b].CreationTimestamp.Time)
	})
	rank := make([]int32, len(pods))
	for r, i := range idx {
		rank[i] = int32(r)
	}
	return rank
}

func priorityOf(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// keyQuota is what fixDomains decided about the domains of key for some
// pods: left[d] more of them may go to domain d. A pod that carries a
// spread constraint has one of its own, with a single domain open; pods
// that only count share one, whose domains add up to how many of them
// there are.
type keyQuota struct {
	key  int
	left []int32 // by domain
}

// open reports whether a pod may still go to domain d.
func (q *keyQuota) open(d int32) bool {
	return d >= 0 && int(d) < len(q.left) && q.left[d] > 0
}

// fixDomains decides, in creation order, the domains on key k of the pods
// that a required spread constraint over k counts or carries, for every key
// k but the hostname that such a constraint uses (sv.fixedOf): the packer
// then places each of them only where that leaves it, and does not check
// its spread constraints over k again, as they hold by construction.
//
// Walking the pods in creation order, each pod takes a domain where every
// spread constraint it carries over k allows it, counting only the pods
// before it (and those already on nodes), as kube-scheduler will when it
// binds it; among those, the domain that the constraints it carries and
// those that count it count least, so that every constraint's domains stay
// even, then the one with the fewest pods that carry its constraints, then
// the one where the pods decided so far request least (cpu and memory, each
// as a share of what all of them request), then the first. The domain a
// constraint counts least always allows a pod that carries it, so such a
// domain exists whenever the pod can go there.
//
// A pod that carries a constraint gets the domain it took. Pods that only
// count, for the same constraints, with no pod that carries one of them
// created between them, share theirs (a keyQuota): no constraint is checked
// while they come, so only how many of them go to each domain matters, and
// the packer chooses which one goes where. Those created after the last pod
// that carries a constraint counting them share theirs too, although no
// constraint will see them, so that every constraint's domains are even in
// the end as well.
//
// A set of constraints (joined by the pods they count or that carry them)
// is left to the packer's usual placement when the domains of its pods
// cannot be decided ahead: when a constraint counts only the nodes that meet
// node requirements beyond the key itself, or honours taints, or one of its
// pods has pod affinity or anti-affinity over k, or is selected by another
// pod's. So is a set whose pods the packer places, as far as its
// constraints can tell, in creation order anyway (each pod that carries a
// constraint after exactly the pods it counts that were created before it):
// the packer's own check then sees what kube-scheduler will. A pod for which
// no domain is allowed is left to the packer too.
func (sv *solver) fixDomains(c *compiler, order []int32) {
	s := sv.s
	sv.fixedOf = make([][]*keyQuota, len(sv.pods))
	pos := make([]int32, len(sv.pods))
	for i, pi := range order {
		pos[pi] = int32(i)
	}
	// Which keys need it: those of required spread constraints, not the
	// hostname.
	var keys []int
	for _, sh := range c.list {
		for _, sc := range sh.spread {
			if sc.g.key != s.hostKey && !slices.Contains(keys, sc.g.key) {
				keys = append(keys, sc.g.key)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		sv.fixKey(c, k, pos)
	}
}

// current makes pod pi the one that check judges: its creation rank and
// what was decided about its domains; -1 for none.
func (sv *solver) current(pi int32) {
	if pi < 0 {
		sv.ord.cur, sv.s.fix = -1, nil
		return
	}
	sv.ord.cur, sv.s.fix = sv.ord.rank[pi], sv.fixedOf[pi]
}

// spreadSim counts, for one spread group over the key being decided, the
// pods bound so far in creation order, per domain.
type spreadSim struct {
	counts []int32 // by domain
	owners []int32 // pods carrying a constraint of the group, by domain
	elig   []bool  // by domain: whether the group counts pods there
	// carriers are the creation ranks of the pods that carry a
	// constraint of the group, in order.
	carriers []int32
}

// fixKey is fixDomains for key k; pos is each pod's place in the packing
// order.
func (sv *solver) fixKey(c *compiler, k int, pos []int32) {
	s := sv.s
	nd := len(s.domName[k])
	// Union-find over the groups on k that pods carry or are counted by.
	parent := map[*group]*group{}
	var find func(g *group) *group
	find = func(g *group) *group {
		if parent[g] == g {
			return g
		}
		r := find(parent[g])
		parent[g] = r
		return r
	}
	owned := map[*group]bool{}
	for _, sh := range c.list {
		for _, sc := range sh.spread {
			if sc.g.key == k {
				owned[sc.g] = true
				parent[sc.g] = sc.g
			}
		}
	}
	// Groups some pod's affinity or anti-affinity reads.
	read := map[*group]bool{}
	for _, sh := range c.list {
		for _, g := range sh.aff {
			read[g] = true
		}
		for _, g := range sh.anti {
			read[g] = true
		}
	}
	// The groups of a pod: those over k it carries and those that count it.
	groupsMemo := map[*shape][]*group{}
	groupsOf := func(sh *shape) []*group {
		if gs, ok := groupsMemo[sh]; ok {
			return gs
		}
		var out []*group
		for _, sc := range sh.spread {
			if sc.g.key == k {
				out = append(out, sc.g)
			}
		}
		for _, g := range sh.matchedBy {
			if owned[g] && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
		groupsMemo[sh] = out
		return out
	}
	carries := func(sh *shape) bool {
		return slices.ContainsFunc(sh.spread, func(sc spreadC) bool { return sc.g.key == k })
	}
	bad := map[*group]bool{}
	for _, sh := range c.list {
		gs := groupsOf(sh)
		if len(gs) == 0 {
			continue
		}
		for _, g := range gs[1:] {
			if ra, rb := find(gs[0]), find(g); ra != rb {
				parent[rb] = ra
			}
		}
		if sv.entangled(sh, k, read) {
			bad[gs[0]] = true
		}
		for _, g := range gs {
			if !s.simpleGroup(g, k) {
				bad[g] = true
			}
		}
	}
	badRoot := map[*group]bool{}
	for g := range bad {
		badRoot[find(g)] = true
	}
	rank := sv.ord.rank
	var pods []int32
	carriersOf := map[*group][]int32{}
	countedOf := map[*group][]int32{}
	for pi, sh := range sv.shapeOf {
		gs := groupsOf(sh)
		if len(gs) == 0 || badRoot[find(gs[0])] {
			continue
		}
		pods = append(pods, int32(pi))
		for _, sc := range sh.spread {
			if sc.g.key == k {
				carriersOf[sc.g] = append(carriersOf[sc.g], int32(pi))
			}
		}
		for _, g := range sh.matchedBy {
			if owned[g] {
				countedOf[g] = append(countedOf[g], int32(pi))
			}
		}
	}
	// Where the packer places, for every constraint, the pods it counts
	// before or after the pods that carry it just as they were created,
	// its own check sees what kube-scheduler will: nothing to decide.
	agree := map[*group]bool{}
	for g, cs := range carriersOf {
		if !inOrder(cs, countedOf[g], rank, pos) {
			agree[find(g)] = false
		} else if _, seen := agree[find(g)]; !seen {
			agree[find(g)] = true
		}
	}
	pods = slices.DeleteFunc(pods, func(pi int32) bool { return agree[find(groupsOf(sv.shapeOf[pi])[0])] })
	if len(pods) == 0 {
		return
	}
	slices.SortFunc(pods, func(a, b int32) int { return cmp.Compare(rank[a], rank[b]) })

	sims := map[*group]*spreadSim{}
	simOf := func(g *group) *spreadSim {
		if sim, ok := sims[g]; ok {
			return sim
		}
		sim := &spreadSim{counts: make([]int32, nd), owners: make([]int32, nd), elig: make([]bool, nd)}
		for d := range nd {
			sim.counts[d] = g.count(int32(d))
			sim.elig[d] = s.eligibleDomain(g, k, int32(d))
		}
		sims[g] = sim
		return sim
	}
	for _, pi := range pods {
		for _, sc := range sv.shapeOf[pi].spread {
			if sc.g.key == k {
				sim := simOf(sc.g)
				sim.carriers = append(sim.carriers, rank[pi])
			}
		}
	}
	// next is the first pod after rank r that carries a constraint of one
	// of gs, or -1.
	next := func(gs []*group, r int32) int32 {
		first := int32(-1)
		for _, g := range gs {
			cs := simOf(g).carriers
			if i, _ := slices.BinarySearch(cs, r+1); i < len(cs) && (first < 0 || cs[i] < first) {
				first = cs[i]
			}
		}
		return first
	}
	// Pods that only count share a quota while they count for the same
	// groups, can go to the same domains and come before the same next
	// carrier (or after the last).
	type classKey struct {
		groupsReach string
		next        int32
	}
	classes := map[classKey]*keyQuota{}
	// The quotas, their domains and the pods' lists of them come from
	// slabs, one allocation each instead of one per pod.
	quotas := make([]keyQuota, 0, len(pods))
	lefts := make([]int32, 0, len(pods)*nd)
	refs := make([]*keyQuota, 0, len(pods))
	newQuota := func() *keyQuota {
		quotas = append(quotas, keyQuota{key: k, left: lefts[len(lefts) : len(lefts)+nd : len(lefts)+nd]})
		lefts = lefts[:len(lefts)+nd]
		return &quotas[len(quotas)-1]
	}
	give := func(pi int32, q *keyQuota) {
		if len(sv.fixedOf[pi]) > 0 {
			sv.fixedOf[pi] = append(sv.fixedOf[pi], q) // a second key: rare
			return
		}
		refs = append(refs, q)
		sv.fixedOf[pi] = refs[len(refs)-1 : len(refs) : len(refs)]
	}
	// What the pods decided so far request, by domain: cpu and memory as
	// shares of what all of them request.
	total := make([]float64, nd)
	sumCPU, sumMem := 1.0, 1.0
	for _, pi := range pods {
		sumCPU += float64(sv.shapeOf[pi].req.CPU)
		sumMem += float64(sv.shapeOf[pi].req.Memory)
	}
	// Per shape: the domains its pods can reach, and the groups and
	// domains part of its quotas' key.
	type reachOf struct {
		ok  []bool
		key string
	}
	reach := map[*shape]reachOf{}
	for _, pi := range pods {
		sh := sv.shapeOf[pi]
		r, seen := reach[sh]
		if !seen {
			r.ok = sv.reachable(sh, k)
			r.key = groupIDs(groupsOf(sh)) + fmt.Sprint(r.ok)
			reach[sh] = r
		}
		ok := r.ok
		best, bestScore, bestOwners := int32(-1), int64(0), int64(0)
		for d := range nd {
			dd := int32(d)
			if !ok[d] {
				continue
			}
			allowed := true
			var score, owners int64
			for _, sc := range sh.spread {
				if sc.g.key != k {
					continue
				}
				sim := simOf(sc.g)
				if !sim.elig[d] || sim.counts[d]+sc.self-s.simMin(&sc, sim) > sc.maxSkew {
					allowed = false
					break
				}
				score += int64(sim.counts[d])
				owners += int64(sim.owners[d])
			}
			if !allowed {
				continue
			}
			for _, g := range sh.matchedBy {
				if owned[g] {
					score += int64(simOf(g).counts[d])
				}
			}
			if best < 0 || score < bestScore || score == bestScore && sv.tieGoesTo(dd, best, owners, bestOwners, total) {
				best, bestScore, bestOwners = dd, score, owners
			}
		}
		if best < 0 {
			continue // kube-scheduler would not bind it now either; leave it to the packer
		}
		gs := groupsOf(sh)
		switch nx := next(gs, rank[pi]); {
		case carries(sh):
			q := newQuota()
			q.left[best] = 1
			give(pi, q)
		default:
			ck := classKey{groupsReach: r.key, next: nx}
			q, seen := classes[ck]
			if !seen {
				q = newQuota()
				classes[ck] = q
			}
			q.left[best]++
			give(pi, q)
		}
		total[best] += float64(sh.req.CPU)/sumCPU + float64(sh.req.Memory)/sumMem
		for _, g := range sh.matchedBy {
			if owned[g] {
				if sim := simOf(g); sim.elig[best] {
					sim.counts[best]++
				}
			}
		}
		for _, sc := range sh.spread {
			if sc.g.key == k {
				simOf(sc.g).owners[best]++
			}
		}
	}
}

// tieGoesTo reports whether domain d, where the pods placed so far that
// carry the constraints number owners, beats best (bestOwners) for a pod
// whose constraints count as many pods in both; total is what the pods
// decided so far request in each domain. See Input.CompactSpread.
func (sv *solver) tieGoesTo(d, best int32, owners, bestOwners int64, total []float64) bool {
	if sv.in.CompactSpread && total[d] != total[best] {
		return total[d] > total[best]
	}
	return owners < bestOwners || owners == bestOwners && total[d] < total[best]
}

// inOrder reports whether the packing order (pos) puts every pod of counted
// before or after every pod of carriers just as the creation order (rank)
// does.
func inOrder(carriers, counted []int32, rank, pos []int32) bool {
	byRank := slices.Clone(counted)
	slices.SortFunc(byRank, func(a, b int32) int { return cmp.Compare(rank[a], rank[b]) })
	// Over the counted pods in creation order: the latest placement of
	// those before each rank, and the earliest of those after.
	n := len(byRank)
	latest, earliest := make([]int32, n+1), make([]int32, n+1)
	latest[0] = -1
	for i, pi := range byRank {
		latest[i+1] = max(latest[i], pos[pi])
	}
	earliest[n] = int32(len(pos))
	for i := n - 1; i >= 0; i-- {
		earliest[i] = min(earliest[i+1], pos[byRank[i]])
	}
	for _, x := range carriers {
		i, _ := slices.BinarySearchFunc(byRank, rank[x], func(pi, r int32) int { return cmp.Compare(rank[pi], r) })
		// byRank[:i] were created before x; byRank[i] may be x itself.
		j := i
		if j < n && byRank[j] == x {
			j++
		}
		if latest[i] > pos[x] || earliest[j] < pos[x] {
			return false
		}
	}
	return true
}

// groupIDs names a set of groups.
func groupIDs(gs []*group) string {
	ids := make([]int, len(gs))
	for i, g := range gs {
		ids[i] = g.id
	}
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// simMin is spreadMin over the counts of a simulation.
func (s *state) simMin(c *spreadC, sim *spreadSim) int32 {
	g := c.g
	if int32(g.nreg) < c.minDomains {
		return 0
	}
	low := int32(-1)
	for d, ok := range g.reg {
		if !ok {
			continue
		}
		if n := sim.counts[d]; low < 0 || n < low {
			low = n
		}
	}
	return max(low, 0)
}

// simpleGroup reports whether which nodes spread group g counts depends on
// nothing but their domain of key k, so that a pod's domain says whether it
// counts: g does not honour taints, and the node requirements it honours
// (its owner's node affinity) constrain key k alone.
func (s *state) simpleGroup(g *group, k int) bool {
	if g.honorTaints || g.nodeAff != nil {
		return false
	}
	for _, kk := range g.keys {
		if kk != k && kk != s.hostKey {
			return false
		}
	}
	if !g.honorAff {
		return true
	}
	for _, a := range g.affAlts {
		for r := range a.All() {
			if r.Key() != s.keys[k] {
				return false
			}
		}
	}
	return true
}

// eligibleDomain reports whether simple group g counts pods on nodes in
// domain d of key k.
func (s *state) eligibleDomain(g *group, k int, d int32) bool {
	if !g.honorAff {
		return true
	}
	val := s.domName[k][d]
	for _, a := range g.affAlts {
		if r, ok := a.Get(s.keys[k]); !ok || r.Allows(val) {
			return true
		}
	}
	return false
}

// entangled reports whether where a pod of sh goes on key k matters to more
// than spread: it has pod affinity or anti-affinity over k, an existing
// pod's anti-affinity over k selects it, or another pod's affinity or
// anti-affinity (read) counts it.
func (sv *solver) entangled(sh *shape, k int, read map[*group]bool) bool {
	for _, g := range sh.aff {
		if g.key == k {
			return true
		}
	}
	for _, g := range sh.anti {
		if g.key == k {
			return true
		}
	}
	for _, g := range sh.forbidden {
		if g.key == k {
			return true
		}
	}
	for _, g := range sh.matchedBy {
		if g.key == k && read[g] {
			return true
		}
	}
	for _, p := range sh.prefs {
		if p.kind == prefPodAffinity || p.kind == prefPodAntiAffinity {
			if p.g.key == k {
				return true
			}
		}
	}
	return false
}

// reachable returns, by domain of key k, whether a pod of sh can be placed
// there: on an existing node of that domain that its requirements and
// tolerations admit, or on a new node of a pool that admits it and has an
// instance type there that holds it.
func (sv *solver) reachable(sh *shape, k int) []bool {
	s := sv.s
	out := make([]bool, len(s.domName[k]))
	v := sh.variants[len(sh.variants)-1]
	for _, id := range sv.existing {
		b := s.bins[id]
		d := b.dom[k]
		if d < 0 || out[d] || b.unsched {
			continue
		}
		if ok, _ := taints.ToleratesAll(v.tols, b.taints, v.effects); ok && s.matchesAlts(b, v.alts) {
			out[d] = true
		}
	}
	for _, p := range sv.poolsOrd {
		for cs := range p.candidates(v) {
			for _, val := range s.domainsFor(p, k) {
				d := s.domain(k, val)
				if int(d) >= len(out) || out[d] {
					continue
				}
				if cs.withPin(s, k, val).cheapestFit(0, resources.Vector{}, sh) >= 0 {
					out[d] = true
				}
			}
		}
	}
	return out
}

// laterOwnersAllow reports whether the pod being checked (s.ord.cur) may
// join bin b without breaking the required hostname spread constraint of a
// pod on b created after it. kube-scheduler checks that constraint when it
// binds its owner, against the pods bound on the node by then, which
// include this one: the pods on b that the constraint counts and that were
// created before its owner, this one among them, may number at most its
// maxSkew (less one when the owner counts itself) over a minimum of 0, as
// the packer opens fresh nodes.
//
// A bin it refuses is left to the pods of sh for good: the owner's count
// only grows, so no pod created before the owner fits later either. One
// created after the owner would, but a refusal that may change makes first
// fit check the bin again for every pod of sh (see scan), which at 20,000
// pods on the catalog took 40% more checks.
func (s *state) laterOwnersAllow(sh *shape, b *bin) bool {
	o := s.ord
	for _, pi := range b.pods {
		if o.rank[pi] < o.cur {
			continue
		}
		for i := range o.shapeOf[pi].spread {
			c := &o.shapeOf[pi].spread[i]
			if c.g.key != s.hostKey || !countedBy(sh, c.g) {
				continue
			}
			n := int32(1)
			if !b.claim && s.eligible(c.g, b) {
				n += s.selected(c.g, b)
			}
			for _, q := range b.pods {
				if o.rank[q] < o.rank[pi] && countedBy(o.shapeOf[q], c.g) {
					n++
				}
			}
			if n+c.self > c.maxSkew {
				return false
			}
		}
	}
	return true
}

// countedBy reports whether group g counts pods of sh.
func countedBy(sh *shape, g *group) bool {
	return slices.Contains(sh.matchedBy, g)
}

// hostOwner reports whether sh carries a required hostname spread
// constraint.
func (s *state) hostOwner(sh *shape) bool {
	for _, c := range sh.spread {
		if c.g.key == s.hostKey {
			return true
		}
	}
	return false
}

// countedBefore counts the pods on b that g counts and that were created
// before rank r: those on the node before the packing, and those the
// packer put there.
func (s *state) countedBefore(g *group, b *bin, r int32) int32 {
	o := s.ord
	var n int32
	if !b.claim && s.eligible(g, b) {
		n += s.selected(g, b)
	}
	for _, q := range b.pods {
		if o.rank[q] < r && countedBy(o.shapeOf[q], g) {
			n++
		}
	}
	return n
}
