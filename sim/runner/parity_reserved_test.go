package runner

import (
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

const (
	parityReserved = "testdata/parity-reserved"
	// The reservation of the scenario: three m6i.large in us-east-1a.
	reservationID   = "cr-0a1b2c3d4e5f60718"
	reservationSize = 3
)

// launchesBetween returns the NodeClaims launched in [from, to) since the
// start, by capacity type.
func launchesBetween(doc *report.Document, from, to time.Duration) map[string][]report.Event {
	out := map[string][]report.Event{}
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
		if at := since(doc, e.Time); at >= from && at < to {
			out[e.CapacityType] = append(out[e.CapacityType], e)
		}
	}
	return out
}

// TestParityReserved runs the capacity reservation scenario twice (same
// bytes) and checks Karpenter's behaviour with its ReservedCapacity feature
// on: pods land in the reservation first, spill to spot or on-demand
// capacity once it is full, and take freed slots again; at no moment do
// more instances run in it than it holds.
func TestParityReserved(t *testing.T) {
	doc := story(t, parityReserved)

	phases := []struct {
		name      string
		from, to  time.Duration
		reserved  int
		otherwise int
	}{
		{"two pods: both in the reservation", 0, 10 * time.Minute, 2, 0},
		{"eight pods: the last slot, then spot or on-demand", 10 * time.Minute, 20 * time.Minute, 1, 5},
		{"eight pods again: the two freed slots first", 30 * time.Minute, 45 * time.Minute, 2, 5},
	}
	for _, ph := range phases {
		t.Run(ph.name, func(t *testing.T) {
			got := launchesBetween(doc, ph.from, ph.to)
			if n := len(got[wellknown.CapacityTypeReserved]); n != ph.reserved {
				t.Errorf("%d reserved launches, want %d: %+v", n, ph.reserved, got)
			}
			if n := len(got[wellknown.CapacityTypeSpot]) + len(got[wellknown.CapacityTypeOnDemand]); n != ph.otherwise {
				t.Errorf("%d spot and on-demand launches, want %d: %+v", n, ph.otherwise, got)
			}
			for _, e := range got[wellknown.CapacityTypeReserved] {
				if e.InstanceType != "m6i.large" || e.Zone != "us-east-1a" {
					t.Errorf("reserved launch %s is %s in %s, want the reservation's m6i.large in us-east-1a", e.NodeClaim, e.InstanceType, e.Zone)
				}
			}
		})
	}

	t.Run("never more than the reservation holds", func(t *testing.T) {
		live, peak := map[string]bool{}, 0
		for _, e := range doc.Events {
			switch {
			case e.Kind == report.KindNodeClaimLaunched && e.CapacityType == wellknown.CapacityTypeReserved:
				live[e.InstanceID] = true
			case e.Kind == report.KindInstanceTerminated:
				delete(live, e.InstanceID)
			}
			if len(live) > reservationSize {
				t.Fatalf("at %s, %d instances in a reservation of %d", since(doc, e.Time), len(live), reservationSize)
			}
			peak = max(peak, len(live))
		}
		if peak != reservationSize {
			t.Errorf("at most %d reserved instances at once, want the reservation full (%d)", peak, reservationSize)
		}
		running := 0
		for _, in := range doc.Final.Instances {
			if in.CapacityType == wellknown.CapacityTypeReserved && in.State != "terminated" && in.State != "shutting-down" {
				running++
			}
		}
		if running != reservationSize {
			t.Errorf("%d reserved instances at the end, want %d: %+v", running, reservationSize, doc.Final.Instances)
		}
	})

	t.Run("the end", func(t *testing.T) {
		if p := doc.Final.Pods; p.Running != 8 || p.Pending != 0 {
			t.Errorf("pods %+v, want 8 running", p)
		}
		reserved := 0
		for _, n := range doc.Final.Nodes {
			switch n.CapacityType {
			case wellknown.CapacityTypeReserved:
				reserved++
				if n.Labels[wellknown.LabelCapacityReservationID] != reservationID || n.Labels[wellknown.LabelCapacityReservationType] != "default" {
					t.Errorf("reserved node %s: labels %v, want the reservation's", n.Name, n.Labels)
				}
			case wellknown.CapacityTypeSpot, wellknown.CapacityTypeOnDemand:
				if id := n.Labels[wellknown.LabelCapacityReservationID]; id != "" {
					t.Errorf("%s node %s carries reservation %s", n.CapacityType, n.Name, id)
				}
			default:
				t.Errorf("node %s has capacity type %q", n.Name, n.CapacityType)
			}
		}
		if reserved != reservationSize {
			t.Errorf("%d reserved nodes at the end, want %d", reserved, reservationSize)
		}
	})
}

// TestParityReservedGateOff runs the same scenario with the ReservedCapacity
// feature gate off: nothing launches into the reservation.
func TestParityReservedGateOff(t *testing.T) {
	s := testScheme(t)
	run, problems, err := scenario.Load([]string{parityReserved}, s)
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	if !run.Controller.ReservedCapacity {
		t.Fatal("ReservedCapacity is off by default; Karpenter has it on")
	}
	run.Controller.ReservedCapacity = false
	doc := runLoaded(t, run)
	if got := launchesBetween(doc, 0, 45*time.Minute)[wellknown.CapacityTypeReserved]; len(got) != 0 {
		t.Errorf("ReservedCapacity=false: %d reserved launches: %+v", len(got), got)
	}
	for _, n := range doc.Final.Nodes {
		if n.CapacityType == wellknown.CapacityTypeReserved || n.Labels[wellknown.LabelCapacityReservationID] != "" {
			t.Errorf("ReservedCapacity=false: node %s is %s in %q", n.Name, n.CapacityType, n.Labels[wellknown.LabelCapacityReservationID])
		}
	}
	if p := doc.Final.Pods; p.Running != 8 {
		t.Errorf("ReservedCapacity=false: pods %+v, want 8 running", p)
	}
}
