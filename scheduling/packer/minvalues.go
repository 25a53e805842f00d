package packer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// minValue is one requirement of a NodePool with minValues: the instance
// types a NodeClaim of the pool lists must, between them, carry at least min
// distinct values of key (Karpenter's Strict policy).
type minValue struct {
	key string
	min int
	n   int       // distinct values among the pool's types
	of  [][]int32 // per type, in pool order: ids of the values it carries
}

// mvShort says which minValues a set of instance types falls short of.
type mvShort struct {
	k    int // index in the pool's minv
	key  string
	min  int
	have int
	cap  int // > 0 when the values exist but not within this many types
}

func (m *mvShort) message() string {
	if m.cap > 0 {
		return fmt.Sprintf("requirement %s has minValues %d, but the %d instance types a NodeClaim may list carry only %d distinct values", m.key, m.min, m.cap, m.have)
	}
	return fmt.Sprintf("requirement %s has minValues %d, but the instance types that fit the pod carry only %d distinct values", m.key, m.min, m.have)
}

// indexMinValues records the pool's minValues requirements with each
// type's values for their keys; p.minv stays nil when there are none, so
// that the packer skips the check entirely.
func (p *poolIdx) indexMinValues() {
	for r := range p.np.Requirements.All() {
		n, ok := r.MinValues()
		if !ok || n <= 0 {
			continue
		}
		m := minValue{key: r.Key(), min: n, of: make([][]int32, len(p.types))}
		ids := map[string]int32{}
		for i, it := range p.types {
			tr, ok := it.Requirements.Get(m.key)
			if !ok || !tr.Finite() {
				continue
			}
			for v := range tr.Values() {
				id, seen := ids[v]
				if !seen {
					id = int32(len(ids))
					ids[v] = id
				}
				m.of[i] = append(m.of[i], id)
			}
		}
		m.n = len(ids)
		p.minv = append(p.minv, m)
	}
}

// coverMinValues chooses, from list (type indices in the order they are
// preferred), at most maxTypes types covering every minValues of the pool:
// first, in order, each type that brings a value some key still lacks; then
// the rest in order until maxTypes. The chosen types are returned in list's
// order, appended to buf. When the types cannot cover them, short says
// which key falls short and chosen is nil. mins, when not nil, replaces the
// pool's minValues key by key (a claim whose minValues were relaxed).
func (p *poolIdx) coverMinValues(list []int, maxTypes int, buf []int, mins []int) (chosen []int, short *mvShort) {
	if len(p.minv) == 0 {
		if len(list) > maxTypes {
			list = list[:maxTypes]
		}
		return append(buf, list...), nil
	}
	for len(p.mvSeen) < len(p.minv) {
		p.mvSeen = append(p.mvSeen, nil)
	}
	need := func(k int) int {
		if mins != nil {
			return mins[k]
		}
		return p.minv[k].min
	}
	count := make([]int, len(p.minv))
	reset := func() {
		for k := range p.minv {
			if len(p.mvSeen[k]) < p.minv[k].n {
				p.mvSeen[k] = make([]bool, p.minv[k].n)
			}
			clear(p.mvSeen[k])
			count[k] = 0
		}
	}
	take := func(i int) bool {
		brings := false
		for k := range p.minv {
			for _, v := range p.minv[k].of[i] {
				if !p.mvSeen[k][v] {
					p.mvSeen[k][v] = true
					count[k]++
					brings = true
				}
			}
		}
		return brings
	}
	// Distinct values among all of list.
	reset()
	for _, i := range list {
		take(i)
	}
	for k, m := range p.minv {
		if count[k] < need(k) {
			return nil, &mvShort{k: k, key: m.key, min: need(k), have: count[k]}
		}
	}
	if len(list) <= maxTypes {
		return append(buf, list...), nil
	}
	// Too many types: keep the first that bring missing values, then the
	// first of the rest.
	reset()
	picked := make([]bool, len(list))
	npicked := 0
	for j, i := range list {
		lacking := -1
		for k, m := range p.minv {
			if count[k] >= need(k) {
				continue
			}
			for _, v := range m.of[i] {
				if !p.mvSeen[k][v] && lacking < 0 {
					lacking = k
				}
			}
		}
		if lacking < 0 {
			continue
		}
		if npicked == maxTypes {
			m := p.minv[lacking]
			return nil, &mvShort{k: lacking, key: m.key, min: need(lacking), have: count[lacking], cap: maxTypes}
		}
		take(i)
		picked[j] = true
		npicked++
	}
	for j := range list {
		if !picked[j] && npicked < maxTypes {
			picked[j] = true
			npicked++
		}
	}
	chosen = buf
	for j, i := range list {
		if picked[j] {
			chosen = append(chosen, i)
		}
	}
	return chosen, nil
}

