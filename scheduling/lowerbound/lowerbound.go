// Package lowerbound computes a price below which no placement of a set of
// pods can go, so that a plan's cost can be judged: Ratio = plan cost /
// lower bound is 1 for a plan that cannot be beaten and grows with waste.
//
// # The resource bound
//
// Let the pods request C millicores and M bytes in total, and let each
// option t (an instance type at its cheapest offering) have allocatable cpu
// c_t, memory m_t and price p_t. Buying x_t machines of each type, allowing
// fractions, the cheapest cover is the linear program
//
//	minimise Σ p_t·x_t  subject to  Σ c_t·x_t ≥ C,  Σ m_t·x_t ≥ M,  x ≥ 0.
//
// With two constraints an optimal basis has at most two types. Writing each
// type as the point (c_t/p_t, m_t/p_t), the resources one dollar buys, the
// optimum lies on the upper-right frontier of the convex hull of the points:
// it is either a single type or two types adjacent on that frontier. Fractional
// evaluates every single type and every adjacent pair, in O(T log T).
//
// # Pods that need separate nodes
//
// A group of k pods that must each run on a different node (required pod
// anti-affinity on kubernetes.io/hostname against their own labels) needs k
// nodes, each of a type that fits one of its pods. That adds a third
// constraint, Σ_{t fits} x_t ≥ k. Compute solves the three-constraint LP
// through its Lagrangian in the node-count constraint: for any λ in
// [0, p_g], where p_g is the price of the cheapest type that fits one pod of
// the group,
//
//	L(λ) = λ·k + LP(C, M; prices p_t − λ·[t fits])
//
// is a lower bound (weak duality), L(0) is the resource bound and L(p_g) is
// at least k·p_g, the "k times the cheapest type that fits" bound. L is
// concave; Compute searches it for its maximum, which is the optimum of the
// three-constraint LP, and keeps the best value it evaluated. So the bound is
//
//	LB = max( LP(C, M), max_g max_{0≤λ≤p_g} L_g(λ) ).
//
// Adding k·p_g to the resource bound instead would overstate it: other pods
// may fill the room left on the group's nodes.
//
// # What a node can hold of these pods
//
// A type's allocatable counts in full above, but pods can use only part of
// it when they cannot fill it: a type with 2 vCPU and 15 MiB of memory
// offers cheap cpu that no pod asking for memory can run on. Usable caps
// each option at what any set of the pods placed on one node can request
// there. On a node of type t holding pods S,
//
//	Σ_S cpu_i = Σ_S mem_i·(cpu_i/mem_i) ≤ ρ·Σ_S mem_i ≤ ρ·m_t
//	Σ_S cpu_i ≤ |S|·max cpu_i ≤ n_t·max cpu_i
//
// where ρ is the largest cpu-to-memory ratio among the pods and n_t the
// type's pod slots; so the cpu the pods request on it is at most
// min(c_t, ρ·m_t, n_t·max cpu_i), and likewise for memory with the largest
// memory-to-cpu ratio. Every integral placement therefore satisfies the
// resource constraints with the capped capacities too, and the LP over them
// is still at most the cheapest placement: a lower bound, tighter where
// types are lopsided or short of pod slots.
//
// # Keeping each pod on one node
//
// The LPs above pool the pods' requests, as if a pod's cpu could sit on one
// node and its memory on another: they buy cpu from a type with 2 vCPU and
// almost no memory and memory from a memory-rich type for pods that fit
// neither. PerPod bounds the price pod by pod instead. Let c_t, m_t and n_t
// be what pods may request on one node of type t and its pod slots (as
// Usable returns them; n_t unlimited counts as 1/n_t = 0), and fix weights
// λc, λm, λp ≥ 0 with λc + λm + λp = 1. A node of type t holding pods S has
// Σ_S cpu_i ≤ c_t, Σ_S mem_i ≤ m_t and |S| ≤ n_t, so each of the three
// ratios is at most 1 and so is any weighted mean of them:
//
//	p_t ≥ p_t·(λc·Σ_S cpu_i/c_t + λm·Σ_S mem_i/m_t + λp·|S|/n_t)
//	    = Σ_S p_t·(λc·cpu_i/c_t + λm·mem_i/m_t + λp/n_t)
//	    ≥ Σ_S min_{u ∈ F_i} p_u·(λc·cpu_i/c_u + λm·mem_i/m_u + λp/n_u),
//
// where F_i are the types pod i may use and whose c, m hold it, t among
// them. Summing over the nodes of any placement, each pod counted once on
// its own node,
//
//	price ≥ Σ_i min_{u ∈ F_i} p_u·(λc·cpu_i/c_u + λm·mem_i/m_u + λp/n_u),
//
// for every choice of weights. PerPod evaluates this on a grid of weights
// and keeps the largest value: every point is a lower bound, so the maximum
// over any set of points is. The right-hand side is a sum of minima of
// functions linear in the weights, hence concave, and a finer grid around
// the best coarse point gains most of what is left. Pods that no type fits
// add nothing (they are placed nowhere). To keep it fast, pods with the same
// requests and allowed types are one shape, counted once; a type another
// allowed type beats on price, cpu, memory and pod slots together is never
// the minimum and is dropped, as are, per shape, types whose three terms
// another type's all undercut.
//
// The inequality for a node of type t uses only t's weights, so each type
// may have its own, λ_t, and the sum of the per-pod minima, each term with
// its type's weights, is still a lower bound for every choice of them. The
// best choice is the optimum of the LP that places fractions of pods on
// types and buys each type as much as its most used resource needs. PerPod
// starts from the best shared weights and climbs: each type in turn tries a
// grid of weights, the others fixed, and keeps the best if it raises the
// sum; a bounded number of passes, each step a valid bound. The per-shape
// pruning above does not carry over (two types dropped for different shapes
// could need different weights); a type is dropped only where a type that
// beats it on price, cpu, memory and pod slots may take every shape it may,
// since with that type's weights its terms are never the smaller.
//
// # Rounding shares
//
// A share counts a pod's cpu as though the rest of the node could go to
// others, but two pods of 1.5 cores never share a 2-core node: each takes
// the whole of it. The inequality above holds for any function f of the
// shares with Σ_S f(x_i) ≤ 1 whenever Σ_S x_i ≤ 1 (a dual feasible
// function), used in place of the share of cpu or memory:
//
//	p_t ≥ Σ_S p_t·(λc·f(cpu_i/c_t) + λm·g(mem_i/m_t) + λp/n_t).
//
// Each type may have its own f and g, as it has its own weights, and the
// sum of the per-pod minima is still a lower bound; only f must not fall
// as the share grows, so that a type dropped for another that beats it
// takes that type's functions too. roundShare has the ones used: none, a
// cut-off (a share of at least b counts as the whole node and one of at most
// 1−b as nothing) and the staircases of 2 and 3 steps (⌊(k+1)·x⌋/k). The
// ascent tries each pair of them per type with its weights. On the EC2
// catalog it gives 2-core types the staircase of 3 steps on cpu, where
// pods of 1, 1.5 and 0.5 cores count 2/3, 1 and 1/3 of the node instead of
// about a half, three quarters and a quarter.
//
// The two bounds see different things: the LPs see the pods' separation
// into groups and buy whole capacity, the per-pod bound sees that a pod's
// requests go together and which types it fits. Each is a lower bound, so
// their maximum is; Bound.WithPerPod takes it.
//
// The bound ignores everything else that costs nodes (DaemonSet overhead,
// other resources, node affinity, taints, topology spread), each of which
// can only raise the true optimum, so it stays a lower bound.
package lowerbound

