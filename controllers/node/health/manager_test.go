package health

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestUnderManager runs repair as the controller binary does: under a
// manager whose cache serves the provider-ID index, woken by Node events.
func TestUnderManager(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	for _, n := range []string{"mgr-a", "mgr-b", "mgr-c", "mgr-d"} {
		e.machine(n, "mgr-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	}
	node, _ := e.machine("mgr-sick", "mgr-pool", corev1.ConditionTrue, start.Add(-time.Hour))

	mgr, err := manager.New(kubeCfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := New(mgr.GetClient(), e.p, e.clk, e.rec, e.m, Options{Enabled: true}).Register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// The node went NotReady long enough ago that its toleration is over;
	// the controller learns of it through its Node watch, either from the
	// condition change or from the cache's first list.
	e.setReady(node, corev1.ConditionFalse, start.Add(-time.Hour))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !e.nodeClaim("mgr-sick").DeletionTimestamp.IsZero() {
			e.wantRepaired("mgr-sick")
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("timed out waiting for the unhealthy NodeClaim to be deleted")
}
