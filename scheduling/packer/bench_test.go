package packer_test

import (
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/plan"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads/karpenterbench"
)

func cost(r packer.Result) float64 {
	var c float64
	for _, nc := range r.NodeClaims {
		c += nc.PricePerHour
	}
	return c
}

// cpuTime is the CPU time this process has used, all threads: on a shared
// machine it says more about a solve than the wall clock does.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runBench(b *testing.B, in packer.Input) {
	b.ReportAllocs()
	var r packer.Result
	b.ResetTimer()
	cpu := cpuTime(b)
	for b.Loop() {
		r = packer.Solve(in)
	}
	b.StopTimer()
	b.ReportMetric((cpuTime(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
	if len(r.Unschedulable) > 0 || len(r.Ignored) > 0 {
		b.Fatalf("%d pods unschedulable, %d ignored; first: %+v", len(r.Unschedulable), len(r.Ignored), r.Unschedulable[0])
	}
	b.ReportMetric(float64(len(in.Pods))/(b.Elapsed().Seconds()/float64(b.N)), "pods/s")
	b.ReportMetric(float64(len(r.NodeClaims)), "nodes")
	b.ReportMetric(cost(r), "$/hour")
	if lb := plan.Bound(in, r).PricePerHour; lb > 0 {
		b.ReportMetric(cost(r)/lb, "cost/lb")
	}
}

// catalogInput is the benchmark workload against the embedded EC2 catalog
// (1,363 types; spot at the default fraction of on-demand) instead of the 400
// synthetic types, offered in the benchmark's three zones.
func catalogInput(b *testing.B, pods func(int) []*corev1.Pod, n int, policy packer.PreferencePolicy) packer.Input {
	b.Helper()
	in := karpenterbench.Input(pods(n), policy)
	in.NodePools = []packer.NodePool{catalogPool(b)}
	return in
}

// catalogPool is Karpenter's benchmark NodePool over every type of the
// embedded catalog offered in the benchmark's zones.
func catalogPool(tb testing.TB) packer.NodePool {
	tb.Helper()
	types, err := offerings.Catalog(offerings.Options{Zones: karpenterbench.Zones})
	if err != nil {
		tb.Fatal(err)
	}
	var offered []*packer.InstanceType
	for _, it := range types {
		if len(it.Offerings) > 0 {
			offered = append(offered, it)
		}
	}
	return karpenterbench.NodePool(offered)
}

// BenchmarkPack packs the diverse workload on Karpenter's benchmark types,
// whose allocatable is their capacity less the fake provider's overhead.
func BenchmarkPack(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			runBench(b, karpenterbench.Input(karpenterbench.DiversePods(n), packer.PreferenceScore))
		})
	}
}

// BenchmarkPackWithoutOverhead packs the same pods on the same types with
// allocatable equal to capacity, as the benchmark types were before they
// reserved the overhead.
func BenchmarkPackWithoutOverhead(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			runBench(b, karpenterbench.InputWithoutOverhead(karpenterbench.DiversePods(n), packer.PreferenceScore))
		})
	}
}

func BenchmarkPreferences(b *testing.B) {
	for _, p := range []packer.PreferencePolicy{packer.PreferenceScore, packer.PreferenceRespect, packer.PreferenceIgnore} {
		b.Run(string(p), func(b *testing.B) {
			runBench(b, karpenterbench.Input(karpenterbench.PreferencePods(4000), p))
		})
	}
}

func BenchmarkPackCatalog(b *testing.B) {
	for _, n := range []int{1000, 20000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			runBench(b, catalogInput(b, karpenterbench.DiversePods, n, packer.PreferenceScore))
		})
	}
}

// BenchmarkBoundCatalog times the lower bound that the cost ratios above
// divide by (plan.Bound, as stevedore plan computes it) on the catalog
// plans, and reports it in $/hour; the plan is solved before the timer
// starts.
func BenchmarkBoundCatalog(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in := catalogInput(b, karpenterbench.DiversePods, n, packer.PreferenceScore)
			r := packer.Solve(in)
			b.ReportAllocs()
			b.ResetTimer()
			var lb float64
			for b.Loop() {
				lb = plan.Bound(in, r).PricePerHour
			}
			b.ReportMetric(lb, "lb-$/hour")
		})
	}
}

