package lowerbound

import (
	"math"
	"math/rand/v2"
	"testing"
)

const gib = 1 << 30

func opt(name string, cores, gibs, price float64) Option {
	return Option{Name: name, CPU: int64(cores * 1000), Memory: int64(gibs * gib), PricePerHour: price}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestFractional(t *testing.T) {
	cpuRich := opt("cpu-rich", 4, 2, 1)
	memRich := opt("mem-rich", 1, 8, 1)
	tests := []struct {
		name     string
		options  []Option
		cpu, mem float64 // cores, GiB
		want     float64
		wantMix  map[string]float64
		wantOK   bool
	}{
		// 5 cores need 2.5 machines; 4 GiB needs 1.
		{name: "one type, cpu binds", options: []Option{opt("a", 2, 4, 0.1)}, cpu: 5, mem: 4, want: 0.25, wantMix: map[string]float64{"a": 2.5}, wantOK: true},
		// Either type alone needs 4 machines; 0.8 of each covers
		// 4·0.8+1·0.8 = 4 cores and 2·0.8+8·0.8 = 8 GiB.
		{name: "a pair beats both singles", options: []Option{cpuRich, memRich}, cpu: 4, mem: 8, want: 1.6, wantMix: map[string]float64{"cpu-rich": 0.8, "mem-rich": 0.8}, wantOK: true},
		// Memory-heavy demand: only the memory-rich type, 2 machines.
		{name: "pair not needed", options: []Option{cpuRich, memRich}, cpu: 1, mem: 16, want: 2, wantMix: map[string]float64{"mem-rich": 2}, wantOK: true},
		// A dominated type changes nothing.
		{name: "dominated type", options: []Option{cpuRich, memRich, opt("poor", 1, 1, 1)}, cpu: 4, mem: 8, want: 1.6, wantOK: true},
		// A type that dominates both: 2 machines of 2 cores, 4 GiB at 0.5.
		{name: "dominating type", options: []Option{cpuRich, memRich, opt("best", 2, 4, 0.5)}, cpu: 4, mem: 8, want: 1, wantMix: map[string]float64{"best": 2}, wantOK: true},
		{name: "nothing requested", options: []Option{cpuRich}, want: 0, wantOK: true},
		{name: "no options", cpu: 1, mem: 1, wantOK: false},
		{name: "free option", options: []Option{cpuRich, opt("free", 1, 1, 0)}, cpu: 10, mem: 10, want: 0, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, mix, ok := Fractional(tc.options, int64(tc.cpu*1000), int64(tc.mem*gib))
			if ok != tc.wantOK || !near(got, tc.want) {
				t.Fatalf("Fractional = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
			if tc.wantMix != nil {
				if len(mix) != len(tc.wantMix) {
					t.Fatalf("mix %v, want %v", mix, tc.wantMix)
				}
				for _, s := range mix {
					if !near(s.Count, tc.wantMix[s.Name]) {
						t.Errorf("mix %v, want %v", mix, tc.wantMix)
					}
				}
			}
		})
	}
}

// bruteForce solves the resource LP by trying every type and every pair.
func bruteForce(options []Option, cpu, mem float64) float64 {
	best := math.Inf(1)
	for i, s := range options {
		sc, sm := float64(s.CPU)/1000, float64(s.Memory)/gib
		best = min(best, s.PricePerHour*max(cpu/sc, mem/sm))
		for _, t := range options[i+1:] {
			tc, tm := float64(t.CPU)/1000, float64(t.Memory)/gib
			det := sc*tm - tc*sm
			if det == 0 {
				continue
			}
			xs, xt := (cpu*tm-mem*tc)/det, (mem*sc-cpu*sm)/det
			if xs >= 0 && xt >= 0 {
				best = min(best, xs*s.PricePerHour+xt*t.PricePerHour)
			}
		}
	}
	return best
}

func TestFractionalMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		n := 1 + r.IntN(30)
		options := make([]Option, n)
		for i := range options {
			cores := float64(1 + r.IntN(64))
			options[i] = opt("t", cores, cores*float64(1+r.IntN(8)), 0.01+r.Float64()*cores*0.05)
		}
		cpu, mem := float64(r.IntN(500)), float64(r.IntN(4000))
		got, _, _ := Fractional(options, int64(cpu*1000), int64(mem*gib))
		want := bruteForce(options, cpu, mem)
		if cpu == 0 && mem == 0 {
			want = 0
		}
		if math.Abs(got-want) > 1e-7*max(1, want) {
			t.Fatalf("trial %d: Fractional %v, brute force %v (options %v, cpu %v, mem %v)", trial, got, want, options, cpu, mem)
		}
	}
}

