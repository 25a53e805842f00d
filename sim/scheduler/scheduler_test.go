package scheduler

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
)

func node(name, zone, cpu string, taints ...corev1.Taint) *corev1.Node {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func pod(name, cpu string, class string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}, Spec: corev1.PodSpec{
		PriorityClassName: class,
		Containers:        []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
	}}
}

func boundTo(t *testing.T, api *apiserver.Server, name string) (string, *corev1.PodCondition) {
	t.Helper()
	p := simtest.Get(t, api, "apps", name, &corev1.Pod{})
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return p.Spec.NodeName, &p.Status.Conditions[i]
		}
	}
	return p.Spec.NodeName, nil
}

func TestBindsByPriorityAndMarksTheRestUnschedulable(t *testing.T) {
	api, clk := simtest.Server(t, "apps")
	b := New(api, clk)
	// No nodes at all.
	simtest.Create(t, api, pod("early", "1", ""))
	simtest.Reconcile(t, b, "", Name)
	if n, c := boundTo(t, api, "early"); n != "" || c == nil || c.Reason != ReasonUnschedulable || c.Message != "no nodes available to schedule pods" {
		t.Fatalf("without nodes: node %q condition %+v", n, c)
	}
	// One node with room for one of the two pods: the high-priority one
	// wins although it came later.
	simtest.Create(t, api, node("small", "a", "1500m"), node("tainted", "a", "8", corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}))
	simtest.Create(t, api, pod("urgent", "1", "system-cluster-critical"))
	simtest.Reconcile(t, b, "", Name)
	if n, c := boundTo(t, api, "urgent"); n != "small" || c.Status != corev1.ConditionTrue {
		t.Errorf("urgent: node %q condition %+v", n, c)
	}
	n, c := boundTo(t, api, "early")
	if n != "" || c.Reason != ReasonUnschedulable {
		t.Fatalf("early: node %q condition %+v", n, c)
	}
	for _, want := range []string{"0/2 nodes are available", "1 Insufficient cpu", "1 node(s) had untolerated taint {gpu: }"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	// A bigger node arrives.
	simtest.Create(t, api, node("big", "a", "4"))
	simtest.Reconcile(t, b, "", Name)
	if n, _ := boundTo(t, api, "early"); n != "big" {
		t.Errorf("early went to %q", n)
	}
}

func TestScoringPrefersTheLeastAllocatedNode(t *testing.T) {
	api, clk := simtest.Server(t, "apps")
	b := New(api, clk)
	simtest.Create(t, api, node("a", "a", "4"), node("b", "a", "8"))
	simtest.Create(t, api, pod("p", "1", ""))
	simtest.Reconcile(t, b, "", Name)
	if n, _ := boundTo(t, api, "p"); n != "b" {
		t.Errorf("bound to %q, want the emptier b", n)
	}
}

func TestVolumesBindInTheZoneOfTheirFirstNode(t *testing.T) {
	api, clk := simtest.Server(t, "apps")
	b := New(api, clk)
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "apps"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
	}}
	withClaim := func(name string) *corev1.Pod {
		p := pod(name, "100m", "")
		p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		return p
	}
	simtest.Create(t, api, claim, node("in-b", "b", "4"), withClaim("first"))
	simtest.Reconcile(t, b, "", Name)
	if n, _ := boundTo(t, api, "first"); n != "in-b" {
		t.Fatalf("first went to %q", n)
	}
	claim = simtest.Get(t, api, "apps", "data", &corev1.PersistentVolumeClaim{})
	if claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim not bound: %+v", claim)
	}
	// The pod's successor may only go to zone b.
	if err := api.Delete(ctx, simtest.Get(t, api, "apps", "first", &corev1.Pod{}), ctxGrace0()); err != nil {
		t.Fatal(err)
	}
	simtest.Create(t, api, node("in-a", "a", "16"), withClaim("second"))
	simtest.Reconcile(t, b, "", Name)
	if n, _ := boundTo(t, api, "second"); n != "in-b" {
		t.Errorf("second went to %q, want in-b, where its volume is", n)
	}
}

func ctxGrace0() *client.DeleteOptions {
	zero := int64(0)
	return &client.DeleteOptions{GracePeriodSeconds: &zero}
}