func BenchmarkPreferencesCatalog(b *testing.B) {
	for _, p := range []packer.PreferencePolicy{packer.PreferenceScore, packer.PreferenceIgnore} {
		b.Run(string(p), func(b *testing.B) {
			runBench(b, catalogInput(b, karpenterbench.PreferencePods, 4000, p))
		})
	}
}

// BenchmarkReplay packs the diverse workload on the benchmark types and on
// the catalog, then binds the plan's pods in creation order (the order of
// the input) and reports, besides the figures of the other benchmarks, the
// bindings that break each kind of constraint (replay), how many pods with
// a zone spread constraint each zone holds, and the largest difference
// between two zones' counts of the pods a zone spread constraint selects
// (selected-skew) and of those that carry it (owner-skew).
func BenchmarkReplay(b *testing.B) {
	for _, where := range []string{"Pack", "Catalog"} {
		for _, n := range []int{1000, 10000, 20000} {
			b.Run(fmt.Sprintf("%s/%d", where, n), func(b *testing.B) {
				in := karpenterbench.Input(karpenterbench.DiversePods(n), packer.PreferenceScore)
				if where == "Catalog" {
					in = catalogInput(b, karpenterbench.DiversePods, n, packer.PreferenceScore)
				}
				var r packer.Result
				for b.Loop() {
					r = packer.Solve(in)
				}
				b.StopTimer()
				b.ReportMetric(float64(len(r.NodeClaims)), "nodes")
				b.ReportMetric(cost(r), "$/hour")
				if lb := plan.Bound(in, r).PricePerHour; lb > 0 {
					b.ReportMetric(cost(r)/lb, "cost/lb")
				}
				rep := replay(b, in, r)
				if rep.bound != n {
					b.Fatalf("%d of %d pods bound", rep.bound, n)
				}
				b.ReportMetric(float64(rep.violations[violZoneSpread]), "zone-spread-violations")
				b.ReportMetric(float64(rep.violations[violHostSpread]), "hostname-spread-violations")
				b.ReportMetric(float64(rep.total()-rep.violations[violZoneSpread]-rep.violations[violHostSpread]), "other-violations")
				for _, z := range karpenterbench.Zones {
					b.ReportMetric(float64(rep.zoneSpreadPods[z]), "zone-spread-pods-in-"+z)
				}
				b.ReportMetric(float64(rep.selectedSkew), "selected-skew")
				b.ReportMetric(float64(rep.ownerSkew), "owner-skew")
				if testing.Verbose() {
					b.Log(rep)
				}
			})
		}
	}
}

// BenchmarkDiverseSamples packs several samples of the diverse workload (the
// pods a Generator makes over consecutive calls, the first being
// DiversePods') and reports the mean, least and greatest ratio of cost to
// the lower bound. One sample's ratio moves by a few hundredths with any
// change in how the packer breaks ties; the mean over samples shows whether
// a change helps or hurts on the whole.
func BenchmarkDiverseSamples(b *testing.B) {
	const samples = 10
	for _, where := range []string{"Pack", "Catalog"} {
		for _, n := range []int{1000, 5000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", where, n), func(b *testing.B) {
				var sum, lo, hi float64
				for b.Loop() {
					g := karpenterbench.NewGenerator()
					sum, lo, hi = 0, 0, 0
					for i := range samples {
						pods := g.DiversePods(n)
						in := karpenterbench.Input(pods, packer.PreferenceScore)
						if where == "Catalog" {
							in = catalogInput(b, func(int) []*corev1.Pod { return pods }, n, packer.PreferenceScore)
						}
						r := packer.Solve(in)
						ratio := cost(r) / plan.Bound(in, r).PricePerHour
						sum += ratio
						if i == 0 || ratio < lo {
							lo = ratio
						}
						hi = max(hi, ratio)
					}
				}
				b.ReportMetric(sum/samples, "mean-cost/lb")
				b.ReportMetric(lo, "min-cost/lb")
				b.ReportMetric(hi, "max-cost/lb")
			})
		}
	}
}