// minValuesShort reports whether the instance types of c that would fit
// used plus sh's requests, as the NodeClaim would list them, fall short of
// a minValues of the pool (or of mins, when the claim's were relaxed); nil
// when they do not (or the pool has none).
func (s *state) minValuesShort(c *candSet, used resources.Vector, sh *shape, mins []int) *mvShort {
	p := c.pool
	if p.minv == nil {
		return nil
	}
	total := used.Clone()
	total.Add(sh.req)
	return s.minValuesShortAt(c, total, mins)
}

// minValuesShortAt is minValuesShort for a node requesting total.
func (s *state) minValuesShortAt(c *candSet, total resources.Vector, mins []int) *mvShort {
	p := c.pool
	if p.minv == nil {
		return nil
	}
	list := s.fittingTypes(c, total)
	chosen, short := p.coverMinValues(list, s.maxTypes, p.mvBuf[:0], mins)
	p.mvBuf = chosen
	return short
}

// fittingTypes lists the types of c that fit total and have an offering,
// in the order a NodeClaim lists them once there are more than it may
// list. The slice is the pool's scratch, valid until the next call.
func (s *state) fittingTypes(c *candSet, total resources.Vector) []int {
	p := c.pool
	list := p.mvList[:0]
	for i := c.first; i < len(p.types); i++ {
		if !c.has(i) || !total.Fits(p.eff[i]) || math.IsInf(c.priceOf(i), 1) {
			continue
		}
		list = append(list, i)
	}
	p.mvList = list
	if len(list) > s.maxTypes {
		sortByOffer(p, c, list)
	}
	return list
}

// relaxMinValues is the BestEffort policy: the minValues a new claim of
// c's pool, requesting total, can have. Like Karpenter, each key that the
// fitting types fall short on is lowered to the number of distinct values
// they carry, and only those keys; the others keep the pool's. Where the
// values exist but not within the maxTypes types a NodeClaim may list, the
// key is lowered to what the types chosen within that cap carry, so that
// the NodeClaim's types always meet the minValues it records. It returns
// nil when nothing needs relaxing, otherwise the minValues per key of the
// pool's minv (0 for a key none of the types defines).
func (s *state) relaxMinValues(c *candSet, total resources.Vector) []int {
	p := c.pool
	if p.minv == nil {
		return nil
	}
	list := s.fittingTypes(c, total)
	var mins []int
	for {
		chosen, short := p.coverMinValues(list, s.maxTypes, p.mvBuf[:0], mins)
		p.mvBuf = chosen
		if short == nil {
			return mins
		}
		if mins == nil {
			mins = make([]int, len(p.minv))
			for k, m := range p.minv {
				mins[k] = m.min
			}
		}
		// have < the minValues it fell short of, so this ends.
		mins[short.k] = short.have
	}
}

// sortByOffer orders type indices as a NodeClaim lists them: cheapest
// offering under c's requirements first, then by name.
func sortByOffer(p *poolIdx, c *candSet, list []int) {
	slices.SortStableFunc(list, func(a, b int) int {
		if r := cmp.Compare(c.priceOf(a), c.priceOf(b)); r != 0 {
			return r
		}
		return strings.Compare(p.types[a].Name, p.types[b].Name)
	})
}

// short reports whether the types marked in f.fit, capped at maxTypes, fall
// short of a minValues of the pool (or of mins, when relaxed).
func (f *finalizer) short(p *poolIdx, c *candSet, maxTypes int, mins []int) bool {
	list := p.mvList[:0]
	for i := c.first; i < len(p.types); i++ {
		if f.fit[i>>6]&(1<<(uint(i)&63)) != 0 && !math.IsInf(c.priceOf(i), 1) {
			list = append(list, i)
		}
	}
	p.mvList = list
	if len(list) > maxTypes {
		sortByOffer(p, c, list)
	}
	chosen, short := p.coverMinValues(list, maxTypes, p.mvBuf[:0], mins)
	p.mvBuf = chosen
	return short != nil
}
