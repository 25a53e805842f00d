package packer

import (
	"math/bits"
	"slices"
	"strconv"
)

// Resource classes let first fit share what it learns about a claim among
// the variants that would get the same answer from it on resources.
//
// First fit asks each open claim, in the order they were opened, whether it
// takes the pod; most claims say no because the pod does not fit, or would
// fit only by moving the claim to a larger type that costs more than it is
// worth (solver.worthGrowing). Each variant keeps a pointer past the claims
// that said no for good, but Karpenter's benchmark pods form thousands of
// variants, so every new variant walked every claim again: 7 million checks
// for 20,000 pods, nearly all of them that no. The variants fall into about a
// hundred classes whose answers on resources are the same, and a class keeps
// a pointer too.
//
// Two variants are in one class when a claim that needs no new topology pin
// for either one answers them alike on resources:
//   - they request the same cpu, memory, ephemeral storage and pods, and no
//     extended resource (whose fit depends on more);
//   - their node-affinity alternatives are the same, so a claim narrows its
//     instance types the same way for both;
//   - the topology keys a claim must be pinned on to take them are the same,
//     so a claim pinned on all of them for one is pinned for the other;
//   - the cheapest new claim for one pod of each costs the same and holds
//     as many, which is what worthGrowing weighs growing against.
//
// The keys a claim must be pinned on include the keys whose domains were
// decided for the pod in advance (state.fix), so the class is looked up per
// variant and the domains those decisions leave the pod. Where they leave it
// one domain (a pod that carries a spread constraint), a claim not yet in a
// domain of the key can only be pinned to that one, so its answer is the
// same for every variant of the class as well.

// classKey is what makes a resource class.
type classKey struct {
	req   [4]int64
	alts  string // the variant's alternatives by id, "" when it has none
	keys  string // the topology keys a claim is pinned on to take the pod
	alone alone
	fixed [2]fixRef
}

// classRef is a variant with the keys decided for the pod being placed and
// the domains each leaves it.
type classRef struct {
	variant    int
	fix0, fix1 fixRef
}

// fixRef is a decided key and the domains still open to the pod on it, as
// a bit set; ok is false when there are more domains than bits.
type fixRef struct {
	key  int
	open uint64
}

func refOf(q *keyQuota) (fixRef, bool) {
	r := fixRef{key: q.key}
	for d, left := range q.left {
		if left <= 0 {
			continue
		}
		if d >= 64 {
			return r, false
		}
		r.open |= 1 << d
	}
	return r, true
}

// forced reports whether the pod has one domain left on q's key.
func forced(q *keyQuota) bool {
	r, ok := refOf(q)
	return ok && bits.OnesCount64(r.open) == 1
}

// resClasses numbers the resource classes met so far.
type resClasses struct {
	ids  map[classKey]int32
	refs map[classRef]int32
}

// classOf is the resource class of variant v for the pod being placed, or -1
// when v has none (extended resources, or more decided keys than a class
// tells apart).
func (sv *solver) classOf(v *variant) int32 {
	fix := sv.s.fix
	if len(v.sh.ext) > 0 || len(fix) > 2 {
		return -1
	}
	ref := classRef{variant: v.id, fix0: fixRef{key: -1}, fix1: fixRef{key: -1}}
	for i, q := range fix {
		r, ok := refOf(q)
		if !ok {
			return -1
		}
		if i == 0 {
			ref.fix0 = r
		} else {
			ref.fix1 = r
		}
	}
	cs := &sv.classes
	if id, ok := cs.refs[ref]; ok {
		return id
	}
	key := classKey{req: scalars(v.sh.req), alone: sv.alonePlan(v), fixed: [2]fixRef{ref.fix0, ref.fix1}}
	if !v.empty {
		var b []byte
		for _, id := range v.altIDs {
			b = strconv.AppendInt(b, int64(id), 10)
			b = append(b, ',')
		}
		key.alts = string(b)
	}
	keys := slices.Concat(v.keys, v.sh.relevant)
	for _, q := range fix {
		keys = append(keys, q.key)
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range slices.Compact(keys) {
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, ',')
	}
	key.keys = string(b)
	if cs.ids == nil {
		cs.ids, cs.refs = map[classKey]int32{}, map[classRef]int32{}
	}
	id, ok := cs.ids[key]
	if !ok {
		id = int32(len(cs.ids))
		cs.ids[key] = id
	}
	cs.refs[ref] = id
	return id
}

// classWide reports whether the outcome of a check is the same for every
// variant of the pod's class: it took no pin, or only pins on decided keys
// that leave the pod one domain.
func (sv *solver) classWide(out *outcome) bool {
	for _, p := range out.pins {
		if q := sv.s.decided(p.key); q == nil || !forced(q) {
			return false
		}
	}
	return true
}

// classRejects reports whether b turns away every pod of v's class on
// resources (or node affinity), whatever else it turns v away for. A check
// stops at the first reason, and one that is v's own (its anti-affinity, a
// spread constraint) says nothing about the class: this asks what the
// class's pointer needs to know to pass b all the same. Where b would take a
// pin first, which one depends on v, so b must turn the pod away in every
// domain it could be pinned to. It answers false where it cannot tell.
func (sv *solver) classRejects(v *variant, b *bin) bool {
	s, sh := sv.s, v.sh
	cand := b.cand
	if !v.empty {
		found := false
		for i, a := range v.alts {
			if !s.matchesAlt(b, a) {
				continue
			}
			if b.claim {
				c := b.cand.withAlt(v.altIDs[i], a)
				if c.n == 0 {
					continue
				}
				cand = c
			}
			found = true
			break
		}
		if !found {
			return true
		}
	}
	if !b.claim {
		return !sumFits(b.used, sh, b.alloc)
	}
	if !quickFits(b.used, sh, cand.max) {
		return true
	}
	cands := append(sv.candScratch[:0], cand)
	for _, keys := range [3][]int{sv.fixKeys(), v.keys, sh.relevant} {
		for _, k := range keys {
			if b.dom[k] != domUnpinned {
				continue
			}
			q := s.decided(k)
			n := len(cands)
			for _, c := range cands[:n] {
				kr, hasKR := c.reqs.Get(s.keys[k])
				for _, val := range s.domainsFor(b.pool, k) {
					if hasKR && !kr.Allows(val) {
						continue
					}
					if q != nil && !q.open(s.domain(k, val)) {
						continue
					}
					if p := c.withPin(s, k, val); p.n > 0 {
						cands = append(cands, p)
					}
				}
			}
			if len(cands) == n {
				// No pin at all: the check tells why.
				sv.candScratch = cands
				return false
			}
			cands = cands[n:]
		}
	}
	sv.candScratch = cands
	for _, c := range cands {
		if !sv.rejectsOnResources(v, b, c) {
			return false
		}
	}
	return true
}

// rejectsOnResources reports whether claim b, narrowed to cand, turns away a
// pod of v: it does not fit any type left, or only one that costs more than
// growing is worth.
func (sv *solver) rejectsOnResources(v *variant, b *bin, cand *candSet) bool {
	if !quickFits(b.used, v.sh, cand.max) {
		return true
	}
	cheap := b.cheapestFit(cand, v.sh)
	if cheap < 0 {
		return true
	}
	if cheap == b.cheap {
		return false
	}
	return !sv.worthGrowing(v, b, &outcome{cand: cand, cheap: cheap})
}

// fixKeys are the keys decided for the pod being placed.
func (sv *solver) fixKeys() []int {
	keys := sv.fixScratch[:0]
	for _, q := range sv.s.fix {
		keys = append(keys, q.key)
	}
	sv.fixScratch = keys
	return keys
}