func TestCompute(t *testing.T) {
	small := opt("small", 1, 4, 1)
	big := opt("big", 4, 16, 3)
	tests := []struct {
		name      string
		options   []Option
		cpu, mem  float64
		groups    []Group
		want      float64
		wantGroup string
	}{
		// big gives more per dollar: 6 cores need 1.5 big = 4.5.
		{name: "resources only", options: []Option{small, big}, cpu: 6, mem: 24, want: 4.5},
		// Four separate nodes and 6 cores: the LP
		// min x_s + 3x_b s.t. x_s + 4x_b ≥ 6, x_s + x_b ≥ 4
		// has its optimum at x_b = 2/3, x_s = 10/3: 16/3, above both
		// 4.5 (resources) and 4·1 (four smallest nodes).
		{name: "separation and resources combine", options: []Option{small, big}, cpu: 6, mem: 24,
			groups: []Group{{Name: "web", Count: 4, Fits: []bool{true, true}}}, want: 16.0 / 3, wantGroup: "web"},
		// Ten separate nodes of at least 1 core: 10 × small = 10.
		{name: "separation dominates", options: []Option{small, big}, cpu: 6, mem: 24,
			groups: []Group{{Name: "web", Count: 10}}, want: 10, wantGroup: "web"},
		// Only big fits a pod of the group: 3 × 3 = 9.
		{name: "only some types fit", options: []Option{small, big}, cpu: 6, mem: 24,
			groups: []Group{{Name: "fat", Count: 3, Fits: []bool{false, true}}}, want: 9, wantGroup: "fat"},
		// Two separate 0.1-core pods and 1.8 other cores on 1-core nodes at
		// 1: two nodes hold everything, so the bound is 2, not
		// 2 + 2·1 − 0.2.
		{name: "others fill the separated nodes", options: []Option{opt("one", 1, 4, 1)}, cpu: 2, mem: 1,
			groups: []Group{{Name: "pair", Count: 2}}, want: 2},
		{name: "group that fits nowhere is left out", options: []Option{small, big}, cpu: 6, mem: 24,
			groups: []Group{{Name: "huge", Count: 100, Fits: []bool{false, false}}}, want: 4.5},
		// Two nodes: 1.5 big machines are not two nodes; x_b = 4/3 and
		// x_s = 2/3 are, at 14/3.
		{name: "two separate nodes", options: []Option{small, big}, cpu: 6, mem: 24,
			groups: []Group{{Name: "two", Count: 2}}, want: 14.0 / 3, wantGroup: "two"},
		// One node is no constraint: 1.5 big machines already make one.
		{name: "separation within the resource bound", options: []Option{small, big}, cpu: 6, mem: 24,
			groups: []Group{{Name: "one", Count: 1}}, want: 4.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Compute(tc.options, int64(tc.cpu*1000), int64(tc.mem*gib), tc.groups)
			if !b.Feasible || math.Abs(b.PricePerHour-tc.want) > 1e-6 || b.Group != tc.wantGroup {
				t.Fatalf("Compute = %+v, want %v from group %q", b, tc.want, tc.wantGroup)
			}
			if b.PricePerHour > tc.want+1e-12 {
				t.Errorf("bound %v overstates the optimum %v", b.PricePerHour, tc.want)
			}
		})
	}
	if b := Compute(nil, 1000, gib, nil); b.Feasible {
		t.Errorf("no options: %+v", b)
	}
	if r := Ratio(6, 4); r != 1.5 {
		t.Errorf("Ratio(6, 4) = %v", r)
	}
	if r := Ratio(6, 0); r != 0 {
		t.Errorf("Ratio(6, 0) = %v", r)
	}
}

