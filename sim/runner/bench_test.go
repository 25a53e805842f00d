package runner

import (
	"os"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// BenchmarkScenario runs the scenario at $SIM_SCENARIO (default: the shipped
// drift-upgrade example) once per iteration, for profiling:
//
//	SIM_SCENARIO=path/to/scenario go test ./sim/runner -run '^$' -bench Scenario -cpuprofile cpu.out
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
	for b.Loop() {
		r, err := New(Options{Run: run, Scheme: s})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Run(); err != nil {
			b.Fatal(err)
		}
		reconciles = r.Stats().Reconciles
	}
	b.ReportMetric(float64(reconciles), "reconciles/run")
}
