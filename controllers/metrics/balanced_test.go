package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestConsolidationMoves(t *testing.T) {
	m, reg := newMetrics(t)
	m.ConsolidationMove("general", "Balanced", 0.3, false)
	m.ConsolidationMove("general", "Balanced", 0.75, true)
	m.ConsolidationMove("general", "Balanced", 3, true)

	want := `
# HELP karpenter_consolidation_moves_total Number of balanced consolidation moves. Labeled by decision (approved or rejected), NodePool, and policy.
# TYPE karpenter_consolidation_moves_total counter
karpenter_consolidation_moves_total{decision="approved",nodepool="general",policy="Balanced"} 2
karpenter_consolidation_moves_total{decision="rejected",nodepool="general",policy="Balanced"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameConsolidationMoves); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.balanced.score); n != 2 {
		t.Errorf("%s has %d series, want 2", NameConsolidationScore, n)
	}
	problems, err := testutil.GatherAndLint(reg, NameConsolidationScore, NameConsolidationMoves)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	var nilMetrics *Metrics
	nilMetrics.ConsolidationMove("general", "Balanced", 1, true)
}
