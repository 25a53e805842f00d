package report

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
)

// The NodePools' budgets are sampled per reason from the API: how many
// nodes budgets count and allow, how many are disrupted for the reason and
// in all; a disruption decided is recorded with its budget once the change
// is carried out; the NodeClaims at the end carry their conditions.
func TestBudgetUsesAndDecisions(t *testing.T) {
	ctx := context.Background()
	api := mustServer(t)
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "2"}, {Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}
	if err := api.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	// Four initialized nodes: a is being consolidated (Empty), b too but its
	// instance is terminating already (the budgets no longer count it), c
	// is not Ready, d is fine.
	for _, n := range []struct {
		name, reason string
		terminating  bool
		ready        corev1.ConditionStatus
	}{{"a", "Empty", false, corev1.ConditionTrue}, {"b", "Empty", true, corev1.ConditionTrue}, {"c", "", false, corev1.ConditionUnknown}, {"d", "", false, corev1.ConditionTrue}} {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + n.name, Labels: map[string]string{wellknown.LabelNodePool: "web"}}}
		nc.Status.NodeName, nc.Status.ProviderID = n.name, "aws:///us-east-1a/i-"+n.name
		nc.Status.Conditions = []metav1.Condition{cond(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized")}
		if n.reason != "" {
			nc.Status.Conditions = append(nc.Status.Conditions, cond(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, n.reason))
		}
		if n.terminating {
			nc.Status.Conditions = append(nc.Status.Conditions, cond(karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, "InstanceTerminating"))
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{wellknown.LabelNodePool: "web"}}}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: n.ready}}
		if err := api.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		if err := api.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	r := NewRecorder("test", 1, t0, t0.Add(1), nil)
	ncGVK := karpv1.GroupVersion.WithKind("NodeClaim")
	for _, o := range api.Objects(ncGVK) {
		r.Change(t0, apiserver.Change{Type: apiserver.Added, GVK: ncGVK, Object: o})
	}
	r.Flush(t0, api)
	r.Sample(t0, api)
	doc := r.Finish(t0, api)

	var got []string
	for _, u := range doc.Samples[0].DisruptionBudgets {
		got = append(got, fmt.Sprintf("%s/%s %d/%d %d/%d", u.NodePool, u.Reason, u.Disrupting, u.DisruptingAll, u.Nodes, u.Allowed))
	}
	// Three nodes counted (b's instance is terminating); a and c disrupt
	// (c is not Ready), a for Empty; Drifted is held at 0.
	want := "web/Drifted 0/2 3/0, web/Empty 1/2 3/2, web/Underutilized 0/2 3/2"
	if strings.Join(got, ", ") != want {
		t.Errorf("budget uses\n%s\nwant\n%s", strings.Join(got, ", "), want)
	}
	if len(doc.Decisions) != 2 || doc.Decisions[0].NodeClaim != "nc-a" || doc.Decisions[0].Reason != "Empty" || doc.Decisions[0].Disrupting != 1 || doc.Decisions[0].Allowed != 2 {
		t.Errorf("decisions %+v, want nc-a and nc-b for Empty, 1 of 2 allowed", doc.Decisions)
	}
	if c := doc.Final.NodeClaims[0]; c.Name != "nc-a" || c.InstanceID != "i-a" || c.Node != "a" ||
		strings.Join(c.Conditions, ",") != "Initialized=True,DisruptionReason=True:Empty" {
		t.Errorf("final NodeClaim %+v", c)
	}
}