func TestUsable(t *testing.T) {
	// Pods of 1.5 cores and 4 GiB: a 2-core type with 15 MiB of memory
	// offers almost none of its cpu to them, and a type with one pod slot
	// at most one pod's worth.
	var d Demand
	d.Add(1500, 4*gib)
	d.Add(1500, 4*gib)
	tests := []struct {
		name             string
		in               Option
		wantCPU, wantMem int64
	}{
		{name: "memory-starved", in: Option{CPU: 1930, Memory: 15 << 20, Pods: 4}, wantCPU: 5, wantMem: 15 << 20}, // 1500m per 4 GiB of 15 MiB,
		{name: "few pod slots", in: Option{CPU: 8000, Memory: 32 * gib, Pods: 1}, wantCPU: 1500, wantMem: 4 * gib},
		{name: "balanced", in: Option{CPU: 3000, Memory: 8 * gib, Pods: 10}, wantCPU: 3000, wantMem: 8 * gib},
		{name: "no pod limit", in: Option{CPU: 3000, Memory: 8 * gib}, wantCPU: 3000, wantMem: 8 * gib},
		{name: "cpu-starved keeps one millicore", in: Option{CPU: 0, Memory: 8 * gib, Pods: 10}, wantCPU: 0, wantMem: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := d.Usable(tc.in)
			if got.CPU != tc.wantCPU || got.Memory != tc.wantMem {
				t.Errorf("Usable = %d m, %d bytes; want %d m, %d bytes", got.CPU, got.Memory, tc.wantCPU, tc.wantMem)
			}
		})
	}
	var none Demand
	if got := none.Usable(Option{CPU: 1, Memory: 2, Pods: 1}); got.CPU != 1 || got.Memory != 2 {
		t.Errorf("no pods: Usable = %+v, want the option unchanged", got)
	}
}

// cheapestPacking is the price of the cheapest placement of pods (cpu
// millicores, memory bytes) on nodes of the options, where the first apart
// pods must each be on a different node, by trying every partition of the
// pods; +Inf when there is none.
func cheapestPacking(options []Option, pods [][2]int64, apart int) float64 {
	return cheapestAllowed(options, pods, apart, nil)
}

// cheapestAllowed is cheapestPacking where pod j may only run on the options
// i with allowed[j][i]; nil allows every option.
func cheapestAllowed(options []Option, pods [][2]int64, apart int, allowed [][]bool) float64 {
	best := math.Inf(1)
	block := make([]int, len(pods))
	var rec func(i, blocks int)
	rec = func(i, blocks int) {
		if i == len(pods) {
			total := 0.0
			for b := range blocks {
				var cpu, mem, n, sep int64
				for j, p := range pods {
					if block[j] == b {
						cpu, mem, n = cpu+p[0], mem+p[1], n+1
						if j < apart {
							sep++
						}
					}
				}
				if sep > 1 {
					return
				}
				price := math.Inf(1)
				for i, o := range options {
					if !allowedOn(allowed, block, b, i) {
						continue
					}
					if cpu <= o.CPU && mem <= o.Memory && (o.Pods == 0 || n <= o.Pods) {
						price = min(price, o.PricePerHour)
					}
				}
				total += price
			}
			best = min(best, total)
			return
		}
		for b := 0; b <= blocks; b++ {
			block[i] = b
			rec(i+1, max(blocks, b+1))
		}
	}
	rec(0, 0)
	return best
}

