package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// simulate loads and runs the scenario at paths and returns its JSON.
func simulate(t *testing.T, paths ...string) []byte {
	t.Helper()
	s := testScheme(t)
	run, problems, err := scenario.Load(paths, s)
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	return runJSON(t, run, s)
}

// runDoc runs a loaded scenario and returns the runner, for a look at its
// account, and the report.
func runDoc(t *testing.T, run *scenario.Run, s *runtime.Scheme) (*Runner, *report.Document) {
	t.Helper()
	r, err := New(Options{Run: run, Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := r.Run()
	if err != nil {
		t.Fatal(err)
	}
	return r, doc
}

// runJSON runs a loaded scenario and returns its JSON document.
func runJSON(t *testing.T, run *scenario.Run, s *runtime.Scheme) []byte {
	t.Helper()
	_, doc := runDoc(t, run, s)
	var b bytes.Buffer
	if err := doc.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func decode(t *testing.T, data []byte) *report.Document {
	t.Helper()
	doc := &report.Document{}
	if err := json.Unmarshal(data, doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func eventsOf(doc *report.Document, kind string) []report.Event {
	var out []report.Event
	for _, e := range doc.Events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// sampleAt returns the sample taken at the start plus d.
func sampleAt(t *testing.T, doc *report.Document, d time.Duration) report.Sample {
	t.Helper()
	for _, s := range doc.Samples {
		if s.Time.Equal(doc.Start.Add(d)) {
			return s
		}
	}
	t.Fatalf("no sample at %s", d)
	return report.Sample{}
}

const (
	oldImage = "ami-0f676a166352f02ab"
	newImage = "ami-0c4dea04571b1b508"
)

// TestDriftUpgrade runs the shipped drift-upgrade scenario twice, checks
// that both runs give the same bytes, and checks its story: checkout grows
// the pool to two nodes; after the AMI change the Drifted budget of 1
// replaces them one at a time, each replacement initialized before the old
// node goes; at the end every node runs the new image and all 10 pods run.
func TestDriftUpgrade(t *testing.T) {
	first := simulate(t, "../../examples/drift-upgrade")
	if testing.Short() {
		t.Log("short: not running the scenario a second time")
	} else if second := simulate(t, "../../examples/drift-upgrade"); !bytes.Equal(first, second) {
		_ = os.WriteFile(filepath.Join(t.TempDir(), "first.json"), first, 0o644)
		t.Fatal("two runs of the same scenario and seed differ")
	}
	doc := decode(t, first)

	if s := sampleAt(t, doc, 29*time.Minute); s.Nodes != 2 || s.ReadyNodes != 2 || s.RunningPods != 10 || s.PendingPods != 0 {
		t.Errorf("before the upgrade: %+v, want 2 ready nodes and 10 running pods", s)
	}
	before := map[string]bool{}
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
		if e.Time.Before(doc.Start.Add(30 * time.Minute)) {
			if e.ImageID != oldImage {
				t.Errorf("%s launched with %s before the upgrade", e.NodeClaim, e.ImageID)
			}
			before[e.NodeClaim] = true
		}
	}
	if len(before) != 2 {
		t.Errorf("%d NodeClaims launched before the upgrade, want 2", len(before))
	}

	// One at a time, replacement first.
	initialized := 0
	inFlight := map[string]bool{}
	maxInFlight := 0
	for _, e := range doc.Events {
		switch e.Kind {
		case report.KindDisruptionStarted:
			if e.Reason != report.ReasonDrifted || !before[e.NodeClaim] {
				t.Errorf("unexpected disruption %+v", e)
			}
			inFlight[e.NodeClaim] = true
			maxInFlight = max(maxInFlight, len(inFlight))
		case report.KindNodeInitialized:
			if e.ImageID == newImage {
				initialized++
			}
		case report.KindInstanceTerminated:
			// The budget counts a disruption until its instance is
			// terminating.
			delete(inFlight, e.NodeClaim)
		case report.KindNodeDeleted:
			if before[e.NodeClaim] {
				gone := 2 - countNodes(doc, e)
				if initialized < gone {
					t.Errorf("%s: old node %s deleted with %d replacement(s) initialized", e.Time.Sub(doc.Start), e.Node, initialized)
				}
			}
		}
	}
	if maxInFlight != 1 {
		t.Errorf("%d drifted nodes disrupted at once, want 1 (the Drifted budget)", maxInFlight)
	}
	if got := doc.Final.Disruptions[report.ReasonDrifted]; got != 2 {
		t.Errorf("%d drift disruptions, want 2", got)
	}
	if len(doc.Final.Nodes) != 2 {
		t.Errorf("%d nodes at the end, want 2", len(doc.Final.Nodes))
	}
	for _, n := range doc.Final.Nodes {
		if n.ImageID != newImage || !n.Ready || n.NodePool != "default" {
			t.Errorf("final node %s: image %s ready %v pool %s", n.Name, n.ImageID, n.Ready, n.NodePool)
		}
	}
	if p := doc.Final.Pods; p.Running != 10 || p.Pending != 0 || len(doc.Final.Unschedulable) != 0 {
		t.Errorf("final pods %+v, unschedulable %v", p, doc.Final.Unschedulable)
	}
	// The budget keeps 9 of 10 checkout pods running through the upgrade.
	for _, s := range doc.Samples {
		if s.Time.After(doc.Start.Add(10*time.Minute)) && s.RunningPods < 9 {
			t.Errorf("%s: only %d pods running", s.Time.Sub(doc.Start), s.RunningPods)
		}
	}
	if doc.Final.Cost <= 0 || doc.Final.NodeHours < 1.8 || doc.Final.NodeHours > 2.5 {
		t.Errorf("cost %v for %v node-hours", doc.Final.Cost, doc.Final.NodeHours)
	}
	if len(doc.Warnings) > 0 {
		t.Errorf("warnings: %v", doc.Warnings)
	}
}

// countNodes counts the old nodes still there after the event.
func countNodes(doc *report.Document, at report.Event) int {
	launched, deleted := 0, 0
	for _, e := range doc.Events {
		if e.Time.After(at.Time) {
			break
		}
		if e.ImageID != oldImage {
			continue
		}
		switch e.Kind {
		case report.KindNodeInitialized:
			launched++
		case report.KindNodeDeleted:
			deleted++
		}
	}
	return launched - deleted
}