import (
	"cmp"
	"math"
	"slices"
)

// Option is one way to buy capacity: an instance type at a price.
type Option struct {
	Name string
	// CPU in millicores and Memory in bytes that pods may request on it.
	CPU, Memory int64
	// Pods is how many pods it holds; 0 means no limit.
	Pods int64
	// PricePerHour is its cheapest price.
	PricePerHour float64
}

// Demand summarises the pods a bound is for: their total requests and what
// the largest and most lopsided of them ask, which limits how much of a
// node they can use (see Usable).
type Demand struct {
	// CPU in millicores and Memory in bytes, summed over the pods.
	CPU, Memory int64
	// MaxCPU and MaxMemory are the largest single requests.
	MaxCPU, MaxMemory int64
	// CPUPerMemory and MemoryPerCPU are the largest ratios of one pod's
	// requests; +Inf when some pod asks for one and not the other.
	CPUPerMemory, MemoryPerCPU float64
	// Pods is how many pods were added.
	Pods int
}

// Add counts one pod requesting cpu millicores and memory bytes.
func (d *Demand) Add(cpu, memory int64) {
	cpu, memory = max(cpu, 0), max(memory, 0)
	d.CPU = addSaturating(d.CPU, cpu)
	d.Memory = addSaturating(d.Memory, memory)
	d.MaxCPU, d.MaxMemory = max(d.MaxCPU, cpu), max(d.MaxMemory, memory)
	d.CPUPerMemory = max(d.CPUPerMemory, ratio(cpu, memory))
	d.MemoryPerCPU = max(d.MemoryPerCPU, ratio(memory, cpu))
	d.Pods++
}