// allowedOn reports whether every pod in block b may run on option i.
func allowedOn(allowed [][]bool, block []int, b, i int) bool {
	for j := range block {
		if allowed != nil && block[j] == b && !allowed[j][i] {
			return false
		}
	}
	return true
}

func TestUsableBoundBelowCheapestPacking(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 0))
	checked := 0
	for trial := range 400 {
		options := make([]Option, 1+r.IntN(3))
		for i := range options {
			options[i] = Option{
				Name:         string(rune('a' + i)),
				CPU:          int64(500 + r.IntN(8)*500),
				Memory:       int64(1+r.IntN(16)) * gib / 4,
				Pods:         int64(r.IntN(4)),
				PricePerHour: 0.01 + r.Float64(),
			}
		}
		pods := make([][2]int64, 1+r.IntN(6))
		var d Demand
		for i := range pods {
			pods[i] = [2]int64{int64(r.IntN(5) * 250), int64(r.IntN(5)) * gib / 8}
			if i > 0 && r.IntN(3) == 0 {
				pods[i] = pods[0]
			}
		}
		apart := 0
		for apart < len(pods) && pods[apart] == pods[0] && r.IntN(2) == 0 {
			apart++
		}
		for _, p := range pods {
			d.Add(p[0], p[1])
		}
		opt := cheapestPacking(options, pods, apart)
		if math.IsInf(opt, 1) {
			continue
		}
		usable := make([]Option, len(options))
		fits := make([]bool, len(options))
		for i, o := range options {
			usable[i] = d.Usable(o)
			fits[i] = pods[0][0] <= o.CPU && pods[0][1] <= o.Memory
		}
		var groups []Group
		if apart > 1 {
			groups = append(groups, Group{Name: "apart", Count: apart, Fits: fits})
		}
		b := Compute(usable, d.CPU, d.Memory, groups)
		if b.PricePerHour > opt*(1+1e-9) {
			t.Fatalf("trial %d: bound %v above the cheapest packing %v (options %+v, pods %v, apart %d)", trial, b.PricePerHour, opt, options, pods, apart)
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d feasible trials", checked)
	}
}

