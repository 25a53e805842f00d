package provisioning

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// resourceNodes is the pseudo-resource that counts nodes against a limit.
const resourceNodes corev1.ResourceName = "nodes"

// launch checks a proposed NodeClaim once more against its NodePool as it is
// now and creates it. When the NodePool no longer allows it, nothing is
// created and why says so. added holds, per NodePool, the capacity of the
// NodeClaims created earlier in this batch, which current does not count yet;
// launch adds to it.
func (p *Provisioner) launch(ctx context.Context, claim packer.NodeClaim, pool *packer.NodePool, current state.Snapshot, added map[string]corev1.ResourceList) (nc *karpv1.NodeClaim, why string, err error) {
	np := &karpv1.NodePool{}
	if err := p.client.Get(ctx, client.ObjectKey{Name: claim.NodePool}, np); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("NodePool %s no longer exists", claim.NodePool), nil
		}
		return nil, "", fmt.Errorf("getting NodePool %s: %w", claim.NodePool, err)
	}
	if !np.DeletionTimestamp.IsZero() {
		return nil, fmt.Sprintf("NodePool %s is being deleted", np.Name), nil
	}
	used := resources.Add(current.InUse(np.Name), added[np.Name])
	names, largest, why := FitLimits(np, pool, claim, used)
	if why != "" {
		return nil, why, nil
	}

	nc = NewNodeClaim(np, claim, names)
	MarkOverlays(nc, pool, names)
	MarkMinValuesRelaxed(nc, claim)
	if err := p.client.Create(ctx, nc); err != nil {
		return nil, "", fmt.Errorf("creating NodeClaim for NodePool %s: %w", np.Name, err)
	}
	added[np.Name] = resources.Add(added[np.Name], largest)
	p.metrics.NodeClaimCreated(ReasonProvisioning, np.Name, claim.MinValuesRelaxed)
	log.FromContext(ctx).Info("created nodeclaim",
		"nodepool", np.Name,
		"nodeclaim", nc.Name,
		"requests", formatResources(nc.Spec.Resources.Requests),
		"instanceTypes", len(names))
	return nc, "", nil
}

// MarkOverlays annotates a NodeClaim about to be created from pool with the
// given instance types, as Karpenter does, when a NodeOverlay changed the
// price of one of them (karpenter.sh/price-overlay-applied) or added to its
// capacity (karpenter.sh/capacity-overlay-applied). The second tells the
// cloud provider that the NodeClaim may request extended resources its
// instance types do not list.
func MarkOverlays(nc *karpv1.NodeClaim, pool *packer.NodePool, names []string) {
	if pool == nil {
		return
	}
	for _, it := range pool.InstanceTypes {
		if !slices.Contains(names, it.Name) {
			continue
		}
		if it.PriceOverlaid {
			nc.Annotations[v1alpha1.AnnotationPriceOverlayApplied] = "true"
		}
		if it.CapacityOverlaid {
			nc.Annotations[v1alpha1.AnnotationCapacityOverlayApplied] = "true"
		}
	}
}

// FitLimits returns the instance types of claim, in its order, that np may
// still launch given the capacity used already (its nodes and NodeClaims,
// plus whatever the caller has created since that was counted), and the
// largest capacity one of them adds, which the caller should count as used
// once it has created the NodeClaim: whichever type the launch gets, the
// NodePool then cannot pass its limits. pool describes the instance types'
// capacities (nil counts each as the claim's requests). When no type fits,
// or fewer than the instance-type minValues, names is empty and why says
// which limit stands in the way.
func FitLimits(np *karpv1.NodePool, pool *packer.NodePool, claim packer.NodeClaim, used corev1.ResourceList) (names []string, largest corev1.ResourceList, why string) {
	caps := capacities(pool, claim)
	names, why = withinLimits(np.Name, np.Spec.Limits, used, claim.InstanceTypes, caps)
	if why != "" {
		return nil, nil, why
	}
	if r, ok := claim.Requirements.Get(wellknown.LabelInstanceType); ok {
		if n, ok := r.MinValues(); ok && len(names) < n {
			return nil, nil, fmt.Sprintf("NodePool %s: only %d instance types fit within its limits, fewer than the minValues %d of %s",
				np.Name, len(names), n, wellknown.LabelInstanceType)
		}
	}
	// Count the largest machine the NodeClaim may get, so that the rest of
	// a batch cannot take the NodePool past its limits whichever it gets.
	largest = corev1.ResourceList{}
	for _, name := range names {
		largest = resources.Max(largest, caps[name])
	}
	return names, largest, ""
}

// capacities returns the capacity of each instance type the claim lists, with
// one node counted: what launching it adds to the NodePool's usage. A type
// the pool does not describe counts as the claim's requests.
func capacities(pool *packer.NodePool, claim packer.NodeClaim) map[string]corev1.ResourceList {
	byName := map[string]*packer.InstanceType{}
	if pool != nil {
		for _, it := range pool.InstanceTypes {
			byName[it.Name] = it
		}
	}
	one := corev1.ResourceList{resourceNodes: *resource.NewQuantity(1, resource.DecimalSI)}
	out := make(map[string]corev1.ResourceList, len(claim.InstanceTypes))
	for _, name := range claim.InstanceTypes {
		c := claim.Requests.ResourceList()
		if it, ok := byName[name]; ok {
			c = it.Capacity.ResourceList()
		}
		out[name] = resources.Add(c, one)
	}
	return out
}

