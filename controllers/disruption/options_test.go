package disruption

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/state"
)

// TestDecisionOptionsCarryTheSettings checks that the controller's settings
// reach the decision, the candidate cap included: without a cap (the
// default) multi-node consolidation considers every candidate.
func TestDecisionOptionsCarryTheSettings(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name string
		opts Options
		want int
	}{
		{"default: no cap", Options{}, 0},
		{"capped as Karpenter", Options{MaxConsolidationCandidates: 100, SpotToSpot: true, MaxInstanceTypes: 7}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(nil, state.NewCluster(), nil, clk, nil, tc.opts, nil)
			got := c.decisionOptions(state.Snapshot{})
			if got.MaxCandidates != tc.want {
				t.Errorf("MaxCandidates %d, want %d", got.MaxCandidates, tc.want)
			}
			if got.SpotToSpot != tc.opts.SpotToSpot || got.MaxInstanceTypes != tc.opts.MaxInstanceTypes || got.Cache == nil {
				t.Errorf("options %+v from settings %+v", got, tc.opts)
			}
		})
	}
}
