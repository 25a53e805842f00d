package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// FieldProblem is a problem with one field of a NodeOverlay that its CRD
// does not catch: where it is, what is wrong and what to do.
//
// +kubebuilder:object:generate=false
type FieldProblem struct {
	Path    string
	Message string
	Fix     string
}

// RequirementKeyFix is what to do about a requirement key that no instance
// type defines.
const RequirementKeyFix = "use a well-known label (such as node.kubernetes.io/instance-type or karpenter.k8s.aws/instance-family), karpenter.sh/nodepool, karpenter.sh/capacity-type, or a NodePool template label"

// RuntimeProblems returns what the API server accepts in the overlay but
// stevedore cannot use, as Karpenter's controller refuses it at run time: a
// requirement key in the karpenter.k8s.aws domain that is not one of its
// well-known labels, and values that are not label values (which no label
// has). `stevedore validate` reports these too.
func (in *NodeOverlay) RuntimeProblems() []FieldProblem {
	var out []FieldProblem
	for i, r := range in.Spec.Requirements {
		p := fmt.Sprintf("spec.requirements[%d]", i)
		key := wellknown.NormalizeLabel(r.Key)
		if key != wellknown.LabelHostname && !wellknown.InCoreDomain(key) && wellknown.IsRestrictedLabel(key) {
			out = append(out, FieldProblem{Path: p + ".key", Message: fmt.Sprintf("label %s is in a domain reserved for stevedore and no instance type defines it", r.Key), Fix: RequirementKeyFix})
		}
		for j, v := range r.Values {
			for _, e := range validation.IsValidLabelValue(v) {
				out = append(out, FieldProblem{Path: fmt.Sprintf("%s.values[%d]", p, j), Message: fmt.Sprintf("%q is not a label value, so no label matches it: %s", v, e), Fix: "use a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"})
			}
		}
	}
	return out
}
