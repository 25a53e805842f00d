package expiration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

// hold is a finalizer the tests put on NodeClaims so that a deleted
// NodeClaim stays readable, as the lifecycle controller's finalizer keeps it
// while its node terminates.
const hold = "test.stevedore.dev/hold"

var kube client.Client

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(_ *rest.Config, c client.Client) { kube = c }))
}

type recorder struct {
	mu     sync.Mutex
	events []string // "<reason>: <note>"
}

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, reason+": "+fmt.Sprintf(note, args...))
}

type env struct {
	t   *testing.T
	ctx context.Context
	clk *clocktesting.FakeClock
	rec *recorder
	reg *prometheus.Registry
	r   *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), clk: clocktesting.NewFakeClock(time.Now()), rec: &recorder{}, reg: reg}
	e.r = New(kube, e.clk, e.rec, m)
	return e
}

// create creates a NodeClaim with the given expireAfter and sets the clock
// to its creation time, which the API server sets from its own clock.
func (e *env) create(name string, expireAfter *karpv1.NillableDuration) *karpv1.NodeClaim {
	e.t.Helper()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Labels:     map[string]string{wellknown.LabelNodePool: "default", wellknown.LabelCapacityType: wellknown.CapacityTypeSpot},
			Finalizers: []string{hold},
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpExists}},
			NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"},
			ExpireAfter:  expireAfter,
		},
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx := context.Background()
		cur := &karpv1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
			return
		}
		base := cur.DeepCopy()
		cur.Finalizers = nil
		_ = kube.Patch(ctx, cur, client.MergeFrom(base))
		_ = kube.Delete(ctx, cur)
	})
	e.clk.SetTime(nc.CreationTimestamp.Time)
	return nc
}

func (e *env) reconcile(name string) (*karpv1.NodeClaim, reconcile.Result) {
	e.t.Helper()
	res, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		e.t.Fatalf("Reconcile %s: %v", name, err)
	}
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		e.t.Fatal(err)
	}
	return nc, res
}

func TestExpires(t *testing.T) {
	e := newEnv(t)
	e.create("expire-1h", karpv1.NewNillableDuration(time.Hour))

	nc, res := e.reconcile("expire-1h")
	if !nc.DeletionTimestamp.IsZero() || res.RequeueAfter != time.Hour {
		t.Fatalf("at creation: deleting %v, RequeueAfter %s; want kept, requeued after 1h", !nc.DeletionTimestamp.IsZero(), res.RequeueAfter)
	}
	e.clk.Step(59 * time.Minute)
	if nc, res = e.reconcile("expire-1h"); !nc.DeletionTimestamp.IsZero() || res.RequeueAfter != time.Minute {
		t.Fatalf("after 59m: deleting %v, RequeueAfter %s; want kept, requeued after 1m", !nc.DeletionTimestamp.IsZero(), res.RequeueAfter)
	}

	e.clk.Step(time.Minute)
	nc, res = e.reconcile("expire-1h")
	if nc.DeletionTimestamp.IsZero() || res.RequeueAfter != 0 {
		t.Fatalf("at expiry: deleting %v, result %+v; want deleted", !nc.DeletionTimestamp.IsZero(), res)
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonExpired || !c.LastTransitionTime.Time.Equal(e.clk.Now().Truncate(time.Second)) {
		t.Errorf("DisruptionReason = %+v, want True/%s now", c, ReasonExpired)
	}
	if len(e.rec.events) != 1 || !strings.HasPrefix(e.rec.events[0], ReasonExpired+": ") || !strings.Contains(e.rec.events[0], "1h") {
		t.Errorf("events = %v, want one %s event naming expireAfter", e.rec.events, ReasonExpired)
	}

	// A deleting NodeClaim is left alone: one event, counted once.
	e.clk.Step(time.Minute)
	e.reconcile("expire-1h")
	if len(e.rec.events) != 1 {
		t.Errorf("events = %v after a second reconcile", e.rec.events)
	}
	want := `
# HELP karpenter_nodeclaims_disrupted_total Number of nodeclaims disrupted in total. Labeled by the reason the nodeclaim was disrupted, the owning nodepool and its capacity type.
# TYPE karpenter_nodeclaims_disrupted_total counter
karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="default",reason="expired"} 1
`
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), metrics.NameNodeClaimsDisrupted); err != nil {
		t.Error(err)
	}
}

func TestExpiredLongAgo(t *testing.T) {
	// A NodeClaim found past its expiry (the controller was down) is deleted
	// at once.
	e := newEnv(t)
	e.create("expire-late", karpv1.NewNillableDuration(time.Minute))
	e.clk.Step(48 * time.Hour)
	if nc, _ := e.reconcile("expire-late"); nc.DeletionTimestamp.IsZero() {
		t.Error("an overdue NodeClaim was not deleted")
	}
}

func TestNeverExpires(t *testing.T) {
	e := newEnv(t)
	e.create("expire-never", karpv1.NeverDuration())
	e.clk.Step(10000 * time.Hour)
	nc, res := e.reconcile("expire-never")
	if !nc.DeletionTimestamp.IsZero() || res.RequeueAfter != 0 || len(e.rec.events) != 0 {
		t.Errorf("expireAfter Never: deleting %v, result %+v, events %v", !nc.DeletionTimestamp.IsZero(), res, e.rec.events)
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
	if _, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "expire-missing"}}); err != nil {
		t.Error(err)
	}
}
