package disruption

import (
	"fmt"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A budget's matchLabels matched by lookups agree with the label selector
// it stands for, and selectors with expressions or no labels keep theirs.
func TestPDBIndexMatchesLikeItsSelector(t *testing.T) {
	selectors := []*metav1.LabelSelector{
		{MatchLabels: map[string]string{"app": "web"}},
		{MatchLabels: map[string]string{"app": "web", "tier": "front"}},
		{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"back"}}}},
		{}, // every pod
	}
	pods := []map[string]string{
		{"app": "web"}, {"app": "web", "tier": "front"}, {"app": "web", "tier": "back"}, {"app": "api"}, {"tier": "front"}, nil,
	}
	for si, ls := range selectors {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", si), Namespace: "apps"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: ls}}
		idx := newPDBIndex([]*policyv1.PodDisruptionBudget{pdb})
		c := &idx.byNamespace["apps"][0]
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range pods {
			if got, want := c.matches(l), sel.Matches(labels.Set(l)); got != want {
				t.Errorf("selector %v on labels %v: %v, want %v", ls, l, got, want)
			}
		}
	}
}
