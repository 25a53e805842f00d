package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// smallScenario is a quick run: one on-demand pool over four instance types
// and a deployment of four pods, for ten minutes.
const smallScenario = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
---
apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: small}
spec:
  duration: 10m
  aws: {instanceTypes: [m6i.large, m6i.xlarge, c6i.large, c6i.xlarge]}
`

func scenarioFile(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimulateSummaryAndJSON(t *testing.T) {
	path := scenarioFile(t, smallScenario)
	out, stderr, err := run(t, "", "simulate", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"Scenario small, seed 1", "Nodes at the end:", "NODEPOOL", "Pods: 4 running, 0 pending", "Cost: $", "Simulated 10m0s in"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	out, stderr, err = run(t, "", "simulate", path, "--output", "json", "--seed", "9")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc struct {
		SchemaVersion int    `json:"schemaVersion"`
		Scenario      string `json:"scenario"`
		Seed          uint64 `json:"seed"`
		Events        []any  `json:"events"`
		Samples       []any  `json:"samples"`
		Final         struct {
			Pods struct{ Running int } `json:"pods"`
		} `json:"final"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if doc.SchemaVersion != 2 || doc.Scenario != "small" || doc.Seed != 9 || len(doc.Events) == 0 || len(doc.Samples) != 11 || doc.Final.Pods.Running != 4 {
		t.Errorf("document %+v", doc)
	}
	if stderr != "" {
		t.Errorf("stderr that is not a terminal got %q", stderr)
	}
	again, _, err := run(t, "", "simulate", path, "-o", "json", "--seed", "9")
	if err != nil || again != out {
		t.Errorf("a second run with the same seed differs (%v)", err)
	}
}

func TestSimulateRejectsBadInput(t *testing.T) {
	path := scenarioFile(t, strings.Replace(smallScenario, "  duration: 10m", "  duration: 10 minutes\n  events: [{at: 1m, nodeFailur: {count: 1}}]", 1))
	out, stderr, err := run(t, "", "simulate", path)
	if !errors.Is(err, errSilentFailure) {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{"spec.duration: \"10 minutes\" is not a duration", "spec.events[0].nodeFailur: unknown event kind", "did you mean nodeFailure?"} {
		if !strings.Contains(out, want) {
			t.Errorf("problems lack %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "2 errors") {
		t.Errorf("stderr %q", stderr)
	}
	if _, _, err := run(t, "", "simulate", path, "-o", "xml"); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("-o xml: %v", err)
	}
	if _, _, err := run(t, "", "simulate"); err == nil {
		t.Error("no path accepted")
	}
	// --check prints verdicts, not a run: what it would ignore is refused.
	good := scenarioFile(t, smallScenario)
	for _, args := range [][]string{{"--check", "-o", "json"}, {"--check", "-o", "text"}, {"--check", "--report", filepath.Join(t.TempDir(), "r.html")}} {
		if _, _, err := run(t, "", append([]string{"simulate", good}, args...)...); err == nil || !strings.Contains(err.Error(), "--check") {
			t.Errorf("%v: %v, want --check refusing it", args, err)
		}
	}
}

// TestProgressLine checks the progress line's text and that it is drawn at
// most every progressInterval of wall time.
func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	run := &scenario.Run{Start: start, Duration: 24 * time.Hour}
	var wall time.Time
	var b bytes.Buffer
	progress := progressLine(&b, run, func() time.Time { return wall })
	for _, step := range []struct {
		wall, virtual time.Duration
		want          string
	}{
		{0, 15 * time.Minute, "simulated 15m of 24h (1%)"},
		{100 * time.Millisecond, time.Hour, ""},
		{200 * time.Millisecond, 2 * time.Hour, ""},
		{300 * time.Millisecond, 3*time.Hour + 10*time.Minute, "simulated 3h10m of 24h (13%)"},
		{500 * time.Millisecond, 4 * time.Hour, ""},
		{2 * time.Second, 23*time.Hour + 59*time.Minute + 30*time.Second, "simulated 23h59m30s of 24h (99%)"},
	} {
		b.Reset()
		wall = time.Unix(0, 0).Add(step.wall)
		progress(start.Add(step.virtual))
		got := strings.TrimSpace(strings.TrimPrefix(b.String(), "\r"))
		if got != step.want || (got != "" && !strings.HasPrefix(b.String(), "\r")) {
			t.Errorf("at %s of wall time: %q, want %q", step.wall, b.String(), step.want)
		}
	}
}

// TestProgressOnlyOnATerminal checks that neither a buffer, a file nor
// /dev/null counts as a terminal, so that their output stays the same from
// run to run.
func TestProgressOnlyOnATerminal(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "err"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for name, w := range map[string]io.Writer{"a buffer": &bytes.Buffer{}, "a file": file, os.DevNull: devNull} {
		if isTerminal(w) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}

// --check runs each seed of --seeds under faults and prints a line per seed
// and the summary; --seeds alone is refused.
func TestSimulateCheckSeeds(t *testing.T) {
	out, _, err := run(t, "", "simulate", "../../examples/chaos/drift", "--check", "--seeds", "3,5")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"chaos-drift seed 3: ok", "chaos-drift seed 5: ok", "2 runs, 0 violations"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The same scenario from standard input: every run reads it, not only
	// the first, and the seed's report is the same.
	var stdin strings.Builder
	for _, f := range []string{"manifests.yaml", "scenario.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../examples/chaos/drift", f))
		if err != nil {
			t.Fatal(err)
		}
		stdin.Write(data)
		stdin.WriteString("\n---\n")
	}
	fromStdin, _, err := run(t, stdin.String(), "simulate", "-", "--check", "--seeds", "3")
	if err != nil {
		t.Fatalf("from standard input: %v\n%s", err, fromStdin)
	}
	if first := strings.SplitN(out, "\n", 2)[0]; !strings.Contains(fromStdin, first) {
		t.Errorf("from standard input:\n%s\nwant the line %q", fromStdin, first)
	}
	if _, _, err := run(t, "", "simulate", "../../examples/chaos/drift", "--seeds", "1-2"); err == nil || !strings.Contains(err.Error(), "--check") {
		t.Errorf("--seeds without --check: %v", err)
	}
}