func TestPerPod(t *testing.T) {
	// cpu-rich: 4 cores, 1 GiB at 1; mem-rich: 1 core, 8 GiB at 1. Pods:
	// one of 1 core and 1/4 GiB, one of 1/8 core and 1 GiB, four of
	// 1 core and 2 GiB that fit only mem-rich. Pooled, the pods' 41/8
	// cores and 37/4 GiB cost 127/124 cpu-rich plus 255/248 mem-rich =
	// 509/248. With shared weights the best is λ = (1, 0, 0), each pod
	// paying its share of the cpu of the cheapest node it fits:
	// min(1/4, 1) + min(1/32, 1/8) + 4·1 = 137/32. With weights per
	// type, mem-rich keeps (1, 0, 0) and cpu-rich takes λm ≥ 3/31, where
	// the second pod's share of it, (1−λm)/32 + λm, reaches its 1/8 of
	// mem-rich; the first pod's share of cpu-rich is 1/4 whatever the
	// weights: 1/4 + 1/8 + 4 = 140/32. The cheapest packing is 6: each
	// 2 GiB pod needs a mem-rich node of its own, and the other two
	// cannot share a node.
	cpuRich, memRich := opt("cpu-rich", 4, 1, 1), opt("mem-rich", 1, 8, 1)
	mixed := []Shape{{CPU: 1000, Memory: gib / 4, Count: 1}, {CPU: 125, Memory: gib, Count: 1}, {CPU: 1000, Memory: 2 * gib, Count: 4}}

	// Pod slots: one pod per node of a type at 2 makes each of three
	// pods of 1/10 core and 1/10 GiB cost the whole node: 6, where the
	// pooled resources cost 0.3 GiB of 2 GiB at 2, 0.3.
	slots := Option{Name: "one-pod", CPU: 2000, Memory: 2 * gib, Pods: 1, PricePerHour: 2}
	tenth := []Shape{{CPU: 100, Memory: gib / 10, Count: 3}}

	// Opposite shapes: cpu-box 4 cores and 1 GiB, mem-box 1 core and
	// 4 GiB, both at 1; two pods of 2 cores and 1/4 GiB fit only
	// cpu-box, two of 1/4 core and 2 GiB only mem-box. Shared weights
	// (λc, λm) charge the pods 2·(λc/2 + λm/4) + 2·(λc/4 + λm/2) = 3/2
	// whatever they are; cpu-box weighing cpu and mem-box memory charge
	// each pod half its node: 2, the cheapest packing (one node of each).
	// Pooled, 9/2 cores and 9/2 GiB cost 9/10 of each type: 9/5.
	cpuBox, memBox := opt("cpu-box", 4, 1, 1), opt("mem-box", 1, 4, 1)
	opposite := []Shape{{CPU: 2000, Memory: gib / 4, Count: 2}, {CPU: 250, Memory: 2 * gib, Count: 2}}

	tests := []struct {
		name      string
		options   []Option
		shapes    []Shape
		wantOld   float64
		want      float64
		wantTotal float64
	}{
		{name: "cpu and memory stay on one node", options: []Option{cpuRich, memRich}, shapes: mixed, wantOld: 509.0 / 248, want: 140.0 / 32, wantTotal: 140.0 / 32},
		{name: "weights per type", options: []Option{cpuBox, memBox}, shapes: opposite, wantOld: 9.0 / 5, want: 2, wantTotal: 2},
		{name: "pod slots", options: []Option{slots}, shapes: tenth, wantOld: 0.3, want: 6, wantTotal: 6},
		// Fits: only the cheap type may take the pods: 3 × 1/4 of it.
		{name: "only allowed types", options: []Option{opt("cheap", 2, 2, 1), opt("dear", 2, 2, 10)},
			shapes: []Shape{{CPU: 500, Memory: gib / 2, Count: 3, Fits: []bool{false, true}}}, wantOld: 0.75, want: 7.5, wantTotal: 7.5},
		// small is beaten by big on every count, but the pod may not use
		// big: small stays and sets its price, 1, not a quarter of huge.
		{name: "a beaten type stays where its better may not go", options: []Option{opt("small", 1, 1, 1), opt("big", 2, 2, 1), opt("huge", 4, 4, 10)},
			shapes: []Shape{{CPU: 1000, Memory: gib, Count: 1, Fits: []bool{true, false, true}}}, wantOld: 0.5, want: 1, wantTotal: 1},
		// Pods of 1.2 of 2 cores cannot share a node: a cut-off at 0.6
		// counts each as a whole node, 3, where their shares sum to 1.8.
		{name: "rounding: cut-off", options: []Option{opt("two-core", 2, 4, 1)},
			shapes: []Shape{{CPU: 1200, Memory: gib, Count: 3}}, wantOld: 1.8, want: 3, wantTotal: 3},
		// Pods of 0.7 of 2 cores go two to a node: the staircase of two
		// steps counts each as half a node, 2.5 for five (the cheapest
		// packing is 3), where their shares sum to 1.75.
		{name: "rounding: staircase", options: []Option{opt("two-core", 2, 4, 1)},
			shapes: []Shape{{CPU: 700, Memory: gib / 4, Count: 5}}, wantOld: 1.75, want: 2.5, wantTotal: 2.5},
		// A single shape on a single type that it fills exactly: both
		// bounds are the price of the nodes.
		{name: "both exact", options: []Option{opt("a", 2, 4, 1)}, shapes: []Shape{{CPU: 1000, Memory: 2 * gib, Count: 4}}, wantOld: 2, want: 2, wantTotal: 2},
		// Nothing fits: the pods add nothing.
		{name: "fits nowhere", options: []Option{opt("a", 1, 1, 1)}, shapes: []Shape{{CPU: 2000, Memory: gib, Count: 4}}, wantOld: 8, want: 0, wantTotal: 8},
		{name: "no pods", options: []Option{cpuRich}, want: 0, wantTotal: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cpu, mem int64
			for _, s := range tc.shapes {
				cpu += s.CPU * int64(s.Count)
				mem += s.Memory * int64(s.Count)
			}
			old := Compute(tc.options, cpu, mem, nil)
			if !near(old.PricePerHour, tc.wantOld) {
				t.Fatalf("Compute = %v, want %v", old.PricePerHour, tc.wantOld)
			}
			got := old.WithPerPod(PerPod(tc.options, tc.shapes))
			if !near(got.PerPod, tc.want) || !near(got.PricePerHour, tc.wantTotal) {
				t.Fatalf("per-pod bound %v, bound %v; want %v, %v", got.PerPod, got.PricePerHour, tc.want, tc.wantTotal)
			}
		})
	}

	// The hand case's packing by brute force.
	var pods [][2]int64
	for _, s := range mixed {
		for range s.Count {
			pods = append(pods, [2]int64{s.CPU, s.Memory})
		}
	}
	if got := cheapestPacking([]Option{cpuRich, memRich}, pods, 0); got != 6 {
		t.Errorf("cheapest packing of the mixed pods = %v, want 6", got)
	}
}

