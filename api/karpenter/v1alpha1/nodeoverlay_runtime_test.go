package v1alpha1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRuntimeProblems(t *testing.T) {
	o := &NodeOverlay{Spec: NodeOverlaySpec{Requirements: []NodeSelectorRequirement{
		{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
		{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}},
		{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
		{Key: "karpenter.k8s.aws/made-up", Operator: corev1.NodeSelectorOpExists},
		{Key: "example.com/team", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "not a value!"}},
	}}}
	got := o.RuntimeProblems()
	if len(got) != 2 {
		t.Fatalf("problems %+v, want the made-up key and the bad value", got)
	}
	if p := got[0]; p.Path != "spec.requirements[3].key" || !strings.Contains(p.Message, "karpenter.k8s.aws/made-up") || p.Fix != RequirementKeyFix {
		t.Errorf("key problem %+v", p)
	}
	if p := got[1]; p.Path != "spec.requirements[4].values[1]" || !strings.Contains(p.Message, `"not a value!"`) || p.Fix == "" {
		t.Errorf("value problem %+v", p)
	}
	if got := (&NodeOverlay{}).RuntimeProblems(); len(got) != 0 {
		t.Errorf("an overlay without requirements has problems %+v", got)
	}
}
