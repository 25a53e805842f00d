package runner

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/plan"
	"github.com/stevedore-autoscaler/stevedore/scheduling/lowerbound"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// settleFor is how long the cluster must go unchanged before the end of a
// consolidation benchmark run for its final cost to count as settled.
const settleFor = 30 * time.Minute

// BenchmarkConsolidationQuality runs the churned cluster of
// testdata/consolidation (or $SIM_SCENARIO) until consolidation settles and
// reports what the nodes cost at the end against the lower bound of the
// pods that remain (scheduling/lowerbound over the same NodePools' instance
// types at the same prices, as `stevedore plan` computes it), once with
// stevedore's search and once with multi-node consolidation capped at 100
// candidates, as Karpenter caps it. The figures are deterministic for the
// scenario's seed; only the time per run varies. hack/bench-consolidation.sh
// prints them.
func BenchmarkConsolidationQuality(b *testing.B) {
	path := os.Getenv("SIM_SCENARIO")
	if path == "" {
		path = "testdata/consolidation"
	}
	for _, tc := range []struct {
		name string
		max  int
	}{
		{"search=stevedore", 0},
		{"search=capped100", 100},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := testScheme(b)
			run, problems, err := scenario.Load([]string{path}, s)
			if err != nil {
				b.Fatalf("%v: %v", err, problems)
			}
			run.Controller.MaxConsolidationCandidates = tc.max
			var q consolidationQuality
			for b.Loop() {
				r, err := New(Options{Run: run, Scheme: s})
				if err != nil {
					b.Fatal(err)
				}
				doc, err := r.Run()
				if err != nil {
					b.Fatal(err)
				}
				if q, err = measureConsolidation(r, doc); err != nil {
					b.Fatal(err)
				}
			}
			// An unsettled run is reported, not failed: its figures say
			// how far consolidation got (hack/bench-consolidation.sh marks
			// it).
			if q.settled < settleFor {
				b.Logf("not settled: the cluster last changed %v before the end, less than %v; %s", q.settled, settleFor, q.trace)
			}
			b.ReportMetric(float64(q.pending), "pending")
			b.ReportMetric(float64(q.pods), "pods")
			b.ReportMetric(float64(q.nodes), "nodes")
			b.ReportMetric(q.cost, "$/h")
			b.ReportMetric(q.bound.PricePerHour, "$/h-bound")
			b.ReportMetric(lowerbound.Ratio(q.cost, q.bound.PricePerHour), "cost/lb")
			b.ReportMetric(float64(q.peakNodes), "peak-nodes")
			b.ReportMetric(q.peakCost, "peak-$/h")
			b.ReportMetric(float64(q.disrupted), "disrupted")
			b.ReportMetric(q.settled.Minutes(), "settled-min")
		})
	}
}

// consolidationQuality is the end of a consolidation benchmark run.
type consolidationQuality struct {
	pods, pending, nodes int
	cost                 float64
	bound                lowerbound.Bound
	peakNodes            int
	peakCost             float64
	// disrupted counts the nodes taken away for any reason.
	disrupted int
	// settled is how long before the end the cluster last changed: its
	// nodes, its cost, its pending pods or its nodes being disrupted.
	settled time.Duration
	// trace is the nodes, cost and nodes being disrupted every ten
	// samples, for a run that did not settle.
	trace string
}

// measureConsolidation prices the end of a run against the lower bound of
// the pods left running.
func measureConsolidation(r *Runner, doc *report.Document) (consolidationQuality, error) {
	var q consolidationQuality
	if len(doc.Samples) == 0 {
		return q, nil
	}
	last := doc.Samples[len(doc.Samples)-1]
	q.nodes, q.cost, q.pending = last.Nodes, last.CostPerHour, last.PendingPods
	changed := doc.Samples[0].Time
	for i, sm := range doc.Samples {
		q.peakNodes, q.peakCost = max(q.peakNodes, sm.Nodes), max(q.peakCost, sm.CostPerHour)
		if i == 0 {
			continue
		}
		if i%10 == 0 {
			q.trace += fmt.Sprintf(" %s:%d/%.2f/%d", sm.Time.Sub(doc.Samples[0].Time), sm.Nodes, sm.CostPerHour, sm.Disrupting)
		}
		prev := doc.Samples[i-1]
		if sm.Nodes != prev.Nodes || sm.CostPerHour != prev.CostPerHour || sm.Disrupting > 0 || sm.PendingPods > 0 {
			changed = sm.Time
		}
	}
	q.settled = last.Time.Sub(changed)
	for _, n := range doc.Final.Disruptions {
		q.disrupted += n
	}

	ctx := context.Background()
	var list corev1.PodList
	if err := r.API().List(ctx, &list); err != nil {
		return q, err
	}
	var claim packer.NodeClaim
	var in packer.Input
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		in.Pods = append(in.Pods, pod)
		claim.Pods = append(claim.Pods, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	}
	q.pods = len(in.Pods)
	in.NodePools, _ = provisioning.LaunchablePools(ctx, r.deps.Cloud, r.deps.State.Snapshot(r.clock.Now()))
	q.bound = plan.Bound(in, packer.Result{NodeClaims: []packer.NodeClaim{claim}})
	return q, nil
}

// TestConsolidationScenarioLoads keeps the consolidation benchmark's input
// valid: the benchmark itself is too long to run with the tests.
func TestConsolidationScenarioLoads(t *testing.T) {
	run, problems, err := scenario.Load([]string{"testdata/consolidation"}, testScheme(t))
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	if run.Controller.MaxConsolidationCandidates != 0 {
		t.Errorf("the scenario caps consolidation at %d candidates; only the benchmark's capped run should", run.Controller.MaxConsolidationCandidates)
	}
	if len(run.Events) != 4 || run.Duration < time.Hour+settleFor {
		t.Errorf("consolidation: %v with %d events, want 4 scale-downs and time to settle", run.Duration, len(run.Events))
	}
}
