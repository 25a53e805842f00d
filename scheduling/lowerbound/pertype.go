package lowerbound

import (
	"math"
	"slices"
)

// perTypeSweeps caps the passes of perTypeAscent over the options, and
// perTypeBudget the cost terms it may evaluate in all, so that the bound
// stays cheap next to the packing it judges whatever the catalog; both are
// counts, not times, so the result does not depend on the machine.
const (
	perTypeSweeps = 12
	perTypeBudget = 250_000_000
)

// perTypeAscent raises the per-pod bound by giving each option its own
// weights and its own rounding of shares (see the package documentation),
// starting from the shared weights w and no rounding. It is a coordinate
// ascent: for each option in turn it tries each pair of roundings (cpu,
// memory) with weights on a grid of the simplex, then a finer grid around
// the best, the other options fixed, and keeps the option's best if that
// raises the bound. Every choice gives a valid bound, so stopping anywhere
// does; the value returned is the one of the choices it holds.
func perTypeAscent(options []Option, shapes []Shape, w [3]float64) float64 {
	kept := perTypeOptions(options, shapes)
	// terms[s] are shape s's options, with the share of the option's cpu
	// and memory one pod takes and its price; at[t] the shapes option t
	// may take, with the position of its term there.
	type term struct {
		option int
		size   [2]float64
		price  float64
		slot   float64
		cost   [3]float64
	}
	type use struct{ shape, term int }
	var terms [][]term
	var counts []float64
	at := make([][]use, len(options))
	for _, s := range shapes {
		if s.Count <= 0 {
			continue
		}
		var ts []term
		for _, i := range kept {
			o := options[i]
			if s.Fits != nil && !(i < len(s.Fits) && s.Fits[i]) || max(s.CPU, 0) > o.CPU || max(s.Memory, 0) > o.Memory {
				continue
			}
			t := term{option: i}
			t.price, t.size, t.slot = podOnOption(o, s)
			t.cost = termCost(t.price, t.size, t.slot, noRounding)
			at[i] = append(at[i], use{len(terms), len(ts)})
			ts = append(ts, t)
		}
		if len(ts) == 0 {
			continue
		}
		terms = append(terms, ts)
		counts = append(counts, float64(s.Count))
	}
	weights := make([][3]float64, len(options))
	for i := range weights {
		weights[i] = w
	}
	dot := func(a, b [3]float64) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }
	// cur[s] is shape s's cheapest term, by option arg[s]; next[s] the
	// cheapest of the other options' terms (+Inf when there is none).
	cur := make([]float64, len(terms))
	next := make([]float64, len(terms))
	arg := make([]int, len(terms))
	evals := 0
	scan := func(s int) {
		cur[s], next[s], arg[s] = math.Inf(1), math.Inf(1), -1
		for _, t := range terms[s] {
			v := dot(weights[t.option], t.cost)
			if v < cur[s] {
				cur[s], next[s], arg[s] = v, cur[s], t.option
			} else if v < next[s] {
				next[s] = v
			}
		}
		evals += len(terms[s])
	}
	for s := range terms {
		scan(s)
	}
	// gain returns what option i's shapes add to the bound with weights
	// x for it and its terms costing costs (one per entry of at[i]), the
	// others' fixed.
	gain := func(i int, x [3]float64, costs [][3]float64) float64 {
		g := 0.0
		for k, u := range at[i] {
			other := cur[u.shape]
			if arg[u.shape] == i {
				other = next[u.shape]
			}
			g += counts[u.shape] * min(other, dot(x, costs[k]))
		}
		evals += len(at[i])
		return g
	}
	point := func(i, j, n int) [3]float64 {
		return [3]float64{float64(i) / float64(n), float64(j) / float64(n), float64(n-i-j) / float64(n)}
	}
	// coarse searches the weights of option i for the given term costs
	// on a coarse grid of the simplex, starting from from; it returns the
	// best gain, its weights and its grid point (-1, -1 for from).
	coarse := func(i int, from [3]float64, costs [][3]float64) (float64, [3]float64, [2]int) {
		best, bx, at := gain(i, from, costs), from, [2]int{-1, -1}
		for c := 0; c <= perPodGrid; c++ {
			for m := 0; c+m <= perPodGrid; m++ {
				x := point(c, m, perPodGrid)
				if g := gain(i, x, costs); g > best {
					best, bx, at = g, x, [2]int{c, m}
				}
			}
		}
		return best, bx, at
	}
	// refine searches a finer grid around a coarse result.
	refine := func(i int, best float64, bx [3]float64, at [2]int, costs [][3]float64) (float64, [3]float64) {
		const fine = perPodGrid * perPodRefine
		fc, fm := int(math.Round(bx[0]*fine)), int(math.Round(bx[1]*fine))
		if at[0] >= 0 {
			fc, fm = at[0]*perPodRefine, at[1]*perPodRefine
		}
		for c := fc - perPodRefine; c <= fc+perPodRefine; c++ {
			for m := fm - perPodRefine; m <= fm+perPodRefine; m++ {
				if c < 0 || m < 0 || c+m > fine {
					continue
				}
				x := point(c, m, fine)
				if g := gain(i, x, costs); g > best {
					best, bx = g, x
				}
			}
		}
		return best, bx
	}
	// roundings returns option i's candidate roundings per resource (see
	// roundShare): 1, none; each share above one half that a shape it
	// takes has, as a cut-off; and the staircases of 2 and 3 steps.
	roundings := func(i int) [2][]float64 {
		var out [2][]float64
		for r := range out {
			out[r] = []float64{1}
			for _, u := range at[i] {
				if x := terms[u.shape][u.term].size[r]; x > 0.5+2*shareSlack && x < 1 && !slices.Contains(out[r], x) {
					out[r] = append(out[r], x)
				}
			}
			slices.Sort(out[r])
			out[r] = append(out[r], -2, -3)
		}
		return out
	}
	// rounding[i] is option i's current rounding, cands[i] its candidates.
	rounding := make([][2]float64, len(options))
	cands := make([][2][]float64, len(options))
	for _, i := range kept {
		rounding[i], cands[i] = noRounding, roundings(i)
	}
	// costsFor returns option i's term costs with rounding c, one per
	// entry of at[i], in a buffer the next call reuses.
	var buf [][3]float64
	costsFor := func(i int, c [2]float64) [][3]float64 {
		buf = buf[:0]
		for _, u := range at[i] {
			t := terms[u.shape][u.term]
			buf = append(buf, termCost(t.price, t.size, t.slot, c))
		}
		return buf
	}
	for range perTypeSweeps {
		moved := false
		for _, i := range kept {
			if len(at[i]) == 0 || evals > perTypeBudget {
				continue
			}
			base := gain(i, weights[i], costsFor(i, rounding[i]))
			// Each pair of roundings on the coarse grid; the finer grid
			// only for the best pair.
			best, bx, bround, bat := base, weights[i], rounding[i], [2]int{-1, -1}
			for _, cc := range cands[i][0] {
				for _, cm := range cands[i][1] {
					if g, x, a := coarse(i, weights[i], costsFor(i, [2]float64{cc, cm})); g > best {
						best, bx, bround, bat = g, x, [2]float64{cc, cm}, a
					}
				}
			}
			costs := costsFor(i, bround)
			best, bx = refine(i, best, bx, bat, costs)
			if best <= base*(1+1e-12) {
				continue
			}
			weights[i], rounding[i], moved = bx, bround, true
			for k, u := range at[i] {
				terms[u.shape][u.term].cost = costs[k]
				scan(u.shape)
			}
		}
		if !moved {
			break
		}
	}
	total := 0.0
	for s := range terms {
		total += counts[s] * cur[s]
	}
	return total
}

