package runner

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// BenchmarkScenario runs the scenario at $SIM_SCENARIO (default: the shipped
// drift-upgrade example) once per iteration, for profiling and for the
// figures in docs/performance.md:
//
//	SIM_SCENARIO=path/to/scenario go test ./sim/runner -run '^$' -bench Scenario -cpuprofile cpu.out
//
// Besides the time per run it reports the reconciles of a run, the virtual
// hours it covers, the most nodes and pods (running and pending) of any
// sample, and, where the system tells them, the CPU time per run and the
// process's peak resident memory. hack/bench-simulate.sh runs it on the
// churn benchmark (testdata/churn).
func BenchmarkScenario(b *testing.B) {
	path := os.Getenv("SIM_SCENARIO")
	if path == "" {
		path = "../../examples/drift-upgrade"
	}
	s := testScheme(b)
	run, problems, err := scenario.Load([]string{path}, s)
	if err != nil {
		b.Fatalf("%v: %v", err, problems)
	}
	reconciles := 0
	var by map[string]int
	var doc *report.Document
	cpu0, cpuKnown := cpuTime()
	for b.Loop() {
		r, err := New(Options{Run: run, Scheme: s})
		if err != nil {
			b.Fatal(err)
		}
		if doc, err = r.Run(); err != nil {
			b.Fatal(err)
		}
		reconciles, by = r.Stats().Reconciles, r.Stats().ReconcilesBy
	}
	if cpu1, ok := cpuTime(); ok && cpuKnown {
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	}
	b.ReportMetric(float64(reconciles), "reconciles/run")
	names := slices.Sorted(maps.Keys(by))
	slices.SortStableFunc(names, func(a, b string) int { return by[b] - by[a] })
	// One line: the testing package cuts a benchmark's log after ten lines.
	perController := make([]string, 0, len(names))
	for _, n := range names {
		perController = append(perController, fmt.Sprintf("%s %d", n, by[n]))
	}
	b.Logf("reconciles per controller: %s", strings.Join(perController, ", "))
	b.ReportMetric(run.Duration.Hours(), "virtual-h")
	nodes, pods := 0, 0
	for _, sm := range doc.Samples {
		nodes, pods = max(nodes, sm.Nodes), max(pods, sm.RunningPods+sm.PendingPods)
	}
	b.ReportMetric(float64(nodes), "peak-nodes")
	b.ReportMetric(float64(pods), "peak-pods")
	if mb, ok := peakRSSMiB(); ok {
		b.ReportMetric(mb, "peak-RSS-MiB")
	}
}

// TestChurnScenarioLoads keeps the churn benchmark's input valid: the
// benchmark itself is too long to run with the tests.
func TestChurnScenarioLoads(t *testing.T) {
	run, problems, err := scenario.Load([]string{"testdata/churn"}, testScheme(t))
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	if run.Duration.Hours() != 24 || len(run.Events) != 23*9 {
		t.Errorf("churn: %v with %d events, want 24h with 23 hourly scales of 9 Deployments", run.Duration, len(run.Events))
	}
}

// TestRestartScenarioLoads keeps the restart benchmark's input valid.
func TestRestartScenarioLoads(t *testing.T) {
	run, problems, err := scenario.Load([]string{"testdata/restarts"}, testScheme(t))
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	if run.Duration != 15*time.Minute || len(run.Events) != 600 {
		t.Errorf("restarts: %v with %d events, want 15m with 600 restarts", run.Duration, len(run.Events))
	}
}
