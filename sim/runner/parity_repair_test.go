package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// The scenarios of this file check stevedore against Karpenter v1.14.1's
// AWS provider: node repair on the kubelet's and the EKS node monitoring
// agent's conditions, each with its own toleration; instance status-check
// failures; and the order of NodePools of equal weight.

const parityRepair = "testdata/parity-repair/"

func TestParityRepairTolerations(t *testing.T) {
	tests := []struct {
		scenario  string
		condition string
		// repairAt is when the failed node's NodeClaim is to be disrupted,
		// from the start, give or take slack.
		repairAt, slack time.Duration
	}{
		// Ready Unknown some 40s after the kubelet stops at 10m, tolerated
		// for 30m.
		{"repair-kubelet.yaml", "Ready", 41 * time.Minute, time.Minute},
		// The agent's conditions turn False at 10m.
		{"repair-storage.yaml", "StorageReady", 40 * time.Minute, 0},
		{"repair-accelerated.yaml", "AcceleratedHardwareReady", 20 * time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.condition, func(t *testing.T) {
			doc := decode(t, simulate(t, parityRepair+"cluster.yaml", parityRepair+tt.scenario))
			var started []report.Event
			for _, e := range eventsOf(doc, report.KindDisruptionStarted) {
				if e.Reason == report.ReasonUnhealthy {
					started = append(started, e)
				}
			}
			if len(started) != 1 {
				t.Fatalf("Unhealthy disruptions %+v, want one", started)
			}
			e := started[0]
			if at := e.Time.Sub(doc.Start); at < tt.repairAt-tt.slack || at > tt.repairAt+tt.slack {
				t.Errorf("repaired at %s, want %s (±%s)", at, tt.repairAt, tt.slack)
			}
			if !strings.Contains(e.Message, "condition "+tt.condition+" ") {
				t.Errorf("repair message %q does not name %s", e.Message, tt.condition)
			}
			if doc.Final.Disruptions[report.ReasonUnhealthy] != 1 {
				t.Errorf("disruptions %v, want one Unhealthy", doc.Final.Disruptions)
			}
			allRunning(t, doc, 6)
		})
	}
}

func TestParityEqualWeightNodePools(t *testing.T) {
	tests := []struct {
		scenario string
		want     string
	}{
		// Karpenter's order: weight, then the name later in the alphabet.
		{"equal-weight.yaml", "premium"},
		// nodepool-equal-weight-order: Price.
		{"equal-weight-price.yaml", "economy"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			doc := decode(t, simulate(t, parityRepair+"equal-weight-cluster.yaml", parityRepair+tt.scenario))
			created := eventsOf(doc, report.KindNodeClaimCreated)
			if len(created) == 0 {
				t.Fatal("no NodeClaim was created")
			}
			for _, e := range created {
				if e.NodePool != tt.want {
					t.Errorf("NodeClaim %s of NodePool %s, want %s", e.NodeClaim, e.NodePool, tt.want)
				}
			}
			allRunning(t, doc, 6)
		})
	}
}

func TestParityInstanceStatusCheck(t *testing.T) {
	doc := decode(t, simulate(t, parityRepair+"cluster.yaml", parityRepair+"status-check.yaml"))
	got := eventsOf(doc, report.KindInterruptionReceived)
	if len(got) != 1 || got[0].Reason != "InstanceUnhealthy" || !strings.Contains(got[0].Message, "system status check") {
		t.Fatalf("interruptions %+v, want one InstanceUnhealthy for the system status check", got)
	}
	// The check failed at 10m; the poller, every minute, acts once it has
	// failed for two.
	if at := got[0].Time.Sub(doc.Start); at < 12*time.Minute || at > 13*time.Minute {
		t.Errorf("acted at %s, want between 12m and 13m", at)
	}
	victim := got[0].NodeClaim
	deleted := false
	for _, e := range eventsOf(doc, report.KindNodeClaimDeleted) {
		if e.NodeClaim == victim {
			deleted = true
			if e.Time.Sub(got[0].Time) > time.Minute {
				t.Errorf("NodeClaim %s deleted %s after the interruption, want a forceful termination", victim, e.Time.Sub(got[0].Time))
			}
		}
	}
	if !deleted {
		t.Errorf("NodeClaim %s was not deleted", victim)
	}
	allRunning(t, doc, 6)
}
