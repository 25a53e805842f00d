package disruption

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// TestConsolidationOrder checks Karpenter's candidate order: price over
// (1 + the positive eviction costs of the reschedulable pods), highest
// first, ties by name; DaemonSet pods and the NodeClaim's remaining
// lifetime do not change it.
func TestConsolidationOrder(t *testing.T) {
	cand := func(name, pool string, price float64, pods int) *Candidate {
		sn := &state.StateNode{
			Node:      &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
			NodeClaim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}},
		}
		for i := range pods {
			sn.Pods = append(sn.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: name + string(rune('a'+i))},
				Spec: corev1.PodSpec{NodeName: name}})
		}
		c := newCandidate(sn, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}, time.Unix(0, 0), newPDBIndex(nil), catalog{})
		c.Price, c.PriceKnown = price, true
		return c
	}
	// a: $0.192/h, 3 pods: 0.192/4 = 0.048. b: $0.085/h, 1 pod: 0.085/2 =
	// 0.0425. By price per pod alone (0.064 and 0.085) b would go first.
	a := cand("a", "p", 0.192, 3)
	b := cand("b", "p", 0.085, 1)
	if a.RescheduleDisruptionCost != 4 || b.RescheduleDisruptionCost != 2 {
		t.Fatalf("reschedule costs %v and %v, want 4 and 2", a.RescheduleDisruptionCost, b.RescheduleDisruptionCost)
	}
	// c and d tie with b; by name.
	c := cand("c", "q", 0.085, 1)
	d := cand("d", "q", 0.0425, 0)
	got := []*Candidate{d, c, b, a}
	slices.SortStableFunc(got, byValue)
	if names := candNames(got); !slices.Equal(names, []string{"a", "b", "c", "d"}) {
		t.Errorf("order %v, want [a b c d]", names)
	}
	// Single-node consolidation takes them round-robin by NodePool.
	if names := candNames(interleaveByPool(got)); !slices.Equal(names, []string{"a", "c", "b", "d"}) {
		t.Errorf("single-node order %v, want [a c b d]", names)
	}
}

func candNames(cs []*Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name()
	}
	return out
}
