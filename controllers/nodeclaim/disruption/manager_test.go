package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// TestUnderManager runs both controllers as the controller binary does:
// under a manager whose cache serves the node-name index, woken by pod,
// NodePool and node class events rather than driven by hand.
func TestUnderManager(t *testing.T) {
	e := newEnv(t, 310)
	np := e.nodePool("manager-pool", nil)
	e.launched("manager", np)
	nc := e.initialized("manager")

	mgr := environment.NewManager(t)
	r := New(mgr.GetClient(), e.Cloud, e.Clock, mgr.GetEventRecorder(Name))
	if err := r.Register(mgr); err != nil {
		t.Fatal(err)
	}
	e.StartManager(mgr)
	waitFor := func(what string, ok func(*karpv1.NodeClaim) bool) {
		t.Helper()
		environment.Eventually(t, what, func() bool { return ok(e.NodeClaim("manager")) })
	}
	waitFor("the Consolidatable condition", func(nc *karpv1.NodeClaim) bool {
		return condition(nc, karpv1.ConditionTypeConsolidatable) != nil
	})

	// A pod is bound to the node: the pod event is recorded.
	pod := environment.NewPod("manager-pod", "", "")
	e.Create(pod)
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nc.Status.NodeName},
	}
	if err := e.Kube.SubResource("binding").Create(e.Ctx, pod, binding); err != nil {
		t.Fatal(err)
	}
	waitFor("lastPodEventTime", func(nc *karpv1.NodeClaim) bool {
		return nc.Status.LastPodEventTime.Time.Equal(e.Clock.Now())
	})

	// The NodePool's template changes: its NodeClaims are re-checked.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Metadata.Annotations = map[string]string{"example.com/owner": "team-c"}
	})
	waitFor("NodePool drift", func(nc *karpv1.NodeClaim) bool {
		c := condition(nc, karpv1.ConditionTypeDrifted)
		return c != nil && c.Reason == decide.ReasonNodePoolDrifted
	})
	e.updatePool(np.Name, func(np *karpv1.NodePool) { np.Spec.Template.Metadata.Annotations = nil })
	waitFor("NodePool drift to clear", func(nc *karpv1.NodeClaim) bool {
		return condition(nc, karpv1.ConditionTypeDrifted) == nil
	})

	// A new image is released and the EC2NodeClass changes: its NodeClaims
	// are re-checked at once, without waiting for the drift interval.
	img, err := e.AWS.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-manager"})
	if err != nil {
		t.Fatal(err)
	}
	e.setImage(img.ID)
	e.Create(e.NewEC2NodeClass("default"))
	waitFor("AMI drift", func(nc *karpv1.NodeClaim) bool {
		c := condition(nc, karpv1.ConditionTypeDrifted)
		return c != nil && c.Reason == string(drift.AMIDrift)
	})
}
