package status

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/scheduling/overlay"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

var kube client.Client

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(_ *rest.Config, c client.Client) { kube = c }))
}

// catalog is a cloud provider that lists two instance types for every
// NodePool; nothing else is called.
type catalog struct{ cloud.CloudProvider }

func (catalog) Name() string { return "test" }

func (catalog) GetSupportedNodeClasses() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{awsv1.GroupVersion.WithKind("EC2NodeClass")}
}

func (catalog) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*packer.InstanceType, error) {
	var out []*packer.InstanceType
	for _, name := range []string{"m5.large", "c5.large"} {
		out = append(out, &packer.InstanceType{
			Name:         name,
			Requirements: requirements.FromLabels(map[string]string{wellknown.LabelInstanceType: name, wellknown.LabelInstanceFamily: name[:2]}),
			Offerings:    []packer.Offering{{Zone: "a", CapacityType: "on-demand", PricePerHour: 1, Available: true}},
		})
	}
	return out, nil
}

type env struct {
	t     *testing.T
	ctx   context.Context
	state *state.Cluster
	c     *Controller
}

func newEnv(t *testing.T) *env {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := &env{t: t, ctx: context.Background(), state: state.NewCluster()}
	e.c = New(kube, e.state, catalog{}, clk)
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	e.state.UpdateEC2NodeClass(nc)
	e.state.UpdateNodePool(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
		Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"}},
	}}})
	return e
}

// overlay creates a NodeOverlay through the API server (so that its CRD's
// rules apply) and tells the state about it, as the informer would.
func (e *env) overlay(name string, weight int32, adjustment string, reqs ...v1alpha1.NodeSelectorRequirement) {
	e.t.Helper()
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{
		Weight: &weight, PriceAdjustment: &adjustment, Requirements: append([]v1alpha1.NodeSelectorRequirement{}, reqs...)}}
	if err := kube.Create(e.ctx, o); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kube.Delete(context.Background(), o) })
	e.state.UpdateNodeOverlay(o)
}

func (e *env) reconcile() {
	e.t.Helper()
	res, err := e.c.Reconcile(e.ctx, reconcile.Request{})
	if err != nil {
		e.t.Fatal(err)
	}
	if res.RequeueAfter != Period {
		e.t.Fatalf("requeue after %v, want %v", res.RequeueAfter, Period)
	}
}

// conditions returns "ValidationSucceeded/Ready reason" of the stored overlay.
func (e *env) conditions(name string) (string, string) {
	e.t.Helper()
	o := &v1alpha1.NodeOverlay{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, o); err != nil {
		e.t.Fatal(err)
	}
	v := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeValidationSucceeded)
	r := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
	if v == nil || r == nil {
		e.t.Fatalf("%s: conditions %+v", name, o.Status.Conditions)
	}
	if v.ObservedGeneration != o.Generation {
		e.t.Errorf("%s: observed generation %d, want %d", name, v.ObservedGeneration, o.Generation)
	}
	return string(v.Status) + "/" + string(r.Status) + " " + v.Reason, v.Message
}

func TestConditions(t *testing.T) {
	e := newEnv(t)
	family := func(f string) v1alpha1.NodeSelectorRequirement {
		return v1alpha1.NodeSelectorRequirement{Key: wellknown.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{f}}
	}
	e.overlay("valid", 50, "+10%", family("m5"))
	e.overlay("loser", 20, "-10%")
	e.overlay("winner", 20, "+1")
	// The API server accepts a key in the karpenter.k8s.aws domain; stevedore
	// does not know it.
	e.overlay("unknown-label", 30, "+1", v1alpha1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/made-up", Operator: corev1.NodeSelectorOpExists})
	e.reconcile()

	for name, want := range map[string]string{
		"valid":         "True/True ValidationSucceeded",
		"winner":        "True/True ValidationSucceeded",
		"loser":         "False/False Conflict",
		"unknown-label": "False/False RuntimeValidation",
	} {
		if got, _ := e.conditions(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if _, msg := e.conditions("loser"); !strings.Contains(msg, "NodeOverlay winner") {
		t.Errorf("loser's message %q does not name winner", msg)
	}
	if _, msg := e.conditions("unknown-label"); !strings.Contains(msg, "spec.requirements[0].key") {
		t.Errorf("unknown-label's message %q does not name the field", msg)
	}

	// A new weight ends the conflict at the next pass.
	o := &v1alpha1.NodeOverlay{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: "loser"}, o); err != nil {
		t.Fatal(err)
	}
	w := int32(10)
	o.Spec.Weight = &w
	if err := kube.Update(e.ctx, o); err != nil {
		t.Fatal(err)
	}
	e.state.UpdateNodeOverlay(o)
	e.reconcile()
	if got, _ := e.conditions("loser"); got != "True/True ValidationSucceeded" {
		t.Errorf("loser after reweighing: %s", got)
	}
}

func TestSetConditionsKeepsTransitionTime(t *testing.T) {
	o := &v1alpha1.NodeOverlay{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	SetConditions(o, overlayVerdict(true), t0)
	SetConditions(o, overlayVerdict(true), t0.Add(time.Hour))
	if c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("transition time %v, want %v", c.LastTransitionTime, t0)
	}
	SetConditions(o, overlayVerdict(false), t0.Add(2*time.Hour))
	c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonNotValidated || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("Ready %+v", c)
	}
}

func overlayVerdict(valid bool) overlay.Verdict {
	if valid {
		return overlay.Verdict{Name: "o", Valid: true}
	}
	return overlay.Verdict{Name: "o", Reason: v1alpha1.ReasonConflict, Message: "conflicts"}
}
