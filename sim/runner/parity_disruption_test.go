package runner

import (
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// The scenarios of this file check that disruption behaves as Karpenter
// v1.14 does where stevedore once differed. Each runs one of the scenarios
// under testdata/parity.

// TestParityEmptyBudgets: budgets: [] is no limit at all, not the 10%
// default, which only an absent field gets.
func TestParityEmptyBudgets(t *testing.T) {
	doc := story(t, "testdata/parity/empty-budgets")
	if s := sampleAt(t, doc, 9*time.Minute); s.Nodes != 12 || s.RunningPods != 12 {
		t.Fatalf("before the scale-down: %+v, want 12 nodes with a pod each", s)
	}
	if got := maxInFlight(doc, report.ReasonEmpty); got != 12 {
		t.Errorf("at most %d empty nodes disrupted at once, want all 12 (budgets: [] limits nothing)", got)
	}
	if n := len(doc.Final.Nodes); n != 0 {
		t.Errorf("%d nodes left at the end, want none", n)
	}
}

// TestParitySpotToSpotOff: with SpotToSpotConsolidation off, a spot node
// whose pods would fit on a cheaper node is not replaced at all; stevedore
// once replaced it by on-demand, and that node later by spot again.
func TestParitySpotToSpotOff(t *testing.T) {
	doc := story(t, "testdata/parity/spot-to-spot-off")
	launched := eventsOf(doc, report.KindNodeClaimLaunched)
	if len(launched) != 1 || launched[0].CapacityType != "spot" {
		t.Fatalf("launches %+v, want the one spot node", launched)
	}
	for _, e := range eventsOf(doc, report.KindDisruptionStarted) {
		t.Errorf("%s disruption of %s at %s, want none: spot-to-spot consolidation is off", e.Reason, e.NodeClaim, since(doc, e.Time))
	}
	if n := doc.Final.Nodes; len(n) != 1 || n[0].CapacityType != "spot" {
		t.Errorf("final nodes %+v, want the original spot node", n)
	}
	allRunning(t, doc, 1)
}

// TestParityDaemonSetTimer: a DaemonSet pod landing on a node is not a pod
// event; it does not restart the node's consolidateAfter window.
func TestParityDaemonSetTimer(t *testing.T) {
	doc := story(t, "testdata/parity/daemonset-timer")
	started := eventsOf(doc, report.KindDisruptionStarted)
	if len(started) != 1 || started[0].Reason != report.ReasonEmpty {
		t.Fatalf("disruptions %+v, want the one empty node", started)
	}
	// Its pod left at 2m; consolidateAfter is 10m. The agent came at 10m.
	if at := since(doc, started[0].Time); at < 12*time.Minute || at > 14*time.Minute {
		t.Errorf("empty node disrupted at %s, want soon after 12m (the DaemonSet pod at 10m must not restart its window)", at)
	}
	allRunning(t, doc, 2)
}
