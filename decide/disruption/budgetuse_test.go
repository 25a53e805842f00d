package disruption

import (
	"slices"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// TestBudgetIsTakenOnlyByTheCommand: a budget slot is used only by a
// command that is carried out. Methods that disrupt one node at a time
// (single-node consolidation, drift) try every candidate whose NodePool
// may still lose a node, as Karpenter does, so a candidate that cannot go
// does not hold a slot that another could use; multi-node consolidation
// still takes no more candidates than the budget allows.
func TestBudgetIsTakenOnlyByTheCommand(t *testing.T) {
	tests := []struct {
		name string
		// setup builds the cluster and returns the nodes the command must
		// disrupt (nil: no command) and the nodes that must be reported as
		// held by the budget (CodeBudget); no other node may be.
		setup func(f *fixture) (want, held []string)
		// wantReason is the command's reason.
		wantReason Reason
	}{
		{
			name: "budget 1: the first candidate cannot go, the second is consolidated",
			setup: func(f *fixture) ([]string, []string) {
				f.pool("p", []string{large, xlarge}, []string{wellknown.CapacityTypeOnDemand})
				// Tried first (the higher price per rescheduling cost):
				// its pod fits on no other node, and no cheaper type.
				big := f.node(nodeSpec{pool: "p", itype: xlarge})
				f.pod("db", big, "2500m", "1Gi")
				// Its pod fits in the room the xlarge leaves.
				small := f.node(nodeSpec{pool: "p", itype: large})
				f.pod("web", small, "600m", "256Mi")
				f.budget("p", ReasonUnderutilized, 1)
				// The xlarge was tried and cannot go: not the budget's doing.
				return []string{small}, nil
			},
			wantReason: ReasonUnderutilized,
		},
		{
			name: "budget 1: two alike nodes, the first one tried goes",
			setup: func(f *fixture) ([]string, []string) {
				f.pool("p", []string{large}, []string{wellknown.CapacityTypeOnDemand})
				a := f.node(nodeSpec{pool: "p", itype: large})
				b := f.node(nodeSpec{pool: "p", itype: large})
				f.pod("a1", a, "600m", "256Mi")
				f.pod("b1", b, "600m", "256Mi")
				f.budget("p", ReasonUnderutilized, 1)
				// b was not tried: a's command took the one slot.
				return []string{a}, []string{b}
			},
			wantReason: ReasonUnderutilized,
		},
		{
			name: "budget 1: multi-node consolidation takes no more than one node",
			setup: func(f *fixture) ([]string, []string) {
				f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
				var nodes []string
				for _, p := range []string{"a", "b", "c"} {
					n := f.node(nodeSpec{pool: "p", itype: xlarge})
					f.pod(p, n, "500m", "256Mi")
					nodes = append(nodes, n)
				}
				f.budget("p", ReasonUnderutilized, 1)
				return nodes[:1], nodes[1:]
			},
			wantReason: ReasonUnderutilized,
		},
		{
			name: "budget 2: multi-node consolidation takes two of three nodes",
			setup: func(f *fixture) ([]string, []string) {
				f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
				var nodes []string
				for _, p := range []string{"a", "b", "c"} {
					n := f.node(nodeSpec{pool: "p", itype: xlarge})
					f.pod(p, n, "500m", "256Mi")
					nodes = append(nodes, n)
				}
				f.budget("p", ReasonUnderutilized, 2)
				return nodes[:2], nodes[2:]
			},
			wantReason: ReasonUnderutilized,
		},
		{
			name: "budget 0: every candidate is held by the budget",
			setup: func(f *fixture) ([]string, []string) {
				f.pool("p", []string{large}, []string{wellknown.CapacityTypeOnDemand})
				a := f.node(nodeSpec{pool: "p", itype: large})
				b := f.node(nodeSpec{pool: "p", itype: large})
				f.pod("a1", a, "600m", "256Mi")
				f.pod("b1", b, "600m", "256Mi")
				f.budget("p", ReasonUnderutilized, 0)
				return nil, []string{a, b}
			},
		},
		{
			name: "Drifted budget 1: the oldest drifted node cannot go, the next is replaced",
			setup: func(f *fixture) ([]string, []string) {
				f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
				// Drifted first, but its pod fits on no xlarge.
				stuck := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: 2 * time.Hour})
				f.pod("huge", stuck, "5", "1Gi")
				next := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
				f.pod("web", next, "1", "1Gi")
				f.budget("p", ReasonDrifted, 1)
				f.budget("p", ReasonUnderutilized, 0)
				return []string{next}, nil
			},
			wantReason: ReasonDrifted,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			want, held := tc.setup(f)
			d := Decide(f.input())
			if want == nil {
				if d.Command != nil {
					t.Fatalf("command %s, want none", d.Command)
				}
			} else {
				if d.Command == nil {
					t.Fatalf("no command, want %s of %v; blocked %v", tc.wantReason, want, d.Blocked)
				}
				if got := candidateNames(d.Command); d.Command.Reason != tc.wantReason || !slices.Equal(got, want) {
					t.Fatalf("command %s (%v), want %s of %v; blocked %v", d.Command, got, tc.wantReason, want, d.Blocked)
				}
			}
			for _, b := range d.Blocked {
				if b.Code == CodeBudget && !slices.Contains(held, b.Node) {
					t.Errorf("%s reported as held by the budget (%s), but no command takes its slot", b.Node, b.Message)
				}
			}
			for _, n := range held {
				if !slices.Contains(codes(d, n), CodeBudget) {
					t.Errorf("%s not reported as held by the budget; blocked %v", n, d.Blocked)
				}
			}
		})
	}
}
