package capacitybuffer

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world and the controller under test.
type env struct {
	*environment.Env
	c     *Controller
	wakes int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{Name: "buffers"})}
	e.c = New(e.Kube, e.State, e.Clock, func() { e.wakes++ })
	return e
}

func (e *env) reconcile(name string) reconcile.Result {
	e.T.Helper()
	res, err := e.c.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Name, Name: name}})
	if err != nil {
		e.T.Fatalf("reconcile %s: %v", name, err)
	}
	return res
}

func (e *env) get(name string) *autoscalingv1beta1.CapacityBuffer {
	e.T.Helper()
	cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: e.Name, Name: name}}
	e.Refresh(cb)
	return cb
}

// placeholders counts the buffer's placeholder pods in the state.
func (e *env) placeholders(name string) int {
	n := 0
	for _, p := range e.State.Snapshot(time.Now()).BufferPods {
		if p.Namespace == e.Name && p.Annotations[wellknown.AnnotationCapacityBufferName] == name {
			n++
		}
	}
	return n
}

func condition(cb *autoscalingv1beta1.CapacityBuffer, t string) metav1.Condition {
	if c := meta.FindStatusCondition(cb.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func podSpec(cpu string) corev1.PodSpec { return environment.NewPod("", cpu, "256Mi").Spec }

func TestPodTemplateBuffer(t *testing.T) {
	e := newEnv(t)
	e.Create(
		&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chunk"}, Template: corev1.PodTemplateSpec{Spec: podSpec("1")}},
		&autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "headroom"}, Spec: autoscalingv1beta1.CapacityBufferSpec{
			PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](3)}},
	)
	if res := e.reconcile("headroom"); res.RequeueAfter != Requeue {
		t.Errorf("requeue after %s, want %s", res.RequeueAfter, Requeue)
	}
	cb := e.get("headroom")
	if cb.Status.Replicas == nil || *cb.Status.Replicas != 3 || cb.Status.PodTemplateRef == nil || cb.Status.PodTemplateRef.Name != "chunk" || cb.Status.PodTemplateGeneration == nil {
		t.Fatalf("status %+v", cb.Status)
	}
	if cb.Status.ProvisioningStrategy == nil || *cb.Status.ProvisioningStrategy != autoscalingv1beta1.ActiveProvisioningStrategy {
		t.Errorf("status.provisioningStrategy = %v, want the API's default", cb.Status.ProvisioningStrategy)
	}
	if c := condition(cb, autoscalingv1beta1.ConditionReadyForProvisioning); c.Status != metav1.ConditionTrue || c.Reason != autoscalingv1beta1.ReasonResolved {
		t.Errorf("ReadyForProvisioning = %+v", c)
	}
	if n := e.placeholders("headroom"); n != 3 || e.wakes != 1 {
		t.Errorf("%d placeholders, %d wakes; want 3, 1", n, e.wakes)
	}

	// The PodTemplate changes: its new generation is observed.
	gen := *cb.Status.PodTemplateGeneration
	pt := &corev1.PodTemplate{}
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Namespace: e.Name, Name: "chunk"}, pt); err != nil {
		t.Fatal(err)
	}
	pt.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	if err := e.Kube.Update(e.Ctx, pt); err != nil {
		t.Fatal(err)
	}
	if reqs := e.c.BuffersNaming(KindPodTemplate)(e.Ctx, pt); len(reqs) != 1 || reqs[0].Name != "headroom" {
		t.Fatalf("the PodTemplate wakes %v, want the buffer", reqs)
	}
	e.reconcile("headroom")
	if cb := e.get("headroom"); *cb.Status.PodTemplateGeneration <= gen {
		t.Errorf("podTemplateGeneration %d, want more than %d", *cb.Status.PodTemplateGeneration, gen)
	}

	// Zero replicas: nothing to provision, and the condition says so.
	cb = e.get("headroom")
	cb.Spec.Replicas = ptr.To[int32](0)
	if err := e.Kube.Update(e.Ctx, cb); err != nil {
		t.Fatal(err)
	}
	e.reconcile("headroom")
	if c := condition(e.get("headroom"), autoscalingv1beta1.ConditionProvisioning); c.Status != metav1.ConditionFalse || c.Reason != autoscalingv1beta1.ReasonBufferEmpty {
		t.Errorf("Provisioning = %+v, want False/%s", c, autoscalingv1beta1.ReasonBufferEmpty)
	}
	if n := e.placeholders("headroom"); n != 0 {
		t.Errorf("%d placeholders for zero replicas", n)
	}

	// Deleted: its placeholders are forgotten.
	cb = e.get("headroom")
	cb.Spec.Replicas = ptr.To[int32](2)
	if err := e.Kube.Update(e.Ctx, cb); err != nil {
		t.Fatal(err)
	}
	e.reconcile("headroom")
	if n := e.placeholders("headroom"); n != 2 {
		t.Fatalf("%d placeholders, want 2", n)
	}
	if err := e.Kube.Delete(e.Ctx, cb); err != nil {
		t.Fatal(err)
	}
	e.reconcile("headroom")
	if n := e.placeholders("headroom"); n != 0 {
		t.Errorf("%d placeholders after the buffer was deleted", n)
	}
}

