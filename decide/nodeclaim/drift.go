package nodeclaim

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

// Drift reasons decided from the NodePool. They are written as the reason of
// the NodeClaim's Drifted condition, next to the cloud provider's own
// reasons (cloud.DriftReason), so they are stable UpperCamelCase identifiers.
const (
	// ReasonNodePoolDrifted: the NodePool's template changed in a field that
	// only a new node can apply (labels, annotations, taints, node class,
	// expireAfter, terminationGracePeriod) since the NodeClaim was launched.
	ReasonNodePoolDrifted = "NodePoolDrifted"
	// ReasonRequirementsDrifted: the NodeClaim's labels no longer meet the
	// NodePool's requirements and template labels.
	ReasonRequirementsDrifted = "RequirementsDrifted"
	// ReasonInstanceTypeNotFound: the NodeClaim's instance type is no longer
	// offered to its NodePool, or no longer in the NodeClaim's zone and
	// capacity type.
	ReasonInstanceTypeNotFound = "InstanceTypeNotFound"
)

// Karpenter checks instance-type drift only on NodeClaims at least an hour
// old and at most every 30 minutes each: the catalog is read from the cloud
// and a type withdrawn for a moment should not replace a fleet.
const (
	InstanceTypeCheckMinAge   = time.Hour
	InstanceTypeCheckInterval = 30 * time.Minute
)

// Drift is a drift verdict: why a NodeClaim no longer matches what would be
// launched for it today. The zero Drift means not drifted.
type Drift struct {
	// Reason is the condition reason: ReasonNodePoolDrifted,
	// ReasonRequirementsDrifted, ReasonInstanceTypeNotFound or a cloud
	// provider's drift reason; empty
	// when the NodeClaim has not drifted.
	Reason string
	// Message says what changed, for the condition message and events.
	Message string
}

// Drifted reports whether d is a drift.
func (d Drift) Drifted() bool { return d.Reason != "" }

// StaticDrift reports whether nc was launched from an earlier version of
// np's template: both carry the karpenter.sh/nodepool-hash annotation under
// the same karpenter.sh/nodepool-hash-version, and the hashes differ.
//
// Different hash versions are not drift: the hash was computed by another
// algorithm (an upgrade, or a move from Karpenter), so the values cannot be
// compared, and the NodeClaim is re-stamped with the current hash instead of
// the whole fleet being replaced at once. A missing annotation on either side
// is not drift either: there is nothing to compare yet.
func StaticDrift(nc *karpv1.NodeClaim, np *karpv1.NodePool) (reason string, drifted bool) {
	if staticDrift(nc, np) {
		return ReasonNodePoolDrifted, true
	}
	return "", false
}

// hashVersionsDiffer reports whether both carry a hash version and the
// versions differ.
func hashVersionsDiffer(nc *karpv1.NodeClaim, np *karpv1.NodePool) bool {
	claimVersion, ok1 := nc.Annotations[wellknown.AnnotationNodePoolHashVersion]
	poolVersion, ok2 := np.Annotations[wellknown.AnnotationNodePoolHashVersion]
	return ok1 && ok2 && claimVersion != poolVersion
}

func staticDrift(nc *karpv1.NodeClaim, np *karpv1.NodePool) bool {
	claimHash, ok1 := nc.Annotations[wellknown.AnnotationNodePoolHash]
	claimVersion, ok2 := nc.Annotations[wellknown.AnnotationNodePoolHashVersion]
	poolHash, ok3 := np.Annotations[wellknown.AnnotationNodePoolHash]
	poolVersion, ok4 := np.Annotations[wellknown.AnnotationNodePoolHashVersion]
	if !ok1 || !ok2 || !ok3 || !ok4 || claimVersion != poolVersion {
		return false
	}
	return claimHash != poolHash
}

// Restamp says which hash annotations nc is given when its NodePool's hash
// version changes to version: the NodePool's hash was computed by another
// algorithm (an upgrade of stevedore, or a move from a release of Karpenter
// that hashed differently), and so were the NodeClaims', so comparing them
// would drift every node at once. A NodeClaim whose version differs gets
// the new version and the NodePool's new hash, as if launched from the
// template as it is. One that has already drifted gets the new version but
// keeps its old hash, which then differs from the NodePool's under the same
// version: nothing says its template changed back, so it stays drifted.
// This is Karpenter's rule too, so that a NodeClaim ends up the same
// whichever of the two re-stamped it.
func Restamp(nc *karpv1.NodeClaim, version string) (stampVersion, stampHash bool) {
	if nc.Annotations[wellknown.AnnotationNodePoolHashVersion] == version {
		return false, false
	}
	return true, !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
}

