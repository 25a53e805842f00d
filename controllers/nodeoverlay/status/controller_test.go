package status

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

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

// env is one test's world and the status controller over the catalog.
type env struct {
	*environment.Env
	c *Controller
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{})}
	e.c = New(e.Kube, e.State, catalog{}, e.Clock)
	e.State.UpdateEC2NodeClass(e.NewEC2NodeClass("default"))
	// The NodePool goes through the API server: the controller waits until
	// the state holds what its client lists.
	np := environment.NewNodePool("default", "default")
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}
	e.Create(np)
	e.State.UpdateNodePool(np)
	return e
}

// overlay creates a NodeOverlay through the API server (so that its CRD's
// rules apply) and tells the state about it, as the informer would.
func (e *env) overlay(name string, weight int32, adjustment string, reqs ...v1alpha1.NodeSelectorRequirement) {
	e.T.Helper()
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{
		Weight: &weight, PriceAdjustment: &adjustment, Requirements: append([]v1alpha1.NodeSelectorRequirement{}, reqs...)}}
	e.Create(o)
	e.State.UpdateNodeOverlay(o)
}

func (e *env) reconcile() {
	e.T.Helper()
	res, err := e.c.Reconcile(e.Ctx, reconcile.Request{})
	if err != nil {
		e.T.Fatal(err)
	}
	if res.RequeueAfter != Period {
		e.T.Fatalf("requeue after %v, want %v", res.RequeueAfter, Period)
	}
}

// conditions returns "ValidationSucceeded/Ready reason" of the stored overlay.
func (e *env) conditions(name string) (string, string) {
	e.T.Helper()
	o := &v1alpha1.NodeOverlay{}
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Name: name}, o); err != nil {
		e.T.Fatal(err)
	}
	v := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeValidationSucceeded)
	r := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
	if v == nil || r == nil {
		e.T.Fatalf("%s: conditions %+v", name, o.Status.Conditions)
	}
	if v.ObservedGeneration != o.Generation {
		e.T.Errorf("%s: observed generation %d, want %d", name, v.ObservedGeneration, o.Generation)
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
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Name: "loser"}, o); err != nil {
		t.Fatal(err)
	}
	w := int32(10)
	o.Spec.Weight = &w
	if err := e.Kube.Update(e.Ctx, o); err != nil {
		t.Fatal(err)
	}
	e.State.UpdateNodeOverlay(o)
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

// TestWaitsForTheState: an overlay the API server has but the cluster state
// has not seen yet is not judged; the controller looks again in a second.
func TestWaitsForTheState(t *testing.T) {
	e := newEnv(t)
	adj := "+1"
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "unseen"}, Spec: v1alpha1.NodeOverlaySpec{PriceAdjustment: &adj, Requirements: []v1alpha1.NodeSelectorRequirement{}}}
	e.Create(o)
	res, err := e.c.Reconcile(e.Ctx, reconcile.Request{})
	if err != nil || res.RequeueAfter != time.Second {
		t.Fatalf("Reconcile = %+v, %v; want a requeue after 1s", res, err)
	}
	e.State.UpdateNodeOverlay(o)
	e.reconcile()
	if got, _ := e.conditions("unseen"); got != "True/True ValidationSucceeded" {
		t.Errorf("unseen: %s", got)
	}
}
