package overlay

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

// Field is one problem with an overlay that the API server does not catch:
// the field and what to do. The API layer finds some of them
// (NodeOverlay.RuntimeProblems), so it is that layer's type.
type Field = v1alpha1.FieldProblem

// reservedResources are the resources an overlay may not set: they come
// from the instance type.
var reservedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods}

// The API server's patterns, repeated so that an object that reached us by
// another way (a simulator scenario) is held to the same rules.
var (
	pricePattern      = regexp.MustCompile(`^\d+(\.\d+)?$`)
	adjustmentPattern = regexp.MustCompile(`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`)
)

// Problems returns what is wrong with the overlay, as Karpenter checks it
// before applying an overlay: the checks of NodeOverlay.RuntimeProblems,
// and for overlays that did not come through the API server (a simulator
// scenario, a unit test), what the CRD would have refused.
func Problems(o *v1alpha1.NodeOverlay) []Field {
	var out []Field
	for i, r := range o.Spec.Requirements {
		p := fmt.Sprintf("spec.requirements[%d]", i)
		key := wellknown.NormalizeLabel(r.Key)
		if key == wellknown.LabelHostname || wellknown.InCoreDomain(key) && key != wellknown.LabelNodePool && key != wellknown.LabelCapacityType {
			out = append(out, Field{Path: p + ".key", Message: fmt.Sprintf("label %s is reserved for stevedore and no instance type defines it", r.Key), Fix: v1alpha1.RequirementKeyFix})
		}
		for _, e := range validation.IsQualifiedName(r.Key) {
			out = append(out, Field{Path: p + ".key", Message: fmt.Sprintf("%q is not a label key: %s", r.Key, e), Fix: "use a label key"})
		}
		if (r.Operator == corev1.NodeSelectorOpIn || r.Operator == corev1.NodeSelectorOpNotIn) && len(r.Values) == 0 {
			out = append(out, Field{Path: p + ".values", Message: fmt.Sprintf("operator %s needs at least one value", r.Operator), Fix: "list values, or use Exists or DoesNotExist"})
		}
		if _, err := requirements.NewRequirement(key, r.Operator, r.Values...); err != nil {
			out = append(out, Field{Path: p, Message: err.Error(), Fix: "write In or NotIn with values, Exists or DoesNotExist without, or Gt, Lt, Gte or Lte with one whole number"})
		}
		if key == wellknown.LabelCapacityType && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) > 0 &&
			!slices.ContainsFunc(r.Values, func(v string) bool {
				return v == wellknown.CapacityTypeSpot || v == wellknown.CapacityTypeOnDemand || v == wellknown.CapacityTypeReserved
			}) {
			out = append(out, Field{Path: p + ".values", Message: fmt.Sprintf("%s In %v names no capacity type, so the overlay matches nothing", r.Key, r.Values), Fix: "use spot, on-demand or reserved"})
		}
	}
	out = append(out, o.RuntimeProblems()...)
	names := make([]string, 0, len(o.Spec.Capacity))
	for name := range o.Spec.Capacity {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.Contains(reservedResources, corev1.ResourceName(name)) {
			out = append(out, Field{Path: "spec.capacity." + name, Message: fmt.Sprintf("an overlay cannot set %s: it comes from the instance type", name), Fix: "set only extended resources, such as example.com/device"})
		}
	}
	if o.Spec.Price != nil && o.Spec.PriceAdjustment != nil {
		out = append(out, Field{Path: "spec", Message: "price and priceAdjustment are both set", Fix: "keep one: price replaces the offering's price, priceAdjustment changes it"})
	}
	if o.Spec.Price != nil && !pricePattern.MatchString(*o.Spec.Price) {
		out = append(out, Field{Path: "spec.price", Message: fmt.Sprintf("%q is not a price", *o.Spec.Price), Fix: `write an unsigned number, such as "0.25"`})
	}
	if o.Spec.PriceAdjustment != nil && !adjustmentPattern.MatchString(*o.Spec.PriceAdjustment) {
		out = append(out, Field{Path: "spec.priceAdjustment", Message: fmt.Sprintf("%q is not a price adjustment", *o.Spec.PriceAdjustment), Fix: `write a signed amount ("+0.1", "-0.05") or a signed percentage ("+10%", "-15%", at most -100%)`})
	}
	if w := o.Spec.Weight; w != nil && (*w < 1 || *w > 10000) {
		out = append(out, Field{Path: "spec.weight", Message: fmt.Sprintf("weight %d is out of range", *w), Fix: "use a weight from 1 to 10000, or none"})
	}
	return out
}

// Validate returns the overlay's Problems as one error, nil when it has
// none.
func Validate(o *v1alpha1.NodeOverlay) error {
	probs := Problems(o)
	if len(probs) == 0 {
		return nil
	}
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.Path + ": " + p.Message + " (" + p.Fix + ")"
	}
	return errors.New(strings.Join(msgs, "; "))
}