func TestPerPodBelowCheapestPacking(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 3))
	checked, raised, perType := 0, 0, 0
	for trial := range 600 {
		options := make([]Option, 1+r.IntN(3))
		for i := range options {
			options[i] = Option{
				Name:         string(rune('a' + i)),
				CPU:          int64(250 + r.IntN(16)*250),
				Memory:       int64(1+r.IntN(16)) * gib / 4,
				Pods:         int64(r.IntN(4)),
				PricePerHour: 0.01 + r.Float64(),
			}
		}
		// Up to three shapes, each allowed on a random subset of the
		// options (nil: all of them).
		type shape struct {
			req  [2]int64
			fits []bool
		}
		shapes := make([]shape, 1+r.IntN(3))
		for k := range shapes {
			shapes[k].req = [2]int64{int64(r.IntN(9) * 250), int64(r.IntN(9)) * gib / 8}
			if r.IntN(2) == 0 {
				shapes[k].fits = make([]bool, len(options))
				for i := range options {
					shapes[k].fits[i] = r.IntN(3) > 0
				}
			}
		}
		n := 1 + r.IntN(6)
		pods := make([][2]int64, n)
		allowed := make([][]bool, n)
		of := make([]int, n)
		for j := range pods {
			of[j] = r.IntN(len(shapes))
			if j > 0 && r.IntN(3) == 0 {
				of[j] = of[0]
			}
			pods[j] = shapes[of[j]].req
			allowed[j] = make([]bool, len(options))
			for i := range options {
				allowed[j][i] = shapes[of[j]].fits == nil || shapes[of[j]].fits[i]
			}
		}
		apart := 0
		for apart < n && of[apart] == of[0] && r.IntN(2) == 0 {
			apart++
		}
		opt := cheapestAllowed(options, pods, apart, allowed)
		if math.IsInf(opt, 1) {
			continue
		}

		var d Demand
		counts := make([]int, len(shapes))
		for j, p := range pods {
			d.Add(p[0], p[1])
			counts[of[j]]++
		}
		usable := make([]Option, len(options))
		fits := make([]bool, len(options))
		for i, o := range options {
			usable[i] = d.Usable(o)
			fits[i] = allowed[0][i] && pods[0][0] <= o.CPU && pods[0][1] <= o.Memory
		}
		var groups []Group
		if apart > 1 {
			groups = append(groups, Group{Name: "apart", Count: apart, Fits: fits})
		}
		var in []Shape
		for k, s := range shapes {
			in = append(in, Shape{CPU: s.req[0], Memory: s.req[1], Count: counts[k], Fits: s.fits})
		}
		old := Compute(usable, d.CPU, d.Memory, groups)
		perPod := PerPod(usable, in)
		b := old.WithPerPod(perPod)
		if perPod > opt*(1+1e-9) || b.PricePerHour > opt*(1+1e-9) {
			t.Fatalf("trial %d: per-pod bound %v, bound %v above the cheapest packing %v (options %+v, pods %v, shapes %+v, apart %d)",
				trial, perPod, b.PricePerHour, opt, options, pods, in, apart)
		}
		if b.PricePerHour < old.PricePerHour || b.PricePerHour < perPod*(1-1e-9) {
			t.Fatalf("trial %d: bound %v below one of %v and %v", trial, b.PricePerHour, old.PricePerHour, perPod)
		}
		if perPod > old.PricePerHour*(1+1e-6) {
			raised++
		}
		// Weights per type start from the best shared ones and only
		// climb.
		if shared, _ := perPodShared(usable, in); perPod < shared*(1-1e-9) {
			t.Fatalf("trial %d: per-pod bound %v below the shared-weight one %v", trial, perPod, shared)
		} else if perPod > shared*(1+1e-6) {
			perType++
		}
		checked++
	}
	if checked < 150 || raised < 30 || perType < 10 {
		t.Fatalf("only %d feasible trials, %d where the per-pod bound is the larger, %d where weights per type raise it", checked, raised, perType)
	}
	t.Logf("%d feasible trials, %d where the per-pod bound is the larger, %d where weights per type raise it", checked, raised, perType)
}

