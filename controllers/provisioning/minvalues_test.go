package provisioning

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// TestMinValuesPolicy launches a pod on a NodePool that asks for three
// instance families where the catalog has two (c6i and m6i). Strict leaves
// the pod pending with a FailedScheduling event; BestEffort launches a
// NodeClaim whose family requirement records minValues 2 and which is
// annotated as relaxed. A NodePool whose minValues can be met gets a
// NodeClaim annotated "false" under either policy.
func TestMinValuesPolicy(t *testing.T) {
	cases := []struct {
		name     string
		policy   packer.MinValuesPolicy
		families int // the NodePool's minValues
		launched bool
		relaxed  string
		recorded int // minValues of the family requirement on the NodeClaim
	}{
		{name: "strict", policy: packer.MinValuesStrict, families: 3},
		{name: "default", families: 3},
		{name: "besteffort", policy: packer.MinValuesBestEffort, families: 3, launched: true, relaxed: "true", recorded: 2},
		{name: "strict-met", policy: packer.MinValuesStrict, families: 2, launched: true, relaxed: "false", recorded: 2},
		{name: "besteffort-met", policy: packer.MinValuesBestEffort, families: 2, launched: true, relaxed: "false", recorded: 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "prov-minvalues-"+tc.name, 230+uint64(i))
			e.p = New(e.Kube, e.State, e.Cloud, e.Clock, e.Events, Options{MinValuesPolicy: tc.policy}, e.Metrics)
			e.nodeClass(metav1.ConditionTrue, "Ready", "")
			e.nodePool(func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
					Key: wellknown.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn,
					Values: []string{"c6i", "m6i", "r6i"}, MinValues: &tc.families,
				})
			})
			e.pod("app")
			e.batch()
			claims := e.nodeClaims()
			// The NodePool that can meet its minValues with no instance
			// type says so, unless minValues are relaxed.
			noTypes := e.Events.Matching(environment.Event{Kind: "NodePool", Name: e.Name, Type: corev1.EventTypeWarning, Reason: ReasonNoCompatibleInstanceTypes})
			if want := !tc.launched; (len(noTypes) == 1) != want || len(noTypes) > 1 {
				t.Errorf("%s events %+v, want one: %v", ReasonNoCompatibleInstanceTypes, noTypes, want)
			} else if want && !strings.Contains(noTypes[0].Note, "minValues 3") {
				t.Errorf("%s %q does not name the minValues", ReasonNoCompatibleInstanceTypes, noTypes[0].Note)
			}
			if !tc.launched {
				if len(claims) != 0 {
					t.Fatalf("%d NodeClaims created, want none", len(claims))
				}
				evs := e.podEvents("app", ReasonFailedScheduling)
				if len(evs) != 1 || !strings.Contains(evs[0].Note, "minValues") || !strings.Contains(evs[0].Note, wellknown.LabelInstanceFamily) {
					t.Fatalf("FailedScheduling events = %+v, want one naming the family's minValues", evs)
				}
				return
			}
			if len(claims) != 1 {
				t.Fatalf("%d NodeClaims created, want 1", len(claims))
			}
			nc := claims[0]
			got, ok := nc.Annotations[wellknown.AnnotationNodeClaimMinValuesRelaxed]
			if !ok || got != tc.relaxed {
				t.Errorf("annotation %s = %q (present %v), want %q", wellknown.AnnotationNodeClaimMinValuesRelaxed, got, ok, tc.relaxed)
			}
			found := false
			for _, r := range nc.Spec.Requirements {
				if r.Key != wellknown.LabelInstanceFamily {
					continue
				}
				found = true
				if r.MinValues == nil || *r.MinValues != tc.recorded {
					t.Errorf("family requirement %+v, want minValues %d", r, tc.recorded)
				}
			}
			if !found {
				t.Errorf("no family requirement on the NodeClaim: %+v", nc.Spec.Requirements)
			}
		})
	}
}
