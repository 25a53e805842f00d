package runner

import (
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// TestSmallPoolBudget: a NodePool of two nodes with the default budget
// (10%, rounded up to one node) consolidates one of them once both are
// underused. The one slot is taken only by the command carried out: a
// candidate tried first that cannot go does not keep the other from going.
// stevedore once kept every candidate but the first out of single-node
// consolidation, reporting it as BudgetExhausted, so a pool whose first
// candidate could not go was never consolidated.
func TestSmallPoolBudget(t *testing.T) {
	const scaleDown = 10 * time.Minute
	tests := []struct {
		dir string
		// gone is the instance type of the node consolidated, kept that of
		// the node left.
		gone, kept string
		pods       int
	}{
		// Two alike nodes: the first candidate tried goes.
		{dir: "testdata/parity/small-pool-budget-alike", gone: "m6i.large", kept: "m6i.large", pods: 3},
		// The xlarge is tried first but cannot go; the large goes.
		{dir: "testdata/parity/small-pool-budget", gone: "m6i.large", kept: "m6i.xlarge", pods: 2},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			doc := story(t, tc.dir)
			if s := sampleAt(t, doc, scaleDown-time.Minute); s.Nodes != 2 {
				t.Fatalf("before the scale-down: %+v, want 2 nodes", s)
			}
			started := eventsOf(doc, report.KindDisruptionStarted)
			if len(started) != 1 {
				var blocked []string
				for _, e := range eventsOf(doc, report.KindDisruptionBlocked) {
					blocked = append(blocked, since(doc, e.Time).String()+" "+e.Object+": "+e.Message)
				}
				t.Fatalf("disruptions %+v, want one; blocked: %v", started, blocked)
			}
			e := started[0]
			if e.Reason != report.ReasonUnderutilized || e.InstanceType != tc.gone {
				t.Errorf("disrupted %s (%s) for %s, want a %s for %s", e.NodeClaim, e.InstanceType, e.Reason, tc.gone, report.ReasonUnderutilized)
			}
			if at := since(doc, e.Time); at < scaleDown || at > scaleDown+10*time.Minute {
				t.Errorf("consolidated at %s, want within 10m of the scale-down at %s", at, scaleDown)
			}
			if n := doc.Final.Nodes; len(n) != 1 || n[0].InstanceType != tc.kept {
				t.Errorf("final nodes %+v, want the one %s", n, tc.kept)
			}
			allRunning(t, doc, tc.pods)
		})
	}
}
