package disruption

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// TestReplacementMinValuesPolicy: a drifted node's replacement follows the
// minValues policy. The NodePool asks for three instance families where the
// catalog has two (c6i and m6i): under Strict no replacement is launched and
// the node stays; under BestEffort the replacement launches with the
// family's minValues lowered to 2 and annotated as relaxed.
func TestReplacementMinValuesPolicy(t *testing.T) {
	for i, policy := range []packer.MinValuesPolicy{packer.MinValuesStrict, packer.MinValuesBestEffort} {
		t.Run(string(policy), func(t *testing.T) {
			e := newEnv(t, "minvalues-"+strings.ToLower(string(policy)), 330+uint64(i))
			e.opts.MinValuesPolicy = policy
			e.c = New(e.Kube, e.State, e.Cloud, e.Clock, e.Events, e.opts, e.Metrics)
			three := 3
			e.CreateNodePool(driftBudget, func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
					Key: wellknown.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6i", "m6i", "r6i"}, MinValues: &three,
				})
			})
			nc := e.node("m6i.large")
			e.pod("web-0", nc.Status.NodeName, "500m")
			e.setCondition(nc.Name, karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodePoolDrifted")
			if policy == packer.MinValuesStrict {
				e.pass()
				if id := e.NodeClaim(nc.Name).Annotations[AnnotationCommand]; id != "" {
					t.Fatalf("command %s started; replacements %d, want none under Strict", id, len(e.replacements(id)))
				}
				return
			}
			id, rep := e.startDrift(nc.Name)
			got := e.NodeClaim(rep)
			if v := got.Annotations[wellknown.AnnotationNodeClaimMinValuesRelaxed]; v != "true" {
				t.Errorf("replacement of command %s: %s = %q, want \"true\"", id, wellknown.AnnotationNodeClaimMinValuesRelaxed, v)
			}
			found := false
			for _, r := range got.Spec.Requirements {
				if r.Key == wellknown.LabelInstanceFamily {
					found = true
					if r.MinValues == nil || *r.MinValues != 2 {
						t.Errorf("family requirement %+v, want minValues 2", r)
					}
				}
			}
			if !found {
				t.Errorf("no family requirement on the replacement: %+v", got.Spec.Requirements)
			}
		})
	}
}
