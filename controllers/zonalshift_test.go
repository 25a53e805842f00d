package controllers

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
)

// TestZonalShiftLoop: the loop reads the shifts at once and then every
// zonalshift.DefaultInterval, and ends with its context.
func TestZonalShiftLoop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clk, InstanceTypes: []string{"m5.large"}})
	if _, err := f.AddCluster(fake.Cluster{Name: "demo"}); err != nil {
		t.Fatal(err)
	}
	zone, _ := f.ZoneID(fake.DefaultRegion + "a")
	id, err := f.StartZonalShift("demo", zone, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := zonalshift.New(f, f, "demo", clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- zonalShiftLoop(tr, Deps{Clock: clk})(ctx) }()

	// waitFor polls (in real time) until the tracker agrees.
	waitFor := func(step string, shifted bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if tr.Shifted(zone) == shifted {
				return
			}
		}
		t.Fatalf("%s: Shifted(%s) stayed %v", step, zone, !shifted)
	}
	waitFor("first read", true)

	if err := f.CancelZonalShift(id); err != nil {
		t.Fatal(err)
	}
	// The next read comes with the ticker, not before.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if !tr.Shifted(zone) {
		t.Fatal("read again before the interval")
	}
	clk.Step(zonalshift.DefaultInterval)
	waitFor("read after the interval", false)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
}