// RequirementsDrift reports whether nc's labels no longer meet np's template
// requirements together with its template labels: for example the NodePool
// now allows only arm64, or only spot, and the node is amd64 or on-demand.
//
// It is meaningful only for a launched NodeClaim, whose labels carry the
// resolved instance type, zone and capacity type. A NodePool whose
// requirements cannot be parsed is not judged (the NodePool's
// ValidationSucceeded condition reports the problem), so nothing drifts
// because of a typo.
func RequirementsDrift(nc *karpv1.NodeClaim, np *karpv1.NodePool) (reason string, drifted bool) {
	if _, ok := requirementsDrift(nc, np); ok {
		return ReasonRequirementsDrifted, true
	}
	return "", false
}

// requirementsDrift returns the first label, in key order, on which nc fails
// np's requirements.
func requirementsDrift(nc *karpv1.NodeClaim, np *karpv1.NodePool) (detail string, drifted bool) {
	reqs, err := TemplateRequirements(np)
	if err != nil {
		return "", false
	}
	if err := reqs.Matches(nc.Labels); err != nil {
		return err.Error(), true
	}
	return "", false
}

// TemplateRequirements returns what every node of np must meet: the
// template's requirements intersected with its labels (a template label
// pins its key to that value).
func TemplateRequirements(np *karpv1.NodePool) (requirements.Requirements, error) {
	tmpl := np.Spec.Template
	exprs := make([]requirements.Expression, 0, len(tmpl.Spec.Requirements))
	for _, r := range tmpl.Spec.Requirements {
		exprs = append(exprs, requirements.Expression{Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues})
	}
	reqs, err := requirements.FromExpressions(exprs)
	if err != nil {
		return requirements.Requirements{}, fmt.Errorf("requirements of NodePool %s: %w", np.Name, err)
	}
	if len(tmpl.Metadata.Labels) == 0 {
		return reqs, nil
	}
	labels := make(map[string]string, len(tmpl.Metadata.Labels))
	for k, v := range tmpl.Metadata.Labels {
		labels[k] = string(v)
	}
	return reqs.Intersect(requirements.FromLabels(labels)), nil
}

// NodePoolDrift returns the first drift of nc from np, checked in
// Karpenter's order: static (template hash) drift, then requirements drift.
// A NodeClaim that has not launched has not drifted: its labels are not
// resolved yet, and nothing runs on it that a replacement would save.
//
// Static drift already recorded on nc (its Drifted condition has reason
// ReasonNodePoolDrifted) outlives a change of hash version: the old hash can
// no longer be compared, but nothing says the template changed back, and
// such a NodeClaim keeps its hash when re-stamped (see Restamp).
func NodePoolDrift(nc *karpv1.NodeClaim, np *karpv1.NodePool) Drift {
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched) {
		return Drift{}
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == ReasonNodePoolDrifted && hashVersionsDiffer(nc, np) {
		return Drift{Reason: ReasonNodePoolDrifted, Message: c.Message}
	}
	if staticDrift(nc, np) {
		return Drift{
			Reason: ReasonNodePoolDrifted,
			Message: fmt.Sprintf("the template of NodePool %s changed since the NodeClaim was launched (hash %s, launched with %s)",
				np.Name, np.Annotations[wellknown.AnnotationNodePoolHash], nc.Annotations[wellknown.AnnotationNodePoolHash]),
		}
	}
	if detail, ok := requirementsDrift(nc, np); ok {
		return Drift{
			Reason:  ReasonRequirementsDrifted,
			Message: fmt.Sprintf("the node no longer meets the requirements of NodePool %s: %s", np.Name, detail),
		}
	}
	return Drift{}
}

// InstanceTypeDrift reports whether nc's instance type is gone from types,
// the instance types its NodePool is offered now, or has no offering left
// in nc's zone and capacity type (available or not: a type short of
// capacity for a while has not drifted). A reserved NodeClaim may fall back
// to on-demand. A NodeClaim without an instance type label has not launched
// and has not drifted.
func InstanceTypeDrift(nc *karpv1.NodeClaim, nodePool string, types []*packer.InstanceType) Drift {
	name := nc.Labels[wellknown.LabelInstanceType]
	if name == "" {
		return Drift{}
	}
	zone, capacityType := nc.Labels[wellknown.LabelTopologyZone], nc.Labels[wellknown.LabelCapacityType]
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if zone != "" && o.Zone != zone {
				continue
			}
			if capacityType == "" || o.CapacityType == capacityType ||
				(capacityType == wellknown.CapacityTypeReserved && o.CapacityType == wellknown.CapacityTypeOnDemand) {
				return Drift{}
			}
		}
		return Drift{
			Reason: ReasonInstanceTypeNotFound,
			Message: fmt.Sprintf("instance type %s is no longer offered as %s in %s to NodePool %s",
				name, orAny(capacityType), orAny(zone), nodePool),
		}
	}
	return Drift{
		Reason:  ReasonInstanceTypeNotFound,
		Message: fmt.Sprintf("instance type %s is no longer offered to NodePool %s", name, nodePool),
	}
}

func orAny(v string) string {
	if v == "" {
		return "any"
	}
	return v
}
