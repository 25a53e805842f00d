package disruption

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// benchTypes are the instance types of the benchmark cluster: general
// purpose, compute and memory families, large to 4xlarge.
var benchTypes = []string{
	"m5.large", "m5.xlarge", "m5.2xlarge", "m5.4xlarge",
	"m6i.large", "m6i.xlarge", "m6i.2xlarge", "m6i.4xlarge",
	"c6i.large", "c6i.xlarge", "c6i.2xlarge", "c6i.4xlarge",
	"r6i.large", "r6i.xlarge", "r6i.2xlarge", "r6i.4xlarge",
	"m7i.large", "m7i.xlarge", "m7i.2xlarge", "m7i.4xlarge",
}

// benchShapes are the pods' requests: cpu (millicores) and memory (MiB).
var benchShapes = [][2]int{{100, 256}, {250, 512}, {500, 1024}, {200, 512}, {750, 1536}}

// bigCluster builds a cluster of nodes nodes, about ten pods a node: half
// the nodes well used (85% of their cpu requested), half underused (20%),
// on-demand, in two zones, all consolidatable.
func bigCluster(tb testing.TB, nodes int) *fixture {
	tb.Helper()
	f := newFixture(tb)
	f.pool("default", benchTypes, []string{wellknown.CapacityTypeOnDemand})
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []string{"us-east-1a", "us-east-1b"}
	made := 0
	for i := 0; i < nodes; i++ {
		itype := benchTypes[rng.IntN(len(benchTypes))]
		name := f.node(nodeSpec{pool: "default", itype: itype, zone: zones[i%len(zones)]})
		alloc := f.types[itype].Allocatable.ResourceList()
		cpu := alloc.Cpu().MilliValue()
		mem := alloc.Memory().Value() >> 20
		target := cpu * 85 / 100
		if i%2 == 1 {
			target = cpu * 20 / 100
		}
		var usedCPU, usedMem int64
		for j := 0; ; j++ {
			s := benchShapes[rng.IntN(len(benchShapes))]
			if j > 0 && (usedCPU+int64(s[0]) > target || usedMem+int64(s[1]) > mem*80/100) {
				break
			}
			usedCPU += int64(s[0])
			usedMem += int64(s[1])
			made++
			f.pod(fmt.Sprintf("p-%05d", made), name, fmt.Sprintf("%dm", s[0]), fmt.Sprintf("%dMi", s[1]),
				labelled("app", fmt.Sprintf("app-%d", made%40)))
		}
	}
	return f
}

// BenchmarkConsolidation decides one pass over 2,000 nodes and about
// 20,000 pods, half of the nodes underused, with no cap on the candidates
// considered.
func BenchmarkConsolidation(b *testing.B) {
	f := bigCluster(b, 2000)
	in := f.input()
	in.Remaining = map[string]map[Reason]int{"default": {ReasonEmpty: 2000, ReasonUnderutilized: 2000, ReasonDrifted: 2000}}
	b.ResetTimer()
	var d Decision
	for i := 0; i < b.N; i++ {
		d = Decide(in)
	}
	b.StopTimer()
	if d.Command == nil {
		b.Fatal("no command")
	}
	if d.Command.Reason != ReasonUnderutilized {
		b.Fatalf("command %s, want consolidation", d.Command)
	}
	b.ReportMetric(float64(len(in.Snapshot.Nodes)), "nodes")
	b.ReportMetric(float64(podCount(in)), "pods")
	b.ReportMetric(float64(len(d.Command.Candidates)), "nodes/pass")
	b.ReportMetric(d.Command.SavingsPerHour, "$/h-saved")
}

