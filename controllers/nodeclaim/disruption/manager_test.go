package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
)

// TestUnderManager runs both controllers as the controller binary does:
// under a manager whose cache serves the node-name index, woken by pod,
// NodePool and node class events rather than driven by hand.
func TestUnderManager(t *testing.T) {
	e := newEnv(t, 310)
	np := e.nodePool("manager-pool", nil)
	e.launched("manager", np)
	nc := e.initialized("manager")

	mgr, err := manager.New(kubeCfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := New(mgr.GetClient(), e.p, e.clk, mgr.GetEventRecorder(Name))
	if err := r.Register(mgr); err != nil {
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
	waitFor := func(what string, ok func(*karpv1.NodeClaim) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if ok(e.get("manager")) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s: %+v", what, e.get("manager").Status)
	}
	waitFor("the Consolidatable condition", func(nc *karpv1.NodeClaim) bool {
		return condition(nc, karpv1.ConditionTypeConsolidatable) != nil
	})

	// A pod is bound to the node: the pod event is recorded.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "manager-pod", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/app"}}},
	}
	if err := kube.Create(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nc.Status.NodeName},
	}
	if err := kube.SubResource("binding").Create(e.ctx, pod, binding); err != nil {
		t.Fatal(err)
	}
	waitFor("lastPodEventTime", func(nc *karpv1.NodeClaim) bool {
		return nc.Status.LastPodEventTime.Time.Equal(e.clk.Now())
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
	img, err := e.aws.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-manager"})
	if err != nil {
		t.Fatal(err)
	}
	e.setImage(img.ID)
	class := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       e.world.NodeRole,
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: clusterName}}},
		},
	}
	if err := kube.Create(e.ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), class) })
	waitFor("AMI drift", func(nc *karpv1.NodeClaim) bool {
		c := condition(nc, karpv1.ConditionTypeDrifted)
		return c != nil && c.Reason == string(drift.AMIDrift)
	})
}
