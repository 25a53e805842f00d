package health

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// TestUnderManager runs repair as the controller binary does: under a
// manager whose cache serves the provider-ID index, woken by Node events.
func TestUnderManager(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	for _, n := range []string{"mgr-a", "mgr-b", "mgr-c", "mgr-d"} {
		e.machine(n, "mgr-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	}
	node, _ := e.machine("mgr-sick", "mgr-pool", corev1.ConditionTrue, start.Add(-time.Hour))

	mgr := environment.NewManager(t)
	if err := New(mgr.GetClient(), e.Cloud, e.Clock, e.Events, e.Metrics, Options{Enabled: true}).Register(mgr); err != nil {
		t.Fatal(err)
	}
	e.StartManager(mgr)

	// The node went NotReady long enough ago that its toleration is over;
	// the controller learns of it through its Node watch, either from the
	// condition change or from the cache's first list.
	e.setReady(node, corev1.ConditionFalse, start.Add(-time.Hour))
	environment.Eventually(t, "the unhealthy NodeClaim to be deleted", func() bool {
		return !e.NodeClaim("mgr-sick").DeletionTimestamp.IsZero()
	})
	e.wantRepaired("mgr-sick")
}
