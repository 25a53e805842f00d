package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/decide/capacitybuffer"
)

// buffer creates a resolved CapacityBuffer of n chunks of cpu each and
// records its placeholders in the state, as the CapacityBuffer controller
// does.
func (e *env) buffer(name, cpu string, n int32) *autoscalingv1beta1.CapacityBuffer {
	e.T.Helper()
	cb := &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.Name, Name: name},
		Spec:       autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To(n)},
	}
	e.Create(cb)
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("512Mi")}}}},
		Tolerations: []corev1.Toleration{{Key: teamTaint.Key, Operator: corev1.TolerationOpEqual, Value: teamTaint.Value, Effect: teamTaint.Effect}},
	}}
	res := capacitybuffer.Resolution{Ready: true, Reason: autoscalingv1beta1.ReasonResolved, Message: "resolved", Template: tmpl, Replicas: n}
	cb.Status = capacitybuffer.Status(cb, res, e.Clock.Now())
	if err := e.Kube.Status().Update(e.Ctx, cb); err != nil {
		e.T.Fatal(err)
	}
	e.State.SetBufferPods(types.NamespacedName{Namespace: e.Name, Name: name}, capacitybuffer.VirtualPods(cb, tmpl, n))
	return cb
}

func (e *env) provisioning(name string) *metav1.Condition {
	e.T.Helper()
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Namespace: e.Name, Name: name}, cb); err != nil {
		e.T.Fatal(err)
	}
	return meta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
}

// TestCapacityBufferLaunches: a buffer's placeholders are packed like pending
// pods, after the real pods; NodeClaims are launched for them and the
// buffer's Provisioning condition says so; on the next pass they fit on
// those NodeClaims and nothing more is launched; NodePool limits hold.
func TestCapacityBufferLaunches(t *testing.T) {
	e := newEnv(t, "prov-buffer", 211)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	// Room for two c6i.large (2 vCPU) nodes and no more.
	e.nodePool(func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6i.large"}})
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	})
	e.buffer("headroom", "1", 10)

	e.batch()
	claims := e.nodeClaims()
	if len(claims) != 2 {
		t.Fatalf("%d NodeClaims, want the 2 the NodePool's limits allow", len(claims))
	}
	c := e.provisioning("headroom")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != autoscalingv1beta1.ReasonRequiresNewCapacity {
		t.Fatalf("Provisioning = %+v, want False/%s", c, autoscalingv1beta1.ReasonRequiresNewCapacity)
	}
	// Placeholders are not pods: no events about them.
	for _, r := range []string{ReasonNominated, ReasonFailedScheduling} {
		if evs := e.podEvents("capacity-buffer-headroom-1", r); len(evs) != 0 {
			t.Errorf("events about a placeholder: %+v", evs)
		}
	}

	// Once launched, the NodeClaims' capacity counts against the limits:
	// the next pass launches nothing more.
	lc := lifecycle.New(e.Kube, e.Cloud, e.Clock, e.Events, e.Metrics)
	for _, nc := range claims {
		for range 3 {
			if _, err := lc.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
				t.Fatalf("lifecycle %s: %v", nc.Name, err)
			}
		}
	}
	e.Clock.Step(Period)
	e.batch()
	if got := e.nodeClaims(); len(got) != 2 {
		t.Fatalf("%d NodeClaims after another pass, want 2", len(got))
	}
}

// TestCapacityBufferFitsInFlight: once the buffer's NodeClaims are launched,
// the placeholders fit on them and the buffer is FitsExistingCapacity.
func TestCapacityBufferFitsInFlight(t *testing.T) {
	e := newEnv(t, "prov-buffer-fit", 212)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool(func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6i.large"}})
	})
	e.buffer("headroom", "1", 2)
	e.batch()
	claims := e.nodeClaims()
	if len(claims) != 2 {
		t.Fatalf("%d NodeClaims, want 2 (one 1-vCPU chunk per 2-vCPU node)", len(claims))
	}
	e.Clock.Step(Period)
	e.batch()
	if got := e.nodeClaims(); len(got) != 2 {
		t.Fatalf("%d NodeClaims after another pass, want 2", len(got))
	}
	c := e.provisioning("headroom")
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != autoscalingv1beta1.ReasonFitsExistingCapacity {
		t.Fatalf("Provisioning = %+v, want True/%s", c, autoscalingv1beta1.ReasonFitsExistingCapacity)
	}

	// A real pod takes one chunk's room: the buffer needs a node again.
	e.pod("real", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	})
	e.Clock.Step(Period)
	e.batch()
	if got := e.nodeClaims(); len(got) != 3 {
		t.Fatalf("%d NodeClaims after a real pod took a chunk's room, want 3", len(got))
	}
}
