package disruption

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
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

// TestDoNotDisruptReported: the decision reports the pods of candidates
// whose do-not-disrupt annotation is a duration or invalid, with when the
// duration ends; "true", pods not started and nodes that are no candidates
// are not reported. Pods start an hour before t0.
func TestDoNotDisruptReported(t *testing.T) {
	notStarted := func(p *corev1.Pod) { p.Status.StartTime = nil }
	for _, tc := range []struct {
		name    string
		value   string
		opts    []podOpt
		node    nodeSpec
		want    bool
		invalid bool
		active  bool
	}{
		{name: "active duration", value: "2h", want: true, active: true},
		{name: "elapsed duration", value: "30m", want: true},
		{name: "invalid value", value: "soon", want: true, invalid: true},
		{name: "negative duration is invalid", value: "-5m", want: true, invalid: true},
		{name: "invalid value of a pod not started", value: "soon", opts: []podOpt{notStarted}, want: true, invalid: true},
		{name: "true", value: "true"},
		{name: "duration of a pod not started", value: "2h", opts: []podOpt{notStarted}},
		{name: "node not initialized", value: "2h", node: nodeSpec{notInitialized: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.pool("p", family, nil)
			spec := tc.node
			spec.pool, spec.itype = "p", xlarge
			n := f.node(spec)
			f.pod("a", n, "100m", "100Mi", append([]podOpt{annotate(wellknown.AnnotationDoNotDisrupt, tc.value)}, tc.opts...)...)
			d := Decide(f.input())
			if !tc.want {
				if len(d.DoNotDisrupt) != 0 {
					t.Fatalf("reported %+v, want nothing", d.DoNotDisrupt)
				}
				return
			}
			if len(d.DoNotDisrupt) != 1 {
				t.Fatalf("reported %+v, want the pod", d.DoNotDisrupt)
			}
			got := d.DoNotDisrupt[0]
			if got.Pod.Name != "a" || got.Value != tc.value || got.Invalid != tc.invalid || got.Active != tc.active {
				t.Errorf("reported %s: value %q invalid %v active %v, want a: %q %v %v", got.Pod.Name, got.Value, got.Invalid, got.Active, tc.value, tc.invalid, tc.active)
			}
			if !tc.invalid {
				d, _ := time.ParseDuration(tc.value)
				if want := t0.Add(-time.Hour).Add(d); !got.Until.Equal(want) {
					t.Errorf("until %s, want %s", got.Until, want)
				}
			}
		})
	}
}
