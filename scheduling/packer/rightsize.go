package packer

import (
	"slices"

	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// rightSize splits claims whose pods fit on two nodes for less than the one
// they were packed onto. First fit grows a claim while the next pod still fits
// a larger type; it cannot know how many pods are still to come, so the last
// few may tip a claim onto a large type that they fill only partly, where a
// second small node would have been cheaper (ten 500m pods: one 8-vCPU node
// at twice the price of a 4-vCPU node for seven of them and a 2-vCPU node
// for three).
//
// Only splits that no constraint can object to are made: both halves keep
// the claim's zone and other pins, so zone counts are unchanged, and claims
// holding a pod with a required pod-affinity term on the hostname key are
// left whole, since it may need its partners on the same node. Separating
// pods never breaks anti-affinity or hostname spread.
func (sv *solver) rightSize() {
	s := sv.s
	for ci := 0; ci < len(sv.claims); ci++ {
		b := s.bins[sv.claims[ci]]
		if len(b.pods) < 2 || !sv.splittable(b) {
			continue
		}
		keep, move, typeKeep, typeMove, ok := sv.bestSplit(b)
		if !ok {
			continue
		}
		p := b.pool
		if p.minv != nil && !sv.coversMinValues(b.cand, b.mvMin, keep, move) {
			continue
		}
		delta := p.cap[typeKeep].Clone()
		delta.Add(p.cap[typeMove])
		delta.Sub(p.cap[b.cheap])
		if _, _, allowed := p.limitAllows(delta, true); !allowed {
			continue
		}
		p.charge(delta, true)

		nb := s.newClaimBin(p, b.cand)
		for k := range s.keys {
			if k != s.hostKey {
				nb.dom[k] = b.dom[k]
			}
		}
		sv.claims = append(sv.claims, nb.id)
		nb.mvMin = b.mvMin
		b.cheap, nb.cheap = typeKeep, typeMove
		b.pods, nb.pods = keep, move
		b.used, b.ports, b.npods = sv.usage(keep)
		nb.used, nb.ports, nb.npods = sv.usage(move)
		b.hostOwners, nb.hostOwners = sv.hostOwners(keep), sv.hostOwners(move)
		for _, pi := range move {
			sv.binOf[pi] = nb.id
		}
		for i := range sv.trace {
			if sv.binOf[sv.trace[i].pod] == nb.id {
				sv.trace[i].bin = nb.id
			}
		}
	}
}

// splittable reports whether the claim's pods may be spread over two nodes.
func (sv *solver) splittable(b *bin) bool {
	for _, pi := range b.pods {
		for _, g := range sv.shapeOf[pi].aff {
			if g.key == sv.s.hostKey {
				return false
			}
		}
	}
	return true
}

// bestSplit finds the cheapest way to put the claim's pods on two nodes: the
// first takes the pods, in placement order, that fit a type cheaper than the
// claim's (each undominated one is tried); the second the rest, on the
// cheapest type that holds them. ok is false when no split is cheaper than
// the claim.
func (sv *solver) bestSplit(b *bin) (keep, move []int32, typeKeep, typeMove int, ok bool) {
	c := b.cand
	eff := b.pool.eff
	current := c.priceOf(b.cheap)
	front := c.frontier()
	best := current * (1 - 1e-9)
	// k and m are scratch, kept between calls; a split that wins is copied
	// out of them.
	k, m := sv.splitKeep[:0], sv.splitMove[:0]
	defer func() { sv.splitKeep, sv.splitMove = k, m }()
	for _, ft := range front {
		t := int(ft)
		if c.priceOf(t) >= current {
			break
		}
		var usedKeep, usedMove resources.Vector
		k, m = k[:0], m[:0]
		for _, pi := range b.pods {
			req := sv.shapeOf[pi].req
			next := usedKeep.Clone()
			next.Add(req)
			if next.Fits(eff[t]) {
				usedKeep = next
				k = append(k, pi)
				continue
			}
			usedMove.Add(req)
			m = append(m, pi)
		}
		if len(k) == 0 || len(m) == 0 {
			continue
		}
		tm := -1
		for _, i := range front {
			if usedMove.Fits(eff[i]) {
				tm = int(i)
				break
			}
		}
		if tm < 0 {
			continue
		}
		if cost := c.priceOf(t) + c.priceOf(tm); cost < best {
			best, keep, move, typeKeep, typeMove, ok = cost, slices.Clone(k), slices.Clone(m), t, tm, true
		}
	}
	return keep, move, typeKeep, typeMove, ok
}

// coversMinValues reports whether a node for each group of pods would
// still list enough instance types for the pool's minValues. Fewer pods fit
// at least the types that all of them did, so this holds whenever the
// claim did; it is checked all the same, as the split must never break it.
// A relaxed claim's halves keep its minValues, mins.
func (sv *solver) coversMinValues(c *candSet, mins []int, groups ...[]int32) bool {
	for _, g := range groups {
		used, _, _ := sv.usage(g)
		if sv.s.minValuesShortAt(c, used, mins) != nil {
			return false
		}
	}
	return true
}

// usage sums what pods request on a node, and the host ports they bind.
func (sv *solver) usage(pods []int32) (resources.Vector, []hostPort, int) {
	var used resources.Vector
	var ports []hostPort
	for _, pi := range pods {
		sh := sv.shapeOf[pi]
		used.Add(sh.req)
		ports = append(ports, sh.ports...)
	}
	return used, ports, len(pods)
}

// hostOwners counts the pods that carry a required hostname spread
// constraint.
func (sv *solver) hostOwners(pods []int32) int {
	n := 0
	for _, pi := range pods {
		if sv.s.hostOwner(sv.shapeOf[pi]) {
			n++
		}
	}
	return n
}
