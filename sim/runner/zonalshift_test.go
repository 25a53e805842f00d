package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// launchZones returns the zones of the launches between from and to after
// the start of the run.
func launchZones(doc *report.Document, from, to time.Duration) []string {
	var out []string
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
		if at := e.Time.Sub(doc.Start); at >= from && at < to {
			out = append(out, e.Zone)
		}
	}
	return out
}

// TestZonalShiftIsAvoided: with enable-zonal-shift, launches while the
// cluster's traffic is shifted away from a zone go elsewhere, and the zone
// is used again once the shift has ended; without the setting (Karpenter's
// default) the shift changes nothing.
func TestZonalShiftIsAvoided(t *testing.T) {
	scale := func(at string, replicas int) string {
		return fmt.Sprintf("    - {at: %s, scale: {kind: Deployment, namespace: shop, name: web, replicas: %d}}\n", at, replicas)
	}
	// Where the scale-up goes when nothing is shifted.
	baseline := run(t, "on-demand", "  duration: 1h\n  events:\n"+scale("5m", 12))
	zones := launchZones(baseline, 5*time.Minute, 10*time.Minute)
	if len(zones) == 0 {
		t.Fatal("the baseline scale-up launched nothing")
	}
	preferred := zones[0]

	events := "  events:\n" +
		"    - {at: 2m, zonalShift: {zone: " + preferred + ", for: 28m}}\n" +
		scale("5m", 12) + scale("40m", 24)
	for _, tc := range []struct {
		name, controller string
		avoid            bool
	}{
		{"enabled", "  controller: {enable-zonal-shift: true}\n", true},
		{"disabled", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := run(t, "on-demand", "  duration: 1h\n"+tc.controller+events)
			during := launchZones(doc, 5*time.Minute, 30*time.Minute)
			if len(during) == 0 {
				t.Fatal("no launches during the shift")
			}
			inShifted := 0
			for _, z := range during {
				if z == preferred {
					inShifted++
				}
			}
			if tc.avoid && inShifted > 0 {
				t.Errorf("%d of %d launches during the shift went to %s: %v", inShifted, len(during), preferred, during)
			}
			if !tc.avoid && inShifted == 0 {
				t.Errorf("without enable-zonal-shift the shift moved the launches away from %s: %v", preferred, during)
			}
			after := launchZones(doc, 40*time.Minute, time.Hour)
			back := false
			for _, z := range after {
				back = back || z == preferred
			}
			if !back {
				t.Errorf("no launch into %s after the shift ended: %v", preferred, after)
			}
			if got := eventsOf(doc, report.KindScenarioEvent); len(got) == 0 || got[0].Reason != "ZonalShift" {
				t.Errorf("scenario events %+v, want the zonal shift logged first", got)
			}
			allRunning(t, doc, 24)
		})
	}
}