func TestRoundShare(t *testing.T) {
	tests := []struct {
		x, b, want float64
	}{
		{x: 0.3, b: 1, want: 0.3},
		{x: 1, b: 1, want: 1},
		// Cut-off 0.7: at least 0.7 is whole, at most 0.3 nothing.
		{x: 0.7, b: 0.7, want: 1},
		{x: 0.69, b: 0.7, want: 0.69},
		{x: 0.31, b: 0.7, want: 0.31},
		{x: 0.3, b: 0.7, want: 0},
		{x: 0.3000001, b: 0.7, want: 0}, // within shareSlack of 1−b
		// Two steps: (1/3, 2/3] is a half, above 2/3 whole, exactly 1/3
		// nothing.
		{x: 1.0 / 3, b: -2, want: 0},
		{x: 0.34, b: -2, want: 0.5},
		{x: 2.0 / 3, b: -2, want: 0.5},
		{x: 0.67, b: -2, want: 1},
		{x: 1, b: -2, want: 1},
		// Three steps: quarters of the node count thirds.
		{x: 0.26, b: -3, want: 1.0 / 3},
		{x: 0.51, b: -3, want: 2.0 / 3},
		{x: 0.76, b: -3, want: 1},
		{x: 0.25, b: -3, want: 0},
	}
	for _, tc := range tests {
		if got := roundShare(tc.x, tc.b); !near(got, tc.want) {
			t.Errorf("roundShare(%v, %v) = %v, want %v", tc.x, tc.b, got, tc.want)
		}
	}
	// Whatever the rounding, shares that fit on one node sum to at most 1
	// when rounded.
	r := rand.New(rand.NewPCG(5, 8))
	for range 20000 {
		b := []float64{1, -2, -3, 0.5 + 3*shareSlack + r.Float64()*0.49}[r.IntN(4)]
		left, sum := 1.0, 0.0
		for left > 0 {
			x := min(left, r.Float64()*0.8)
			if r.IntN(4) == 0 {
				x = left // fill the node exactly
			}
			left -= x
			sum += roundShare(x, b)
			if x == 0 {
				break
			}
		}
		if sum > 1+1e-9 {
			t.Fatalf("rounding %v: shares of one node sum to %v", b, sum)
		}
	}
}