func TestScalableRefBuffer(t *testing.T) {
	e := newEnv(t)
	e.Create(&autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "headroom"}, Spec: autoscalingv1beta1.CapacityBufferSpec{
		ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}, Percentage: ptr.To[int32](20)}})
	e.reconcile("headroom")
	cb := e.get("headroom")
	if c := condition(cb, autoscalingv1beta1.ConditionReadyForProvisioning); c.Status != metav1.ConditionFalse || c.Reason != autoscalingv1beta1.ReasonScalableRefNotFound {
		t.Errorf("ReadyForProvisioning = %+v, want False/%s", c, autoscalingv1beta1.ReasonScalableRefNotFound)
	}
	if c := condition(cb, autoscalingv1beta1.ConditionProvisioning); c.Status != metav1.ConditionFalse || c.Reason != autoscalingv1beta1.ReasonNotReadyForProvisioning {
		t.Errorf("Provisioning = %+v, want False/%s", c, autoscalingv1beta1.ReasonNotReadyForProvisioning)
	}

	// The Deployment appears, with 10 replicas: 20% is 2 chunks.
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](10), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("500m")}}}
	e.Create(dep)
	if reqs := e.c.BuffersNaming(autoscalingv1beta1.KindDeployment)(e.Ctx, dep); len(reqs) != 1 {
		t.Fatalf("the Deployment wakes %v, want the buffer", reqs)
	}
	e.reconcile("headroom")
	cb = e.get("headroom")
	if c := condition(cb, autoscalingv1beta1.ConditionReadyForProvisioning); c.Status != metav1.ConditionTrue {
		t.Fatalf("ReadyForProvisioning = %+v", c)
	}
	if *cb.Status.Replicas != 2 || cb.Status.PodTemplateRef != nil || cb.Status.PodTemplateGeneration != nil {
		t.Errorf("status %+v, want 2 replicas and no PodTemplate", cb.Status)
	}
	if n := e.placeholders("headroom"); n != 2 {
		t.Errorf("%d placeholders, want 2", n)
	}
	// The placeholders carry the template's labels, so that affinities
	// and spread constraints count them.
	for _, p := range e.State.Snapshot(time.Now()).BufferPods {
		if p.Namespace == e.Name && p.Labels["app"] != "web" {
			t.Errorf("placeholder %s has labels %v", p.Name, p.Labels)
		}
	}

	// Scaled to 20: 4 chunks.
	dep.Spec.Replicas = ptr.To[int32](20)
	if err := e.Kube.Update(e.Ctx, dep); err != nil {
		t.Fatal(err)
	}
	e.reconcile("headroom")
	if cb := e.get("headroom"); *cb.Status.Replicas != 4 {
		t.Errorf("replicas %d after scaling to 20, want 4", *cb.Status.Replicas)
	}
}

func TestUnsupportedScalableRef(t *testing.T) {
	e := newEnv(t)
	e.Create(&autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "headroom"}, Spec: autoscalingv1beta1.CapacityBufferSpec{
		ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "argoproj.io", Kind: "Rollout", Name: "web"}, Replicas: ptr.To[int32](1)}})
	e.reconcile("headroom")
	if c := condition(e.get("headroom"), autoscalingv1beta1.ConditionReadyForProvisioning); c.Status != metav1.ConditionFalse || c.Reason != autoscalingv1beta1.ReasonResolutionFailed {
		t.Errorf("ReadyForProvisioning = %+v, want False/%s", c, autoscalingv1beta1.ReasonResolutionFailed)
	}
	if n := e.placeholders("headroom"); n != 0 {
		t.Errorf("%d placeholders", n)
	}
}
