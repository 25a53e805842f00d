package runner

import (
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// TestScaleOut runs the end-to-end suite's scale-out test as a scenario
// (1,000 pods of two sizes at once, scaled to 700 at 3m) and checks that the
// provisioner launches only what the pods need: every NodeClaim launched for
// the scale-out still runs pods when the scale-down comes, none is removed as
// empty, and all pods run within a minute.
//
// The pods are pending again and again while the first NodeClaims boot:
// kube-scheduler marks them unschedulable each time a node registers. Batches
// that planned them again from scratch used to launch NodeClaims for pods
// already on their way to a node, and those were removed as empty a minute
// later.
func TestScaleOut(t *testing.T) {
	doc := story(t, "../../test/e2e/testdata/scale-out")
	const scaleDown = 3 * time.Minute

	if s := sampleAt(t, doc, time.Minute); s.RunningPods != 1000 || s.PendingPods != 0 {
		t.Errorf("a minute in: %+v, want all 1000 pods running", s)
	}

	nodeOf := map[string]string{}
	for _, e := range eventsOf(doc, report.KindNodeRegistered) {
		nodeOf[e.NodeClaim] = e.Node
	}
	var launched []string
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
		if since(doc, e.Time) < scaleDown {
			launched = append(launched, e.NodeClaim)
		}
	}
	if len(launched) == 0 {
		t.Fatal("no NodeClaim launched for the scale-out")
	}
	t.Logf("%d NodeClaims launched for 1,000 pods", len(launched))
	// A NodeClaim launched for pods already on their way to another node
	// never runs a pod and is removed as empty. Consolidating a node that
	// did run pods into room the others have left (Underutilized, with
	// consolidateAfter 10s) is consolidation doing its job, not a wasted
	// launch.
	consolidated := map[string]bool{}
	for _, e := range eventsOf(doc, report.KindNodeClaimDeleted) {
		if since(doc, e.Time) >= scaleDown {
			continue
		}
		node := nodeOf[e.NodeClaim]
		if e.Reason == "Underutilized" && node != "" && ranPods(doc, node, e.Time) {
			consolidated[e.NodeClaim] = true
			continue
		}
		t.Errorf("NodeClaim %s deleted at %s (%s) before the scale-down", e.NodeClaim, since(doc, e.Time), e.Reason)
	}
	at := doc.Start.Add(scaleDown)
	for _, nc := range launched {
		switch node := nodeOf[nc]; {
		case node == "":
			t.Errorf("NodeClaim %s never registered", nc)
		case consolidated[nc]:
		case len(podsOn(doc, node, at)) == 0:
			t.Errorf("NodeClaim %s (node %s) runs no pod when the scale-down comes: launched for nothing", nc, node)
		}
	}

	// Scaled to 700: everything still runs.
	if doc.Final.Pods.Total != 700 || doc.Final.Pods.Running != 700 || doc.Final.Pods.Pending != 0 {
		t.Errorf("at the end: %+v, want 700 pods running", doc.Final.Pods)
	}
}

// ranPods reports whether a pod was bound to node before the time given.
func ranPods(doc *report.Document, node string, before time.Time) bool {
	for _, e := range eventsOf(doc, report.KindPodBound) {
		if e.Node == node && e.Time.Before(before) {
			return true
		}
	}
	return false
}
