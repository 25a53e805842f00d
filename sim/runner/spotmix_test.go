package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// TestSpotMix runs the shipped spot-mix scenario (a working day of the
// operations guide's cluster from Monday 09:00 UTC) twice and checks its
// story from the JSON: a spot interruption handled through the queue, and
// consolidation held by the business-hours budget until 17:00.
func TestSpotMix(t *testing.T) {
	doc := story(t, "../../examples/spot-mix")
	const (
		interruption = 30 * time.Minute
		scaleDown    = 2 * time.Hour
		windowEnd    = 8 * time.Hour // 17:00 UTC, when the nodes: "0" budget ends
	)
	if got := doc.Start.Weekday(); got != time.Monday || doc.Start.Hour() != 9 {
		t.Fatalf("the scenario starts %s %s, want a Monday at 09:00 UTC", got, doc.Start.Format(time.RFC3339))
	}
	if s := sampleAt(t, doc, 25*time.Minute); s.RunningPods != 10 || s.PendingPods != 0 {
		t.Errorf("before the interruption: %+v, want 10 running pods", s)
	}

	t.Run("interruption", func(t *testing.T) {
		received := eventsOf(doc, report.KindInterruptionReceived)
		if len(received) != 1 {
			t.Fatalf("%d interruptions received, want 1: %+v", len(received), received)
		}
		warning := received[0]
		victim, node := warning.NodeClaim, warning.Node
		if since(doc, warning.Time) != interruption || warning.CapacityType != "spot" || node == "" {
			t.Fatalf("interruption %+v, want one for a spot node at %s", warning, interruption)
		}
		deadline := warning.Time.Add(fake.SpotInterruptionNotice)
		iWarning := index(doc, func(e report.Event) bool { return e.Kind == report.KindInterruptionReceived })

		// The replacement: launched within the warning, after it was
		// received, and initialized before the instance would go.
		iLaunch := index(doc, func(e report.Event) bool {
			return e.Kind == report.KindNodeClaimLaunched && !e.Time.Before(warning.Time) && e.NodeClaim != victim
		})
		if iLaunch < 0 {
			t.Fatal("no replacement launched after the warning")
		}
		replacement := doc.Events[iLaunch]
		if iLaunch < iWarning || !replacement.Time.Before(deadline) {
			t.Errorf("replacement %s launched at %s (log position %d, warning at %d), want after the warning and before %s",
				replacement.NodeClaim, since(doc, replacement.Time), iLaunch, iWarning, since(doc, deadline))
		}
		iReady := index(doc, func(e report.Event) bool {
			return e.Kind == report.KindNodeInitialized && e.NodeClaim == replacement.NodeClaim
		})
		if iReady < 0 || !doc.Events[iReady].Time.Before(deadline) {
			t.Errorf("replacement %s not initialized within the two-minute warning", replacement.NodeClaim)
		}

		// The drain: every pod of the node evicted, after the replacement
		// was launched and before the instance terminated.
		onNode := podsOn(doc, node, warning.Time)
		if len(onNode) == 0 {
			t.Fatalf("no pods on %s when it was interrupted", node)
		}
		var terminated *report.Event
		evicted := map[string]bool{}
		for i, e := range doc.Events {
			switch {
			case e.Kind == report.KindPodEvicted && e.Node == node:
				if i < iLaunch {
					t.Errorf("%s evicted (log position %d) before the replacement launched (%d)", e.Object, i, iLaunch)
				}
				if terminated != nil {
					t.Errorf("%s evicted at %s, after the instance terminated", e.Object, since(doc, e.Time))
				}
				evicted[e.Object] = true
			case e.Kind == report.KindPodDeleted && e.Node == node:
				if !evicted[e.Object] {
					t.Errorf("%s deleted at %s without an eviction", e.Object, since(doc, e.Time))
				}
				if terminated != nil {
					t.Errorf("%s still terminating at %s, after its instance did", e.Object, since(doc, e.Time))
				}
			case e.Kind == report.KindInstanceTerminated && e.NodeClaim == victim:
				terminated = &doc.Events[i]
			}
		}
		for pod := range onNode {
			if !evicted[pod] {
				t.Errorf("%s was on %s and was never evicted", pod, node)
			}
		}
		if terminated == nil || terminated.Time.After(deadline) {
			t.Fatalf("instance of %s terminated %v, want by %s", victim, terminated, since(doc, deadline))
		}
		t.Logf("warning at %s; replacement %s launched at %s, initialized at %s; %d pods evicted; instance terminated at %s",
			since(doc, warning.Time), replacement.NodeClaim, since(doc, replacement.Time), since(doc, doc.Events[iReady].Time),
			len(evicted), since(doc, terminated.Time))
		if got := doc.Final.Disruptions[report.ReasonInterrupted]; got != 1 {
			t.Errorf("%d interruption disruptions, want 1", got)
		}
		if s := sampleAt(t, doc, interruption+5*time.Minute); s.RunningPods != 10 || s.PendingPods != 0 {
			t.Errorf("after the interruption: %+v, want all 10 pods running", s)
		}
	})

	t.Run("business-hours budget", func(t *testing.T) {
		voluntary := func(reason string) bool {
			return reason == report.ReasonEmpty || reason == report.ReasonUnderutilized || reason == report.ReasonDrifted
		}
		var after []report.Event
		for _, e := range eventsOf(doc, report.KindDisruptionStarted) {
			switch {
			case !voluntary(e.Reason):
			case since(doc, e.Time) < windowEnd:
				t.Errorf("%s disruption of %s at %s, inside the business-hours window", e.Reason, e.NodeClaim, since(doc, e.Time))
			default:
				after = append(after, e)
			}
		}
		consolidated := 0
		for _, e := range after {
			if e.Reason == report.ReasonEmpty || e.Reason == report.ReasonUnderutilized {
				consolidated++
			}
		}
		if consolidated == 0 {
			t.Errorf("no consolidation after 17:00: %+v", after)
		} else if first := since(doc, after[0].Time); first > windowEnd+5*time.Minute {
			t.Errorf("first consolidation at %s, want soon after 17:00", first)
		}

		// While the budget holds, the controller says so.
		blocked := map[string]int{}
		for _, e := range eventsOf(doc, report.KindDisruptionBlocked) {
			if at := since(doc, e.Time); at > scaleDown && at < windowEnd && strings.Contains(e.Message, "BudgetExhausted") && strings.HasPrefix(e.Object, "NodeClaim/") {
				blocked[e.NodeClaim]++
			}
		}
		if len(blocked) == 0 {
			t.Error("no DisruptionBlocked event for the budget between the scale-down and 17:00")
		}
		if index(doc, func(e report.Event) bool {
			return e.Kind == report.KindDisruptionBlocked && e.Object == "NodePool/default" && strings.Contains(e.Message, `schedule "0 9 * * mon-fri"`)
		}) < 0 {
			t.Error("no DisruptionBlocked event of NodePool default names the business-hours budget")
		}

		// Underused nodes were kept all afternoon, then removed, 20% of
		// the pool at a time.
		before := sampleAt(t, doc, windowEnd-5*time.Minute)
		if before.RunningPods != 3 || before.Nodes < 2 {
			t.Errorf("at 16:55: %+v, want 3 pods kept on more nodes than they need", before)
		}
		if n := len(doc.Final.Nodes); n >= before.Nodes {
			t.Errorf("%d nodes at the end, %d at 16:55: consolidation removed none", n, before.Nodes)
		}
		// A percentage budget rounds up, as Karpenter's does: 20% of 6
		// nodes allows 2.
		if got, allowed := maxInFlight(doc, report.ReasonEmpty, report.ReasonUnderutilized), (before.Nodes*20+99)/100; got > allowed {
			t.Errorf("%d consolidations at once, want at most %d (20%% of %d nodes, rounded up)", got, allowed, before.Nodes)
		}
	})

	if p := doc.Final.Pods; p.Running != 3 || p.Pending != 0 || len(doc.Final.Unschedulable) != 0 {
		t.Errorf("final pods %+v, unschedulable %v", p, doc.Final.Unschedulable)
	}
	for _, n := range doc.Final.Nodes {
		if !n.Ready || n.NodePool != "default" {
			t.Errorf("final node %s: ready %v pool %s", n.Name, n.Ready, n.NodePool)
		}
	}
	if len(doc.Warnings) > 0 {
		t.Errorf("warnings: %v", doc.Warnings)
	}
}
