package controllers

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"

	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption/queue"
	"github.com/stevedore-autoscaler/stevedore/state"
)

type eventLog struct {
	mu      sync.Mutex
	reasons []string
}

func (e *eventLog) Eventf(_, _ runtime.Object, _, reason, _, note string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reasons = append(e.reasons, reason+": "+fmt.Sprintf(note, args...))
}

func TestRunnablesNeedLeaderElection(t *testing.T) {
	var r manager.Runnable = &leaderRunnable{run: func(context.Context) error { return nil }}
	le, ok := r.(manager.LeaderElectionRunnable)
	if !ok || !le.NeedLeaderElection() {
		t.Error("the collector and the interruption poller must run on the leader only")
	}
}

func nodeClaim(name, providerID string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	nc.Status.ProviderID = providerID
	return nc
}

// foreign makes the NodeClaim another provider's, of Karpenter's KWOK node
// class.
func foreign(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	nc.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	return nc
}

func TestKnownInstancesAndLookup(t *testing.T) {
	st := state.NewCluster()
	st.UpdateNodeClaim(nodeClaim("a", "aws:///us-east-1a/i-aaa"))
	st.UpdateNodeClaim(nodeClaim("b", "")) // still launching
	// Another provider's: neither known nor found, even on an EC2 instance.
	st.UpdateNodeClaim(foreign(nodeClaim("k", "aws:///us-east-1a/i-kkk")))
	known := knownInstances(st.NodeClaimProviderIDs())
	if !known["i-aaa"] || len(known) != 1 {
		t.Errorf("known = %v", known)
	}
	lookup := nodeClaimFor(st, clock.RealClock{})
	if name, ok := lookup("i-aaa"); !ok || name != "a" {
		t.Errorf("lookup(i-aaa) = %q, %v", name, ok)
	}
	for _, id := range []string{"i-zzz", "i-kkk"} {
		if name, ok := lookup(id); ok {
			t.Errorf("lookup(%s) found NodeClaim %s", id, name)
		}
	}
}

func TestInterruptionHandler(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind    interruption.Kind
		deleted bool
		reason  string
	}{
		{interruption.KindSpotInterrupted, true, ReasonSpotInterrupted},
		{interruption.KindScheduledChange, true, ReasonInstanceUnhealthy},
		{interruption.KindInstanceStopped, true, ReasonInstanceStopping},
		{interruption.KindInstanceTerminated, true, ReasonInstanceTerminating},
		{interruption.KindCapacityReservationInterrupted, true, ReasonCapacityReservationInterrupted},
		{interruption.KindRebalanceRecommendation, false, ReasonSpotRebalanceRecommendation},
		{interruption.KindInstanceStatus, true, ReasonInstanceUnhealthy},
		{interruption.KindSystemStatus, true, ReasonInstanceUnhealthy},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(nodeClaim("nc", "aws:///us-east-1a/i-1")).Build()
			rec := &eventLog{}
			h := &interruptionHandler{kube: kube, rec: rec}
			a := queue.Action{Event: interruption.Event{Kind: tc.kind, ID: "e1"}, InstanceID: "i-1", NodeClaim: "nc"}
			if err := h.handle(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			err := kube.Get(context.Background(), client.ObjectKey{Name: "nc"}, &karpv1.NodeClaim{})
			if gone := err != nil; gone != tc.deleted {
				t.Errorf("deleted = %v, want %v (%v)", gone, tc.deleted, err)
			}
			// The interruption's event, then, when the NodeClaim is deleted
			// for it, Karpenter's TerminatingOnInterruption.
			want := 1
			if tc.deleted {
				want = 2
			}
			if len(rec.reasons) != want || !strings.HasPrefix(rec.reasons[0], tc.reason+":") ||
				(tc.deleted && !strings.HasPrefix(rec.reasons[1], ReasonTerminatingOnInterruption+":")) {
				t.Errorf("events = %v, want %s (and %s when deleted)", rec.reasons, tc.reason, ReasonTerminatingOnInterruption)
			}
			// Redelivery of the same message, after the NodeClaim is gone, is a no-op.
			if err := h.handle(context.Background(), a); err != nil {
				t.Errorf("second delivery: %v", err)
			}
		})
	}
}

