package disruption

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The budget index finds, for every pod, exactly the budgets whose
// selectors select it, in the order it was given them, whether a selector
// is matchLabels alone (filed under a label), has expressions, or is empty
// (every pod); and none of another namespace's.
func TestPDBIndexSelectsLikeTheSelectors(t *testing.T) {
	selectors := []*metav1.LabelSelector{
		{MatchLabels: map[string]string{"tier": "front"}}, // filed after the app ones, listed first
		{MatchLabels: map[string]string{"app": "web"}},
		{MatchLabels: map[string]string{"app": "web", "tier": "front"}},
		{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"back"}}}},
		{MatchLabels: map[string]string{"app": "api"}},
		{},  // every pod
		nil, // no pod
	}
	var pdbs []*policyv1.PodDisruptionBudget
	for i, ls := range selectors {
		pdbs = append(pdbs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i), Namespace: "apps"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: ls}})
	}
	pdbs = append(pdbs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}})
	idx := newPDBIndex(pdbs)
	podLabels := []map[string]string{
		{"app": "web"}, {"app": "web", "tier": "front"}, {"app": "web", "tier": "back"}, {"app": "api"}, {"tier": "front"}, {"team": "x"}, nil,
	}
	for _, l := range podLabels {
		var want []string
		for i, ls := range selectors {
			if ls == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(ls)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(l)) {
				want = append(want, pdbs[i].Name)
			}
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "apps", Labels: l}}
		var got []string
		for _, p := range idx.selecting(pod) {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("labels %v: budgets %v, want %v", l, got, want)
		}
	}
}
