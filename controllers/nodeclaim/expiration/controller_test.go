package expiration

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world and the expiration controller.
type env struct {
	*environment.Env
	r *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{})}
	e.r = New(e.Kube, e.Clock, e.Events, e.Metrics)
	return e
}

// create creates a spot NodeClaim with the given expireAfter, held once
// deleted, and sets the clock to its creation time, which the API server
// sets from its own clock.
func (e *env) create(name string, expireAfter *karpv1.NillableDuration) *karpv1.NodeClaim {
	e.T.Helper()
	nc := environment.NewNodeClaim(name, "default", "default")
	nc.Labels[wellknown.LabelCapacityType] = wellknown.CapacityTypeSpot
	nc.Finalizers = []string{environment.Hold}
	nc.Spec.ExpireAfter = expireAfter
	e.Create(nc)
	e.Clock.SetTime(nc.CreationTimestamp.Time)
	return nc
}

func (e *env) reconcile(name string) (*karpv1.NodeClaim, reconcile.Result) {
	e.T.Helper()
	res, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		e.T.Fatalf("Reconcile %s: %v", name, err)
	}
	return e.NodeClaim(name), res
}

func TestExpires(t *testing.T) {
	e := newEnv(t)
	e.create("expire-1h", karpv1.NewNillableDuration(time.Hour))

	nc, res := e.reconcile("expire-1h")
	if !nc.DeletionTimestamp.IsZero() || res.RequeueAfter != time.Hour {
		t.Fatalf("at creation: deleting %v, RequeueAfter %s; want kept, requeued after 1h", !nc.DeletionTimestamp.IsZero(), res.RequeueAfter)
	}
	e.Clock.Step(59 * time.Minute)
	if nc, res = e.reconcile("expire-1h"); !nc.DeletionTimestamp.IsZero() || res.RequeueAfter != time.Minute {
		t.Fatalf("after 59m: deleting %v, RequeueAfter %s; want kept, requeued after 1m", !nc.DeletionTimestamp.IsZero(), res.RequeueAfter)
	}

	e.Clock.Step(time.Minute)
	nc, res = e.reconcile("expire-1h")
	if nc.DeletionTimestamp.IsZero() || res.RequeueAfter != 0 {
		t.Fatalf("at expiry: deleting %v, result %+v; want deleted", !nc.DeletionTimestamp.IsZero(), res)
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonExpired || !c.LastTransitionTime.Time.Equal(e.Clock.Now().Truncate(time.Second)) {
		t.Errorf("DisruptionReason = %+v, want True/%s now", c, ReasonExpired)
	}
	if evs := e.Events.All(); len(evs) != 1 || evs[0].Reason != ReasonExpired || !strings.Contains(evs[0].Note, "1h") {
		t.Errorf("events = %v, want one %s event naming expireAfter", e.Events, ReasonExpired)
	}

	// A deleting NodeClaim is left alone: one event, counted once.
	e.Clock.Step(time.Minute)
	e.reconcile("expire-1h")
	if len(e.Events.All()) != 1 {
		t.Errorf("events = %v after a second reconcile", e.Events)
	}
	want := `
# HELP karpenter_nodeclaims_disrupted_total Number of nodeclaims disrupted in total. Labeled by the reason the nodeclaim was disrupted, the owning nodepool and its capacity type.
# TYPE karpenter_nodeclaims_disrupted_total counter
karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="default",reason="expired"} 1
`
	if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(want), metrics.NameNodeClaimsDisrupted); err != nil {
		t.Error(err)
	}
}

// TestLeavesOtherProvidersNodeClaims: of two NodeClaims past their
// expireAfter, stevedore's is deleted and another provider's is left to it.
func TestLeavesOtherProvidersNodeClaims(t *testing.T) {
	e := newEnv(t)
	ours := e.create("expire-ours", karpv1.NewNillableDuration(time.Minute))
	other, _ := e.CreateForeign("expire-kwok", "kwok", func(nc *karpv1.NodeClaim) {
		nc.Spec.ExpireAfter = karpv1.NewNillableDuration(time.Minute)
	})
	e.Clock.Step(time.Hour)
	for _, tc := range []struct {
		name    string
		expired bool
	}{
		{ours.Name, true},
		{other.Name, false},
	} {
		nc, res := e.reconcile(tc.name)
		if deleting := !nc.DeletionTimestamp.IsZero(); deleting != tc.expired {
			t.Errorf("%s: deleting %t, want %t", tc.name, deleting, tc.expired)
		}
		if !tc.expired && (res.RequeueAfter != 0 || meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason) != nil) {
			t.Errorf("%s: RequeueAfter %s, conditions %+v; want neither a requeue nor a DisruptionReason", tc.name, res.RequeueAfter, nc.Status.Conditions)
		}
	}
	if evs := e.Events.About(other.Name, ""); len(evs) > 0 {
		t.Errorf("events about another provider's NodeClaim: %v", evs)
	}
}

func TestExpiredLongAgo(t *testing.T) {
	// A NodeClaim found past its expiry (the controller was down) is deleted
	// at once.
	e := newEnv(t)
	e.create("expire-late", karpv1.NewNillableDuration(time.Minute))
	e.Clock.Step(48 * time.Hour)
	if nc, _ := e.reconcile("expire-late"); nc.DeletionTimestamp.IsZero() {
		t.Error("an overdue NodeClaim was not deleted")
	}
}

func TestNeverExpires(t *testing.T) {
	e := newEnv(t)
	e.create("expire-never", karpv1.NeverDuration())
	e.Clock.Step(10000 * time.Hour)
	nc, res := e.reconcile("expire-never")
	if !nc.DeletionTimestamp.IsZero() || res.RequeueAfter != 0 || len(e.Events.All()) != 0 {
		t.Errorf("expireAfter Never: deleting %v, result %+v, events %v", !nc.DeletionTimestamp.IsZero(), res, e.Events)
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil {
		t.Errorf("DisruptionReason = %+v", c)
	}
}

func TestDefaultExpireAfter(t *testing.T) {
	// The API server defaults expireAfter to 720h.
	e := newEnv(t)
	nc := e.create("expire-default", nil)
	if nc.Spec.ExpireAfter == nil || nc.Spec.ExpireAfter.String() != "720h" {
		t.Fatalf("expireAfter = %v, want the 720h default", nc.Spec.ExpireAfter)
	}
	if _, res := e.reconcile("expire-default"); res.RequeueAfter != 720*time.Hour {
		t.Errorf("RequeueAfter = %s, want 720h", res.RequeueAfter)
	}
}

func TestGone(t *testing.T) {
	e := newEnv(t)
	if _, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "expire-missing"}}); err != nil {
		t.Error(err)
	}
}