// BenchmarkConsolidationCapped is the same pass with the search limited to
// the first 100 candidates, as Karpenter limits it, for comparison.
func BenchmarkConsolidationCapped(b *testing.B) {
	f := bigCluster(b, 2000)
	in := f.input()
	in.Remaining = map[string]map[Reason]int{"default": {ReasonEmpty: 2000, ReasonUnderutilized: 2000, ReasonDrifted: 2000}}
	in.Options.MaxCandidates = 100
	b.ResetTimer()
	var d Decision
	for i := 0; i < b.N; i++ {
		d = Decide(in)
	}
	b.StopTimer()
	if d.Command == nil {
		b.Fatal("no command")
	}
	b.ReportMetric(float64(len(in.Snapshot.Nodes)), "nodes")
	b.ReportMetric(float64(podCount(in)), "pods")
	b.ReportMetric(float64(len(d.Command.Candidates)), "nodes/pass")
	b.ReportMetric(d.Command.SavingsPerHour, "$/h-saved")
}

func podCount(in Input) int {
	n := 0
	for _, sn := range in.Snapshot.Nodes {
		n += len(sn.Pods)
	}
	return n
}

// BenchmarkConsolidationNothingToDo is the steady state the controller
// spends most passes in: every node well used, so every candidate is tried
// and none can go.
func BenchmarkConsolidationNothingToDo(b *testing.B) {
	f := newFixture(b)
	family := []string{"c6i.large", "c6i.xlarge", "c6i.2xlarge", "c6i.4xlarge"}
	f.pool("default", family, []string{wellknown.CapacityTypeOnDemand})
	pods := 0
	for i := 0; i < 2000; i++ {
		itype := family[i%len(family)]
		name := f.node(nodeSpec{pool: "default", itype: itype, zone: "us-east-1a"})
		alloc := f.types[itype].Allocatable.ResourceList()
		// As many 500m pods as fit: less than one pod's room is left on
		// every node, and the family has no cheaper type per cpu.
		for j := int64(0); j < alloc.Cpu().MilliValue()/500; j++ {
			pods++
			f.pod(fmt.Sprintf("p-%05d", pods), name, "500m", "256Mi", labelled("app", fmt.Sprintf("app-%d", pods%40)))
		}
	}
	in := f.input()
	in.Remaining = map[string]map[Reason]int{"default": {ReasonEmpty: 2000, ReasonUnderutilized: 2000, ReasonDrifted: 2000}}
	b.ResetTimer()
	var d Decision
	for i := 0; i < b.N; i++ {
		d = Decide(in)
	}
	b.StopTimer()
	if d.Command != nil {
		b.Fatalf("command %s in a full cluster", d.Command)
	}
	b.ReportMetric(float64(len(in.Snapshot.Nodes)), "nodes")
	b.ReportMetric(float64(pods), "pods")
	b.ReportMetric(float64(len(d.Blocked)), "verdicts")
}

// TestUncappedSearchSavesAtLeastAsMuch compares one pass of the uncapped
// search with the same pass limited to 100 candidates, as Karpenter limits
// it.
func TestUncappedSearchSavesAtLeastAsMuch(t *testing.T) {
	f := bigCluster(t, 400)
	in := f.input()
	in.Remaining = map[string]map[Reason]int{"default": {ReasonEmpty: 400, ReasonUnderutilized: 400, ReasonDrifted: 400}}
	full := Decide(in)
	in.Options.MaxCandidates = 100
	capped := Decide(in)
	if full.Command == nil || capped.Command == nil {
		t.Fatalf("commands %v / %v", full.Command, capped.Command)
	}
	if full.Command.SavingsPerHour < capped.Command.SavingsPerHour {
		t.Fatalf("uncapped saves $%.2f/h, capped $%.2f/h", full.Command.SavingsPerHour, capped.Command.SavingsPerHour)
	}
	if len(full.Command.Candidates) <= 100 {
		t.Errorf("uncapped pass took %d nodes; the cluster has 200 underused", len(full.Command.Candidates))
	}
	// The same input decides the same way.
	in.Options.MaxCandidates = 0
	again := Decide(in)
	if again.Command.String() != full.Command.String() || len(again.Blocked) != len(full.Blocked) {
		t.Fatal("two passes over the same input differ")
	}
}