// withinLimits returns the instance types, in their order, whose launch keeps
// every limit: used plus the type's capacity stays at or below it. When none
// does, why names the limit that the first type would exceed.
func withinLimits(pool string, limits, used corev1.ResourceList, names []string, caps map[string]corev1.ResourceList) (fit []string, why string) {
	if len(limits) == 0 {
		return names, ""
	}
	keys := slices.Sorted(maps.Keys(limits))
	exceeded := func(name string) (corev1.ResourceName, bool) {
		after := resources.Add(used, caps[name])
		for _, k := range keys {
			if resources.Cmp(after, limits, k) > 0 {
				return k, true
			}
		}
		return "", false
	}
	for _, name := range names {
		if _, over := exceeded(name); !over {
			fit = append(fit, name)
		}
	}
	if len(fit) > 0 || len(names) == 0 {
		return fit, ""
	}
	k, _ := exceeded(names[0])
	limit, inUse, adds := limits[k], used[k], caps[names[0]][k]
	return nil, fmt.Sprintf("NodePool %s would exceed its %s limit: %s in use, %s more for %s, limit %s",
		pool, k, inUse.String(), adds.String(), names[0], limit.String())
}

// NewNodeClaim returns the NodeClaim to create from np for claim, listing
// the instance types names (see FitLimits): the NodePool's template labels,
// annotations, taints and settings, its template hash, an owner reference to
// it and a name generated from its name. Callers may add labels and
// annotations before they create it.
func NewNodeClaim(np *karpv1.NodePool, claim packer.NodeClaim, names []string) *karpv1.NodeClaim {
	tmpl := np.Spec.Template
	labels := make(map[string]string, len(tmpl.Metadata.Labels)+2)
	for k, v := range tmpl.Metadata.Labels {
		labels[k] = string(v)
	}
	labels[wellknown.LabelNodePool] = np.Name
	ref := tmpl.Spec.NodeClassRef.DeepCopy()
	if ref != nil && wellknown.ManagedNodeClass(ref) {
		labels[wellknown.LabelEC2NodeClass] = ref.Name
	}
	annotations := make(map[string]string, len(tmpl.Metadata.Annotations)+2)
	maps.Copy(annotations, tmpl.Metadata.Annotations)
	// The NodePool's template hash as it is now: a NodeClaim whose hash
	// later differs from its NodePool's has drifted.
	annotations[wellknown.AnnotationNodePoolHash] = hash.Hash(np)
	annotations[wellknown.AnnotationNodePoolHashVersion] = hash.Version
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         karpv1.GroupVersion.String(),
				Kind:               "NodePool",
				Name:               np.Name,
				UID:                np.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 slices.Clone(tmpl.Spec.Taints),
			StartupTaints:          slices.Clone(tmpl.Spec.StartupTaints),
			Requirements:           nodeClaimRequirements(claim.Requirements, names),
			Resources:              karpv1.ResourceRequirements{Requests: claim.Requests.ResourceList()},
			NodeClassRef:           ref,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod.DeepCopy(),
			ExpireAfter:            tmpl.Spec.ExpireAfter.DeepCopy(),
		},
	}
	return nc
}

// MarkMinValuesRelaxed records on nc whether the packer relaxed the
// NodePool's minValues for claim. Like Karpenter, which writes it on every
// NodeClaim its scheduler launches, it writes "false" as well as "true", so
// that a NodeClaim without the annotation is one no packing decision made
// (a static NodePool's).
func MarkMinValuesRelaxed(nc *karpv1.NodeClaim, claim packer.NodeClaim) {
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[wellknown.AnnotationNodeClaimMinValuesRelaxed] = strconv.FormatBool(claim.MinValuesRelaxed)
}

// nodeClaimRequirements writes reqs in the API's form, in key order, with
// the instance types listed as names (cheapest first) rather than sorted.
// kubernetes.io/hostname, which the API does not accept on a NodeClaim, is
// left out: a new node's host name is not known before it exists.
func nodeClaimRequirements(reqs requirements.Requirements, names []string) []karpv1.NodeSelectorRequirementWithMinValues {
	var out []karpv1.NodeSelectorRequirementWithMinValues
	for r := range reqs.All() {
		key := r.Key()
		if key == wellknown.LabelHostname {
			continue
		}
		minValues, hasMin := r.MinValues()
		if key == wellknown.LabelInstanceType && len(names) > 0 {
			q := karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(names)}
			if hasMin {
				q.MinValues = ptr.To(minValues)
			}
			out = append(out, q)
			continue
		}
		for _, nsr := range r.NodeSelectorRequirements() {
			q := karpv1.NodeSelectorRequirementWithMinValues{Key: nsr.Key, Operator: nsr.Operator, Values: nsr.Values}
			if hasMin && nsr.Operator == corev1.NodeSelectorOpIn {
				q.MinValues = ptr.To(minValues)
			}
			out = append(out, q)
		}
	}
	return out
}

// formatResources writes a resource list as name=quantity pairs in name
// order, for logs.
func formatResources(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for _, name := range slices.Sorted(maps.Keys(list)) {
		q := list[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}
