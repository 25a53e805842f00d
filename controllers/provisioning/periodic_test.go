package provisioning

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPeriodicLook: with no batch open, the provisioner opens one for a pod
// still waiting, and not for a pod whose nomination holds, until the
// nomination stops holding.
func TestPeriodicLook(t *testing.T) {
	e := newEnv(t, "prov-periodic", 206)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool()
	look := func(when string, wantBatch bool) {
		t.Helper()
		e.SyncState()
		res, err := e.p.Reconcile(e.Ctx, Request())
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if opened := res.RequeueAfter != Period; opened != wantBatch {
			t.Fatalf("%s: RequeueAfter = %s; want a batch opened: %v", when, res.RequeueAfter, wantBatch)
		}
	}

	look("nothing pending", false)

	e.pod("app")
	// The pod's event was missed: the periodic look finds it.
	look("a pod no batch has seen", true)
	e.Clock.Step(DefaultBatchIdle)
	e.batch()
	claims := e.nodeClaims()
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}

	// The pod is still pending, nominated to the NodeClaim in flight.
	e.Clock.Step(Period)
	look("the pod's nomination holds", false)

	// Once the NodeClaim is being taken away, the nomination no longer
	// holds and the pod waits again.
	e.p.state.MarkForDeletion(claims[0].Name)
	look("the pod's node is going away", true)
	if !e.p.batcher.Open() {
		t.Errorf("no batch is open after the look")
	}
	e.Clock.Step(DefaultBatchIdle)
	e.batch()
	if n := len(e.nodeClaims()); n != 2 {
		t.Errorf("%d NodeClaims after the pod waited again, want 2", n)
	}
}