func ratio(a, b int64) float64 {
	switch {
	case a == 0:
		return 0
	case b == 0:
		return math.Inf(1)
	}
	return float64(a) / float64(b)
}

func addSaturating(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Usable returns o with its cpu and memory cut to what pods like d's can
// request on one node of it (see the package documentation): never more
// than its allocatable, and less where the pods' shapes or its pod slots
// leave part of it unusable.
func (d *Demand) Usable(o Option) Option {
	// Never below 1: an option left with nothing would drop out of the LP,
	// which would overstate the bound for pods that request none of it.
	capAt := func(have int64, limit float64) int64 {
		if limit < float64(have) {
			return max(int64(math.Floor(limit)), min(have, 1))
		}
		return have
	}
	cpu, memory := o.CPU, o.Memory
	if d.Pods > 0 {
		cpu = capAt(cpu, d.CPUPerMemory*float64(o.Memory))
		memory = capAt(memory, d.MemoryPerCPU*float64(o.CPU))
		if o.Pods > 0 {
			cpu = capAt(cpu, float64(o.Pods)*float64(d.MaxCPU))
			memory = capAt(memory, float64(o.Pods)*float64(d.MaxMemory))
		}
	}
	o.CPU, o.Memory = cpu, memory
	return o
}

// Share is how much of one option a fractional optimum buys.
type Share struct {
	Name string
	// Count is the (fractional) number of machines.
	Count float64
}

// Group is a set of pods that must each run on a different node.
type Group struct {
	// Name identifies the group in Bound.Group, for example the owner.
	Name string
	// Count is the number of pods, hence of distinct nodes.
	Count int
	// Fits[i] reports whether options[i] fits one pod of the group; a nil
	// Fits means every option does.
	Fits []bool
}

// Bound is a lower bound on the price of running a set of pods.
type Bound struct {
	// PricePerHour is the bound.
	PricePerHour float64
	// Resources is the resource bound alone, LP(C, M).
	Resources float64
	// PerPod is the per-pod bound (see PerPod), 0 when not computed.
	PerPod float64
	// Mix is the fractional optimum of the resource bound: at most two
	// types, by name.
	Mix []Share
	// Group names the group whose separation raised the bound above
	// Resources; empty when none did.
	Group string
	// Feasible is false when no option has any capacity to offer.
	Feasible bool
}

// Fractional returns the cheapest fractional cover of cpu millicores and
// memory bytes by options (the resource bound) and its mix. It reports false
// when the options cannot cover the demand at all. Options without cpu or
// without memory are left out; an option with a price of zero or less makes
// the bound zero.
func Fractional(options []Option, cpu, memory int64) (float64, []Share, bool) {
	prices := make([]float64, len(options))
	for i, o := range options {
		prices[i] = o.PricePerHour
	}
	return fractional(options, prices, float64(max(cpu, 0))/1000, float64(max(memory, 0))/(1<<30))
}

// point is an option in resources per dollar: cores and GiB.
type point struct {
	a, b  float64
	index int
}

// fractional solves the resource LP with the given prices; cpu in cores and
// memory in GiB, to keep the numbers of similar size.
func fractional(options []Option, prices []float64, cpu, memory float64) (float64, []Share, bool) {
	if cpu == 0 && memory == 0 {
		return 0, nil, true
	}
	points := make([]point, 0, len(options))
	for i, o := range options {
		if o.CPU <= 0 || o.Memory <= 0 {
			continue
		}
		if prices[i] <= 0 {
			return 0, []Share{{Name: o.Name}}, true
		}
		c, m := float64(o.CPU)/1000, float64(o.Memory)/(1<<30)
		points = append(points, point{a: c / prices[i], b: m / prices[i], index: i})
	}
	if len(points) == 0 {
		return 0, nil, false
	}

	// Single types: spend enough on t to cover both resources.
	best, mix := math.Inf(1), []Share(nil)
	for _, p := range points {
		dollars := max(cpu/p.a, memory/p.b)
		if dollars < best {
			o := options[p.index]
			best, mix = dollars, []Share{{Name: o.Name, Count: dollars / prices[p.index]}}
		}
	}

	// Adjacent pairs on the upper-right frontier of the hull.
	frontier := paretoHull(points)
	for i := 0; i+1 < len(frontier); i++ {
		s, t := frontier[i], frontier[i+1] // s.a < t.a, s.b > t.b
		det := s.a*t.b - t.a*s.b
		if det == 0 {
			continue
		}
		ds := (cpu*t.b - memory*t.a) / det
		dt := (memory*s.a - cpu*s.b) / det
		if ds < 0 || dt < 0 {
			continue
		}
		if dollars := ds + dt; dollars < best {
			best = dollars
			mix = []Share{
				{Name: options[s.index].Name, Count: ds / prices[s.index]},
				{Name: options[t.index].Name, Count: dt / prices[t.index]},
			}
		}
	}
	slices.SortFunc(mix, func(x, y Share) int { return cmp.Compare(x.Name, y.Name) })
	return best, mix, true
}

// paretoHull returns the points of the upper-right frontier of the convex
// hull of points, by increasing a (and so decreasing b): from the point with
// the most memory per dollar to the one with the most cpu per dollar.
func paretoHull(points []point) []point {
	sorted := slices.Clone(points)
	slices.SortFunc(sorted, func(x, y point) int {
		if c := cmp.Compare(x.a, y.a); c != 0 {
			return c
		}
		return cmp.Compare(y.b, x.b) // higher b first among equal a
	})
	// Among equal a only the highest b can be on the upper hull.
	uniq := sorted[:0]
	for i, p := range sorted {
		if i > 0 && p.a == sorted[i-1].a {
			continue
		}
		uniq = append(uniq, p)
	}
	// Upper hull, left to right (Andrew's monotone chain): drop a middle
	// point that does not make a strict clockwise turn.
	var hull []point
	for _, p := range uniq {
		for len(hull) >= 2 {
			o, q := hull[len(hull)-2], hull[len(hull)-1]
			if (q.a-o.a)*(p.b-o.b)-(q.b-o.b)*(p.a-o.a) >= 0 {
				hull = hull[:len(hull)-1]
				continue
			}
			break
		}
		hull = append(hull, p)
	}
	// The frontier starts at the highest b (the last one, if tied).
	top := 0
	for i, p := range hull {
		if p.b >= hull[top].b {
			top = i
		}
	}
	return hull[top:]
}

// searchSteps is the number of golden-section steps over λ; the interval
// shrinks by 0.618 per step, to below 1e-10 of its width after 50.
const searchSteps = 50

// Compute returns the lower bound on the price of pods that request cpu
// millicores and memory bytes in total, among which the groups must each
// spread over Count distinct nodes (see the package documentation for the
// formula). Groups with no fitting option are left out: their pods cannot be
// placed at all.
func Compute(options []Option, cpu, memory int64, groups []Group) Bound {
	c, m := float64(max(cpu, 0))/1000, float64(max(memory, 0))/(1<<30)
	prices := make([]float64, len(options))
	for i, o := range options {
		prices[i] = o.PricePerHour
	}
	base, mix, ok := fractional(options, prices, c, m)
	if !ok {
		return Bound{}
	}
	out := Bound{PricePerHour: base, Resources: base, Mix: mix, Feasible: true}
	reduced := make([]float64, len(options))
	for _, g := range groups {
		if g.Count <= 0 {
			continue
		}
		fits := func(i int) bool { return g.Fits == nil || g.Fits[i] }
		cheapest := math.Inf(1)
		for i, o := range options {
			if fits(i) && o.CPU > 0 && o.Memory > 0 {
				cheapest = min(cheapest, o.PricePerHour)
			}
		}
		if math.IsInf(cheapest, 1) {
			continue
		}
		cheapest = max(cheapest, 0)
		lagrangian := func(lambda float64) float64 {
			for i, o := range options {
				reduced[i] = o.PricePerHour
				if fits(i) {
					reduced[i] -= lambda
				}
			}
			v, _, _ := fractional(options, reduced, c, m)
			return lambda*float64(g.Count) + v
		}
		best := lagrangian(cheapest)
		lo, hi := 0.0, cheapest
		const phi = 0.6180339887498949
		x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
		f1, f2 := lagrangian(x1), lagrangian(x2)
		for range searchSteps {
			best = max(best, f1, f2)
			if f1 < f2 {
				lo, x1, f1 = x1, x2, f2
				x2 = lo + phi*(hi-lo)
				f2 = lagrangian(x2)
			} else {
				hi, x2, f2 = x2, x1, f1
				x1 = hi - phi*(hi-lo)
				f1 = lagrangian(x1)
			}
		}
		best = max(best, f1, f2)
		// Only a clear improvement names the group, not rounding noise.
		if best > out.PricePerHour*(1+1e-9) {
			out.PricePerHour, out.Group = best, g.Name
		}
	}
	return out
}

// Ratio returns cost / bound, or 0 when the bound is zero (nothing to
// place, or a free option).
func Ratio(cost, bound float64) float64 {
	if bound <= 0 {
		return 0
	}
	return cost / bound
}
