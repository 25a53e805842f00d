package runner

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
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
	doc, stats := loopRuns(b, run, s)
	reconciles, by := stats.Reconciles, stats.ReconcilesBy
	b.ReportMetric(float64(reconciles), "reconciles/run")
	names := slices.Sorted(maps.Keys(by))
	slices.SortStableFunc(names, func(a, b string) int { return by[b] - by[a] })
	// One line: the testing package cuts a benchmark's log after ten lines.
	perController := make([]string, 0, len(names))
	for _, n := range names {
		perController = append(perController, fmt.Sprintf("%s %d", n, by[n]))
	}
	b.Logf("reconciles per controller: %s", strings.Join(perController, ", "))
	// Wall-clock time per controller, the slowest first: all of it, and its
	// longest reconcile (for the provisioner and disruption, one decision).
	slices.SortStableFunc(names, func(a, b string) int { return int(stats.TimeBy[b] - stats.TimeBy[a]) })
	timed := make([]string, 0, len(names))
	for _, n := range names {
		timed = append(timed, fmt.Sprintf("%s %.1fs (longest %.2fs)", n, stats.TimeBy[n].Seconds(), stats.SlowestBy[n].Seconds()))
	}
	b.Logf("wall time per controller: %s", strings.Join(timed, ", "))
	for _, n := range []string{"provisioner", "disruption"} {
		b.ReportMetric(stats.SlowestBy[n].Seconds(), n+"-longest-s")
	}
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

// TestBenchmarkScenariosLoad keeps the benchmarks' inputs valid: the
// benchmarks themselves are too long to run with the tests.
func TestBenchmarkScenariosLoad(t *testing.T) {
	for _, tc := range []struct {
		dir      string
		duration time.Duration
		events   int
		what     string
	}{
		{"testdata/churn", 24 * time.Hour, 23 * 9, "23 hourly scales of 9 Deployments"},
		{"testdata/scale5k", 24 * time.Hour, 23 * 9, "the churn's scales, 28 times the replicas"},
		{"testdata/drift2k", 3 * time.Hour, 1, "one image release"},
		{"testdata/userdata", 2 * time.Hour, 6, "6 scales"},
		{"testdata/restarts", 15 * time.Minute, 600, "600 restarts"},
	} {
		run, problems, err := scenario.Load([]string{tc.dir}, testScheme(t))
		if err != nil {
			t.Fatalf("%s: %v: %v", tc.dir, err, problems)
		}
		if run.Duration != tc.duration || len(run.Events) != tc.events {
			t.Errorf("%s: %v with %d events, want %v with %s", tc.dir, run.Duration, len(run.Events), tc.duration, tc.what)
		}
	}
}

// BenchmarkUserDataSize runs testdata/userdata, two hours in which 160
// nodes launch, register and go, with spec.userData of the node class small
// and large: for AL2023 a shell script of 40 and of 15,000 bytes, for
// Bottlerocket TOML settings of about 100 and 12,000 bytes (rewritten with
// stevedore's settings, which indents them, 12,000 bytes come to some
// 15,000). Each stays within EC2's 16 KB limit once merged with the
// simulated cluster's bootstrap configuration. The time per run should not
// depend on the size (docs/performance.md):
//
//	go test ./sim/runner -run '^$' -bench UserDataSize -benchtime 3x
func BenchmarkUserDataSize(b *testing.B) {
	for _, tc := range []struct {
		name  string
		alias string
		data  string
	}{
		{"AL2023/userData=small", "al2023@latest", shellScript(40)},
		{"AL2023/userData=15KB", "al2023@latest", shellScript(15000)},
		{"Bottlerocket/userData=small", "bottlerocket@latest", sysctlSettings(100)},
		{"Bottlerocket/userData=12KB", "bottlerocket@latest", sysctlSettings(12000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := testScheme(b)
			run, problems, err := scenario.Load([]string{"testdata/userdata"}, s)
			if err != nil {
				b.Fatalf("%v: %v", err, problems)
			}
			for _, o := range run.Objects {
				if nc, ok := o.Object.(*awsv1.EC2NodeClass); ok {
					nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.alias}}
					nc.Spec.UserData = &tc.data
				}
			}
			doc, _ := loopRuns(b, run, s)
			launched := 0
			for _, e := range doc.Events {
				switch e.Kind {
				case report.KindNodeClaimLaunched:
					launched++
				case report.KindNodeClaimLaunchFailed:
					b.Fatalf("a launch failed, so the run does not measure launches: %s %s", e.Reason, e.Message)
				}
			}
			if launched < 100 {
				b.Fatalf("%d launches, want the scenario's 160", launched)
			}
			b.ReportMetric(float64(launched), "launches/run")
		})
	}
}

// shellScript is a shell script of n bytes (n >= 13): echo lines, then a
// comment that makes up the rest.
func shellScript(n int) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for i := 0; ; i++ {
		line := fmt.Sprintf("echo 'setting up the node: step %05d' >> /var/log/setup.log\n", i)
		if b.Len()+len(line)+1 > n {
			break
		}
		b.WriteString(line)
	}
	b.WriteString(strings.Repeat("#", n-b.Len()-1) + "\n")
	return b.String()
}

// sysctlSettings is Bottlerocket TOML of about n bytes (at least one
// setting): kernel settings, which the merge keeps.
func sysctlSettings(n int) string {
	var b strings.Builder
	b.WriteString("[settings.kernel.sysctl]\n")
	for i := 0; i == 0 || b.Len() < n-45; i++ {
		fmt.Fprintf(&b, "\"net.ipv4.conf.eth%05d.rp_filter\" = \"1\"\n", i)
	}
	return b.String()
}

// loopRuns simulates run once per benchmark iteration, reports the CPU time
// per run where the system tells it, and returns the last run's report and
// counters.
func loopRuns(b *testing.B, run *scenario.Run, s *runtime.Scheme) (*report.Document, Stats) {
	b.Helper()
	var doc *report.Document
	var stats Stats
	cpu0, cpuKnown := cpuTime()
	for b.Loop() {
		r, err := New(Options{Run: run, Scheme: s})
		if err != nil {
			b.Fatal(err)
		}
		if doc, err = r.Run(); err != nil {
			b.Fatal(err)
		}
		stats = r.Stats()
	}
	if cpu1, ok := cpuTime(); ok && cpuKnown {
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	}
	return doc, stats
}
