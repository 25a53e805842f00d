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
				for _, o := range options {
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
