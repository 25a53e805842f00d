package lowerbound

import (
	"cmp"
	"math"
	"slices"
)

// Shape is a number of pods with the same requests that may run on the same
// options.
type Shape struct {
	// CPU in millicores and Memory in bytes that each pod requests.
	CPU, Memory int64
	// Count is the number of such pods.
	Count int
	// Fits[i] reports whether the pods may run on options[i] at all (its
	// requirements and offerings admit them); nil means every option may
	// take them. Either way an option must also hold one pod's requests.
	Fits []bool
}

// perPodGrid is the number of steps per unit of each weight on the first,
// coarse pass over the weights; perPodRefine the steps of the finer pass
// around the best coarse point.
const (
	perPodGrid   = 20
	perPodRefine = 10
)

// PerPod returns the per-pod bound of the package documentation: the best
// of the weights shared by every option, searched on a grid of the simplex,
// then raised by giving each option weights of its own (perTypeAscent).
// Options must carry what pods may request on one node of them, as Usable
// returns; pods that fit no option add nothing.
func PerPod(options []Option, shapes []Shape) float64 {
	shared, w := perPodShared(options, shapes)
	if shared <= 0 {
		return max(shared, 0)
	}
	return max(shared, perTypeAscent(options, shapes, w))
}

// perPodShared returns the best per-pod bound with one weight vector for
// every option, and those weights.
func perPodShared(options []Option, shapes []Shape) (float64, [3]float64) {
	costs := perPodCosts(options, shapes)
	if len(costs) == 0 {
		return 0, [3]float64{}
	}
	value := func(lc, lm, lp float64) float64 {
		total := 0.0
		for _, s := range costs {
			best := math.Inf(1)
			for _, c := range s.terms {
				best = min(best, lc*c[0]+lm*c[1]+lp*c[2])
			}
			total += float64(s.count) * best
		}
		return total
	}
	// Every point is a valid bound, so the best one found is; the sum is
	// concave, so a fine pass around the best coarse point finds most of
	// what a finer grid would.
	best, bc, bm := -1.0, 0, 0
	for i := 0; i <= perPodGrid; i++ {
		for j := 0; i+j <= perPodGrid; j++ {
			v := value(float64(i)/perPodGrid, float64(j)/perPodGrid, float64(perPodGrid-i-j)/perPodGrid)
			if v > best {
				best, bc, bm = v, i, j
			}
		}
	}
	const fine = perPodGrid * perPodRefine
	fc, fm := bc*perPodRefine, bm*perPodRefine
	for i := bc*perPodRefine - perPodRefine; i <= bc*perPodRefine+perPodRefine; i++ {
		for j := bm*perPodRefine - perPodRefine; j <= bm*perPodRefine+perPodRefine; j++ {
			if i < 0 || j < 0 || i+j > fine {
				continue
			}
			if v := value(float64(i)/fine, float64(j)/fine, float64(fine-i-j)/fine); v > best {
				best, fc, fm = v, i, j
			}
		}
	}
	return best, [3]float64{float64(fc) / fine, float64(fm) / fine, float64(fine-fc-fm) / fine}
}

// shapeCosts are, for one shape, the price of a node of each option it may
// use times the share of the node's cpu, memory and pod slots one pod takes;
// only the options no other beats on all three.
type shapeCosts struct {
	count int
	terms [][3]float64
}

func perPodCosts(options []Option, shapes []Shape) []shapeCosts {
	sorted := slices.Clone(shapes)
	slices.SortStableFunc(sorted, func(x, y Shape) int {
		return cmp.Or(cmp.Compare(x.CPU, y.CPU), cmp.Compare(x.Memory, y.Memory), slices.Compare(fitsKey(x.Fits), fitsKey(y.Fits)))
	})
	// A type another type allowed for the same shapes beats on price,
	// cpu, memory and pod slots is never the cheapest share; drop it once
	// per distinct Fits.
	candidates := map[string][]int{}
	var out []shapeCosts
	for _, s := range sorted {
		if s.Count <= 0 {
			continue
		}
		key := string(fitsKey(s.Fits))
		cand, ok := candidates[key]
		if !ok {
			cand = undominated(options, s.Fits)
			candidates[key] = cand
		}
		sc := shapeCosts{count: s.Count}
		for _, i := range cand {
			o := options[i]
			if max(s.CPU, 0) > o.CPU || max(s.Memory, 0) > o.Memory {
				continue
			}
			price, size, slot := podOnOption(o, s)
			sc.terms = append(sc.terms, termCost(price, size, slot, noRounding))
		}
		if len(sc.terms) == 0 {
			continue
		}
		sc.terms = lowest(sc.terms)
		out = append(out, sc)
	}
	return out
}

// podOnOption returns what one pod of shape s takes on a node of option
// o: the option's price, the pod's shares of its cpu and memory, and the
// price of one pod slot (0 when the slots are unlimited).
func podOnOption(o Option, s Shape) (price float64, size [2]float64, slot float64) {
	price = max(o.PricePerHour, 0)
	size = [2]float64{fraction(s.CPU, o.CPU), fraction(s.Memory, o.Memory)}
	if o.Pods > 0 {
		slot = price / float64(o.Pods)
	}
	return price, size, slot
}

// fraction is the share need/have of one node's capacity, 0 for no need.
func fraction(need, have int64) float64 {
	if need <= 0 {
		return 0
	}
	return float64(need) / float64(have)
}

func fitsKey(fits []bool) []byte {
	if fits == nil {
		return nil
	}
	k := make([]byte, len(fits)+1)
	k[0] = 'f'
	for i, f := range fits {
		if f {
			k[i+1] = 1
		}
	}
	return k
}

// undominated returns the indexes of the options fits allows that no other
// allowed option beats: one as cheap with as much cpu, memory and pod slots
// (0 counting as unlimited). Among equal options the first stays.
func undominated(options []Option, fits []bool) []int {
	slots := func(o Option) float64 {
		if o.Pods <= 0 {
			return math.Inf(1)
		}
		return float64(o.Pods)
	}
	var allowed []int
	for i := range options {
		if fits == nil || i < len(fits) && fits[i] {
			allowed = append(allowed, i)
		}
	}
	var out []int
	for _, i := range allowed {
		o := options[i]
		dominated := false
		for _, j := range allowed {
			if j == i {
				continue
			}
			u := options[j]
			if u.PricePerHour <= o.PricePerHour && u.CPU >= o.CPU && u.Memory >= o.Memory && slots(u) >= slots(o) {
				equal := u.PricePerHour == o.PricePerHour && u.CPU == o.CPU && u.Memory == o.Memory && slots(u) == slots(o)
				if !equal || j < i {
					dominated = true
					break
				}
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	return out
}

// lowest keeps the cost vectors that no other is at most on every
// coordinate; ties keep the first.
func lowest(terms [][3]float64) [][3]float64 {
	var out [][3]float64
	for i, t := range terms {
		beaten := false
		for j, u := range terms {
			if j != i && u[0] <= t[0] && u[1] <= t[1] && u[2] <= t[2] && (u != t || j < i) {
				beaten = true
				break
			}
		}
		if !beaten {
			out = append(out, t)
		}
	}
	return out
}

// WithPerPod returns b with PerPod set to perPod and the bound raised to it
// when it is higher; Group is then cleared, since the separation no longer
// sets the bound.
func (b Bound) WithPerPod(perPod float64) Bound {
	b.PerPod = perPod
	if perPod > b.PricePerHour*(1+1e-9) {
		b.PricePerHour, b.Group = perPod, ""
	}
	return b
}
