package disruption

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	"github.com/stevedore-autoscaler/stevedore/decide/capacitybuffer"
)

// buffer records a CapacityBuffer of n placeholders of cpu each.
func (f *fixture) buffer(name, cpu string, n int32) {
	cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: ktypes.UID("uid-" + name)}}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	f.c.SetBufferPods(ktypes.NamespacedName{Namespace: "default", Name: name}, capacitybuffer.VirtualPods(cb, tmpl, n))
}

func TestCapacityBuffers(t *testing.T) {
	// Only one instance type and capacity type: no replacement is cheaper,
	// so only deletions are on the table.
	onDemand := []string{"on-demand"}
	t.Run("nodes keeping a buffer's room are not empty", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, onDemand)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.buffer("spare", "3", 2)
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s, want none: each node keeps one placeholder's room", d.Command)
		}
		for _, n := range []string{a, b} {
			if got := codes(d, n); slices.Contains(got, CodeBudget) {
				t.Errorf("codes(%s) = %v", n, got)
			}
		}
	})
	t.Run("the nodes a buffer does not need go", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.buffer("spare", "3", 1)
		d := Decide(f.input())
		if d.Command == nil || d.Command.Reason != ReasonEmpty {
			t.Fatalf("command = %v, want the empty node deleted", d.Command)
		}
		if got := candidateNames(d.Command); len(got) != 1 || (got[0] != a && got[0] != b) {
			t.Errorf("candidates = %v, want one of %s, %s", got, a, b)
		}
	})
	t.Run("after the buffer is gone its nodes are empty", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.buffer("spare", "3", 2)
		f.c.SetBufferPods(ktypes.NamespacedName{Namespace: "default", Name: "spare"}, nil)
		d := Decide(f.input())
		if d.Command == nil || !slices.Equal(candidateNames(d.Command), []string{a, b}) {
			t.Fatalf("command = %v, want %s and %s deleted", d.Command, a, b)
		}
	})
	t.Run("consolidation does not move pods into a buffer's room", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, onDemand)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.pod("w", b, "2", "1Gi")
		// The placeholder fits on a (first by name) with room to spare; w
		// would fit beside it only if the placeholder's room were free.
		f.buffer("spare", "3", 1)
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s, want none", d.Command)
		}
		_, _ = a, b
	})
	t.Run("a pod and a placeholder that fit on one node share it", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, onDemand)
		f.node(nodeSpec{pool: "p", itype: xlarge})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.pod("w", b, "500m", "1Gi")
		f.buffer("spare", "2", 1)
		d := Decide(f.input())
		if d.Command == nil || d.Command.Method != MethodDelete || len(d.Command.Candidates) != 1 {
			t.Fatalf("command = %v, want one node deleted", d.Command)
		}
	})
}
