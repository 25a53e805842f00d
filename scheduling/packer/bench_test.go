package packer_test

import (
	"fmt"
	"testing"

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

func runBench(b *testing.B, in packer.Input) {
	b.ReportAllocs()
	var r packer.Result
	b.ResetTimer()
	for b.Loop() {
		r = packer.Solve(in)
	}
	b.StopTimer()
	if len(r.Unschedulable) > 0 || len(r.Ignored) > 0 {
		b.Fatalf("%d pods unschedulable, %d ignored; first: %+v", len(r.Unschedulable), len(r.Ignored), r.Unschedulable[0])
	}
	b.ReportMetric(float64(len(in.Pods))/(b.Elapsed().Seconds()/float64(b.N)), "pods/s")
	b.ReportMetric(float64(len(r.NodeClaims)), "nodes")
	b.ReportMetric(cost(r), "$/hour")
}

func BenchmarkPack(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			runBench(b, karpenterbench.Input(karpenterbench.DiversePods(n), packer.PreferenceScore))
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