// TestInterruptionHandlerLeavesOtherProviders: whatever the event, another
// provider's NodeClaim is neither deleted, handed to the disruption
// controller nor given an event.
func TestInterruptionHandlerLeavesOtherProviders(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []interruption.Kind{
		interruption.KindSpotInterrupted, interruption.KindScheduledChange, interruption.KindInstanceStopped,
		interruption.KindInstanceTerminated, interruption.KindCapacityReservationInterrupted,
		interruption.KindRebalanceRecommendation, interruption.KindInstanceStatus, interruption.KindSystemStatus,
	} {
		t.Run(string(kind), func(t *testing.T) {
			kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(foreign(nodeClaim("nc", "aws:///us-east-1a/i-1"))).Build()
			rec, got := &eventLog{}, &interrupts{}
			h := &interruptionHandler{kube: kube, rec: rec, disruption: got, actOnRebalance: true}
			a := queue.Action{Event: interruption.Event{Kind: kind, ID: "e1"}, InstanceID: "i-1", NodeClaim: "nc"}
			if err := h.handle(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if err := kube.Get(context.Background(), client.ObjectKey{Name: "nc"}, &karpv1.NodeClaim{}); err != nil {
				t.Errorf("NodeClaim deleted: %v", err)
			}
			if len(got.names) != 0 || len(rec.reasons) != 0 {
				t.Errorf("handed to the disruption controller %v, events %v; want neither", got.names, rec.reasons)
			}
		})
	}
}

// interrupts records the NodeClaims handed to the disruption controller.
type interrupts struct {
	names []string
}

func (i *interrupts) Interrupt(_ context.Context, nodeClaim, _ string) error {
	i.names = append(i.names, nodeClaim)
	return nil
}

// TestInterruptionHandlerReplaces checks which interruptions are handed to
// the disruption controller (which launches replacements before the drain)
// and which only delete the NodeClaim.
func TestInterruptionHandlerReplaces(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind           interruption.Kind
		actOnRebalance bool
		replaced       bool
		deleted        bool
	}{
		{kind: interruption.KindSpotInterrupted, replaced: true},
		{kind: interruption.KindScheduledChange, replaced: true},
		{kind: interruption.KindCapacityReservationInterrupted, replaced: true},
		{kind: interruption.KindInstanceStopped, deleted: true},
		{kind: interruption.KindInstanceTerminated, deleted: true},
		{kind: interruption.KindRebalanceRecommendation},
		{kind: interruption.KindRebalanceRecommendation, actOnRebalance: true, replaced: true},
		{kind: interruption.KindInstanceStatus, deleted: true},
		{kind: interruption.KindSystemStatus, deleted: true},
	} {
		t.Run(fmt.Sprintf("%s/act=%v", tc.kind, tc.actOnRebalance), func(t *testing.T) {
			kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(nodeClaim("nc", "aws:///us-east-1a/i-1")).Build()
			got := &interrupts{}
			h := &interruptionHandler{kube: kube, rec: &eventLog{}, disruption: got, actOnRebalance: tc.actOnRebalance}
			a := queue.Action{Event: interruption.Event{Kind: tc.kind, ID: "e1"}, InstanceID: "i-1", NodeClaim: "nc"}
			if err := h.handle(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if replaced := len(got.names) == 1 && got.names[0] == "nc"; replaced != tc.replaced {
				t.Errorf("handed to the disruption controller: %v, want %v", got.names, tc.replaced)
			}
			err := kube.Get(context.Background(), client.ObjectKey{Name: "nc"}, &karpv1.NodeClaim{})
			if gone := err != nil; gone != tc.deleted {
				t.Errorf("deleted by the handler = %v, want %v", gone, tc.deleted)
			}
		})
	}
}

// TestInterruptionHandlerStatusCheckIsForceful checks that a failed status
// check terminates the NodeClaim forcefully, as Karpenter does: the
// termination deadline is now, so the drain does not wait for pods; and that
// the poller's reports on later polls add nothing.
func TestInterruptionHandlerStatusCheckIsForceful(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	nc := nodeClaim("nc", "aws:///us-east-1a/i-1")
	nc.Finalizers = []string{"test/hold"}
	kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(nc).Build()
	rec := &eventLog{}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := &interruptionHandler{kube: kube, rec: rec, disruption: &interrupts{}, clock: clocktesting.NewFakeClock(now), metrics: m}
	a := queue.Action{Event: interruption.Event{Kind: interruption.KindSystemStatus, ImpairedSince: now.Add(-3 * time.Minute)}, InstanceID: "i-1", NodeClaim: "nc"}
	for range 2 {
		if err := h.handle(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	got := &karpv1.NodeClaim{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "nc"}, got); err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp.IsZero() {
		t.Error("the NodeClaim is not being deleted")
	}
	if v := got.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; v != now.Format(time.RFC3339) {
		t.Errorf("termination timestamp %q, want now", v)
	}
	if len(rec.reasons) != 2 || !strings.HasPrefix(rec.reasons[1], ReasonTerminatingOnInterruption+":") {
		t.Errorf("events %v, want InstanceUnhealthy and %s", rec.reasons, ReasonTerminatingOnInterruption)
	}
	want := `
# HELP karpenter_interruption_instance_status_unhealthy_total Count of unhealthy instance statuses detected. Broken down by status check category.
# TYPE karpenter_interruption_instance_status_unhealthy_total counter
karpenter_interruption_instance_status_unhealthy_total{category="system_status"} 1
`
	if err := promtestutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_interruption_instance_status_unhealthy_total"); err != nil {
		t.Error(err)
	}
}
