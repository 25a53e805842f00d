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
	perTypeBudget = 60_000_000
)

// perTypeAscent raises the per-pod bound by giving each option its own
// weights (see the package documentation), starting from the shared
// weights w. It is a coordinate ascent: for each option in turn it tries
// weights on a grid of the simplex, then on a finer grid around the best,
// the other options' weights fixed, and keeps the option's best if that
// raises the bound. Every weight choice gives a valid bound, so stopping
// anywhere does; the value returned is the one of the weights it holds.
func perTypeAscent(options []Option, shapes []Shape, w [3]float64) float64 {
	kept := perTypeOptions(options, shapes)
	// terms[s] are shape s's options and cost vectors; at[t] the shapes
	// option t may take, with the position of its term there.
	type term struct {
		option int
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
			price := max(o.PricePerHour, 0)
			c := [3]float64{share(price, s.CPU, o.CPU), share(price, s.Memory, o.Memory), 0}
			if o.Pods > 0 {
				c[2] = price / float64(o.Pods)
			}
			at[i] = append(at[i], use{len(terms), len(ts)})
			ts = append(ts, term{i, c})
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
	// x for it, the others' fixed.
	gain := func(i int, x [3]float64) float64 {
		g := 0.0
		for _, u := range at[i] {
			other := cur[u.shape]
			if arg[u.shape] == i {
				other = next[u.shape]
			}
			g += counts[u.shape] * min(other, dot(x, terms[u.shape][u.term].cost))
		}
		evals += len(at[i])
		return g
	}
	point := func(i, j, n int) [3]float64 {
		return [3]float64{float64(i) / float64(n), float64(j) / float64(n), float64(n-i-j) / float64(n)}
	}
	for range perTypeSweeps {
		moved := false
		for _, i := range kept {
			if len(at[i]) == 0 || evals > perTypeBudget {
				continue
			}
			base := gain(i, weights[i])
			best, bx := base, weights[i]
			bc, bm := -1, -1
			for c := 0; c <= perPodGrid; c++ {
				for m := 0; c+m <= perPodGrid; m++ {
					x := point(c, m, perPodGrid)
					if g := gain(i, x); g > best {
						best, bx, bc, bm = g, x, c, m
					}
				}
			}
			// Refine around the best coarse point, or around the
			// current weights when no coarse point beat them.
			const fine = perPodGrid * perPodRefine
			fc, fm := int(math.Round(bx[0]*fine)), int(math.Round(bx[1]*fine))
			if bc >= 0 {
				fc, fm = bc*perPodRefine, bm*perPodRefine
			}
			for c := fc - perPodRefine; c <= fc+perPodRefine; c++ {
				for m := fm - perPodRefine; m <= fm+perPodRefine; m++ {
					if c < 0 || m < 0 || c+m > fine {
						continue
					}
					x := point(c, m, fine)
					if g := gain(i, x); g > best {
						best, bx = g, x
					}
				}
			}
			if best <= base*(1+1e-12) {
				continue
			}
			weights[i], moved = bx, true
			for _, u := range at[i] {
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

// perTypeOptions returns the indexes of the options the per-type bound must
// keep. An option may be dropped only where another option u beats it on
// price, cpu, memory and pod slots and every shape that may use it may use
// u: giving it u's weights, its term is never below u's for any shape, so
// leaving it out of every minimum changes nothing. (Dropping per shape, as
// the shared bound does, would not hold here: two options dropped for
// different shapes would need different weights.)
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
