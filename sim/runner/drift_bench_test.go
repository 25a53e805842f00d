package runner

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/sim/chaos"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
	"github.com/stevedore-autoscaler/stevedore/sim/whatif"
)

// BenchmarkDriftRollout runs testdata/drift2k (or $SIM_SCENARIO): about
// 2,000 nodes whose image family releases a new AMI an hour in, so that
// every node drifts and is replaced under a NodePool budget of 10 % and a
// PodDisruptionBudget of 10 % per Deployment. Besides the time per run it
// reports how long the rollout took, from the first disruption to the last
// one finished (the virtual minutes; -1 while one is unfinished at the
// end), the nodes replaced, the most nodes disrupting at once against what
// the budget allowed then, the pods pending at worst, the evictions the
// PodDisruptionBudgets refused, and the safety checks of chaos runs on the
// budgets and PDBs: a disruption over a NodePool's budget, an eviction
// granted past a PDB. The figures are deterministic for the scenario's seed.
// hack/bench-simulate.sh does not run it; docs/performance.md gives the
// command:
//
//	go test ./sim/runner -run '^$' -bench DriftRollout -benchtime 1x -timeout 3h
func BenchmarkDriftRollout(b *testing.B) {
	path := os.Getenv("SIM_SCENARIO")
	if path == "" {
		path = "testdata/drift2k"
	}
	s := testScheme(b)
	run, problems, err := scenario.Load([]string{path}, s)
	if err != nil {
		b.Fatalf("%v: %v", err, problems)
	}
	doc, stats := loopRuns(b, run, s)
	sum := whatif.Summarize(doc)
	rollout := -1.0
	if sum.RolloutStart != nil && sum.RolloutEnd != nil {
		rollout = sum.RolloutEnd.Sub(*sum.RolloutStart).Minutes()
	}
	b.ReportMetric(rollout, "rollout-min")
	b.ReportMetric(float64(sum.Disruptions["Drifted"]), "drifted")
	// The nodes when the rollout began (the last sample before it), and
	// at the end by image: a finished rollout leaves only the new one.
	before := 0
	for _, smp := range doc.Samples {
		if sum.RolloutStart != nil && smp.Time.After(*sum.RolloutStart) {
			break
		}
		before = smp.Nodes
	}
	b.ReportMetric(float64(before), "nodes-before")
	b.ReportMetric(float64(sum.NodesAtEnd), "nodes-end")
	images := map[string]int{}
	for _, n := range doc.Final.Nodes {
		images[n.ImageID]++
	}
	for _, id := range slices.Sorted(maps.Keys(images)) {
		b.Logf("nodes at the end with image %s: %d", id, images[id])
	}
	for _, p := range sum.BudgetPeaks {
		b.Logf("budget peak: NodePool %s, %s: %d disrupting, %d allowed", p.NodePool, p.Reason, p.Disrupting, p.Allowed)
		if p.Reason == "Drifted" {
			b.ReportMetric(float64(p.Disrupting), "peak-disrupting")
			b.ReportMetric(float64(p.Allowed), "allowed")
		}
	}
	refusals := 0
	for _, w := range sum.BudgetWaits {
		refusals += w.Refusals
	}
	b.ReportMetric(float64(refusals), "pdb-refusals")
	b.ReportMetric(float64(sum.PendingPeak), "pending-peak")
	b.ReportMetric(sum.PendingPodMinutes, "pending-pod-min")
	violations := 0
	for _, v := range chaos.Check(doc, chaos.CheckOptions{}) {
		if v.Invariant == chaos.BudgetExceeded || v.Invariant == chaos.PDBViolated {
			violations++
			b.Errorf("%s", v)
		}
	}
	b.ReportMetric(float64(violations), "violations")
	for _, n := range []string{"provisioner", "disruption"} {
		b.ReportMetric(stats.SlowestBy[n].Seconds(), n+"-longest-s")
	}
	if mb, ok := peakRSSMiB(); ok {
		b.ReportMetric(mb, "peak-RSS-MiB")
	}
}