// termCost is one pod's cost vector on an option: its price times the
// shares of the option's cpu and memory it takes, each rounded with the
// option's rounding for that resource (roundShare), and its price per pod
// slot.
func termCost(price float64, size [2]float64, slot float64, rounding [2]float64) [3]float64 {
	return [3]float64{price * roundShare(size[0], rounding[0]), price * roundShare(size[1], rounding[1]), slot}
}

// roundShare rounds a pod's share x of one node's capacity (cpu or memory)
// with rounding b, so that the rounded shares of pods that fit on one node
// together still sum to at most 1 (a dual feasible function, in the terms
// of Fekete and Schepers):
//
//   - b = 1 leaves x as it is.
//   - A cut-off 1/2 < b < 1 counts a share of at least b as the whole node
//     and a share of at most 1−b as nothing. A pod of at least b leaves at
//     most 1−b to the others on its node, which then count nothing; without
//     one, no share grew.
//   - b = −k, a staircase of k steps, counts ⌊(k+1)·x⌋/k, a share of exactly
//     j/(k+1) one step less: (j−1)/k. Of the pods on one node, those counting
//     j_1, j_2, … steps have shares above j_1/(k+1), j_2/(k+1), …, so Σj ≤ k.
//
// Shares carry rounding (Usable rounds capacities down), so a pod may show
// a share a hair above its true one: shares up to shareSlack above 1−b
// count as nothing, the staircase steps start shareSlack late, and cut-offs
// are taken only above 1/2 + 2·shareSlack, so no share is both whole and
// nothing.
func roundShare(x, b float64) float64 {
	if b < 0 {
		k := -b
		steps := math.Floor((k+1)*x - (k+1)*shareSlack)
		if steps <= 0 {
			return 0
		}
		return min(steps/k, 1)
	}
	switch {
	case b >= 1:
		return x
	case x >= b:
		return 1
	case x <= 1-b+shareSlack:
		return 0
	}
	return x
}

// shareSlack is the error roundShare allows in a share.
const shareSlack = 1e-6

// noRounding leaves both shares as they are.
var noRounding = [2]float64{1, 1}

// perTypeOptions returns the indexes of the options the per-type bound must
// keep. An option may be dropped only where another option u beats it on
// price, cpu, memory and pod slots and every shape that may use it may use
// u: giving it u's weights and roundings, its term is never below u's for
// any shape (its shares are at least u's, and every rounding is
// nondecreasing), so leaving it out of every minimum changes nothing.
// (Dropping per shape, as the shared bound does, would not hold here: two
// options dropped for different shapes would need different weights.)
func perTypeOptions(options []Option, shapes []Shape) []int {
	slots := func(o Option) float64 {
		if o.Pods <= 0 {
			return math.Inf(1)
		}
		return float64(o.Pods)
	}
	allowed := func(s Shape, i int) bool { return s.Fits == nil || i < len(s.Fits) && s.Fits[i] }
	var out []int
	for i, o := range options {
		dominated := false
		for j, u := range options {
			if j == i || u.PricePerHour > o.PricePerHour || u.CPU < o.CPU || u.Memory < o.Memory || slots(u) < slots(o) {
				continue
			}
			equal := u.PricePerHour == o.PricePerHour && u.CPU == o.CPU && u.Memory == o.Memory && slots(u) == slots(o)
			if equal && j > i {
				continue
			}
			if !slices.ContainsFunc(shapes, func(s Shape) bool { return s.Count > 0 && allowed(s, i) && !allowed(s, j) }) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	return out
}
