package offerings

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

// NodePoolRequirements returns what every node of np meets: the template's
// requirements (minValues carried), each template label as `In [value]`, and
// karpenter.sh/nodepool In [np.Name].
func NodePoolRequirements(np *karpv1.NodePool) (requirements.Requirements, error) {
	exprs := make([]requirements.Expression, 0, len(np.Spec.Template.Spec.Requirements))
	for _, r := range np.Spec.Template.Spec.Requirements {
		exprs = append(exprs, requirements.Expression{Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues})
	}
	reqs, err := requirements.FromExpressions(exprs)
	if err != nil {
		return requirements.Requirements{}, fmt.Errorf("NodePool %s: spec.template.spec.requirements: %w", np.Name, err)
	}
	reqs = reqs.Intersect(requirements.FromLabels(templateLabels(np)))
	self, err := requirements.NewRequirement(wellknown.LabelNodePool, corev1.NodeSelectorOpIn, np.Name)
	if err != nil {
		return requirements.Requirements{}, err
	}
	return reqs.Add(self), nil
}

// templateLabels returns np's template labels and its nodepool label.
func templateLabels(np *karpv1.NodePool) map[string]string {
	labels := make(map[string]string, len(np.Spec.Template.Metadata.Labels)+1)
	for k, v := range np.Spec.Template.Metadata.Labels {
		labels[k] = string(v)
	}
	labels[wellknown.LabelNodePool] = np.Name
	return labels
}

// NodePool returns np as the packer sees it, with the instance types of
// types that are Compatible with its requirements.
//
// The EC2NodeClass (nil when unknown) is not used yet. With real AWS data it
// will narrow the types further: the architectures of the AMIs its
// amiSelectorTerms resolve to, its kubelet maxPods and reservations (which
// change allocatable), and its root volume size (which changes allocatable
// ephemeral storage; the catalog assumes 20 GiB).
//
// InUse is left empty: the caller adds the capacity of the pool's existing
// nodes.
func NodePool(np *karpv1.NodePool, nodeClass *awsv1.EC2NodeClass, types []*packer.InstanceType) (packer.NodePool, error) {
	_ = nodeClass
	reqs, err := NodePoolRequirements(np)
	if err != nil {
		return packer.NodePool{}, err
	}
	out := packer.NodePool{
		Name:          np.Name,
		Requirements:  reqs,
		Labels:        templateLabels(np),
		Taints:        append([]corev1.Taint(nil), np.Spec.Template.Spec.Taints...),
		StartupTaints: append([]corev1.Taint(nil), np.Spec.Template.Spec.StartupTaints...),
		InstanceTypes: Compatible(types, reqs),
	}
	if np.Spec.Weight != nil {
		out.Weight = *np.Spec.Weight
	}
	if len(np.Spec.Limits) > 0 {
		out.Limits = np.Spec.Limits.DeepCopy()
	}
	return out, nil
}
