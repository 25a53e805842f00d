// Package cloud is the contract between stevedore's controllers and a cloud
// provider: the CloudProvider interface, the typed errors a provider returns
// so that callers can tell "no capacity" from "misconfigured" from "gone",
// drift reasons and node repair policies.
//
// The package holds no behaviour of its own. The AWS provider implements the
// interface; the controllers, the simulator and the tools consume it. What a
// provider offers to the scheduler is expressed in the packer's own types
// (packer.InstanceType and packer.Offering), so the instance types a provider
// returns can be packed without conversion.
package cloud

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// CloudProvider launches, finds and terminates the instances behind
// NodeClaims and describes what can be launched.
//
// Implementations must be safe for concurrent use. Every method that takes a
// context honours its cancellation.
type CloudProvider interface {
	// Create launches an instance that satisfies the NodeClaim's
	// requirements and returns a copy of the NodeClaim with what was
	// resolved filled in: the labels of the chosen instance type, zone and
	// capacity type, status.providerID, status.imageID, status.capacity and
	// status.allocatable. The argument is not modified.
	//
	// Errors: InsufficientCapacityError when no offering could be launched
	// (the caller deletes the NodeClaim and simulates again, by which time the
	// failed offerings are marked unavailable); NodeClassNotReadyError when
	// the node class may not launch yet; CreateError for any other failure
	// with a stable reason.
	Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)
	// Delete starts terminating the NodeClaim's instance. It returns a
	// NodeClaimNotFoundError once the instance is gone (terminated, or never
	// existed); callers keep calling until they see one.
	Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error
	// Get returns the instance with the given provider ID as a NodeClaim, or
	// a NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)
	// List returns every instance the provider owns in this cluster, as
	// NodeClaims. Garbage collection compares it with the NodeClaims that
	// exist.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
	// GetInstanceTypes returns every instance type the NodePool's node class
	// can launch, including those whose offerings are all unavailable at the
	// moment, each with its requirements, capacity, allocatable and
	// offerings. A NodePool whose node class does not exist gets no types and
	// no error.
	GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*packer.InstanceType, error)
	// IsDrifted reports why the NodeClaim's instance no longer matches its
	// node class, or NoDrift.
	IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the node conditions that make a node unhealthy
	// and how long each is tolerated before the node is replaced.
	RepairPolicies() []RepairPolicy
	// Name is the provider's name, for example "aws"; it labels metrics.
	Name() string
	// GetSupportedNodeClasses returns the node class kinds the provider
	// accepts in a NodePool's nodeClassRef. The first is the default.
	GetSupportedNodeClasses() []schema.GroupVersionKind
}

// DriftReason says why an instance no longer matches its node class. It is
// written as the reason of the NodeClaim's Drifted condition, so its values
// are stable identifiers in UpperCamelCase.
type DriftReason string

// NoDrift is the DriftReason of an instance that has not drifted.
const NoDrift DriftReason = ""

// RepairPolicy says that a node whose condition ConditionType has had
// ConditionStatus for longer than TolerationDuration is unhealthy and is
// replaced.
type RepairPolicy struct {
	// ConditionType is the node condition, for example Ready.
	ConditionType corev1.NodeConditionType
	// ConditionStatus is the unhealthy status of that condition, for example
	// False or Unknown.
	ConditionStatus corev1.ConditionStatus
	// TolerationDuration is how long the status is tolerated, counted from
	// the condition's last transition.
	TolerationDuration time.Duration
}

// Unhealthy reports whether cond, observed at now, makes the node unhealthy
// under the policy.
func (p RepairPolicy) Unhealthy(cond corev1.NodeCondition, now time.Time) bool {
	if cond.Type != p.ConditionType || cond.Status != p.ConditionStatus {
		return false
	}
	return !now.Before(cond.LastTransitionTime.Add(p.TolerationDuration))
}

// LaunchFailure is one offering a launch tried and the cloud refused, as
// karpenter_cloudprovider_instance_launch_failures_total counts them: one
// launch can fail several offerings before one succeeds, or all of them.
type LaunchFailure struct {
	Zone, ZoneID, CapacityType string
	// Reason is the cloud's own error code, for example
	// InsufficientInstanceCapacity.
	Reason string
}

// LaunchFailureReporter is implemented by providers that can say which
// offerings of a launch failed. ReportLaunchFailuresTo sets the function
// each failure is handed to; call it once, before the first Create.
type LaunchFailureReporter interface {
	ReportLaunchFailuresTo(func(LaunchFailure))
}

// PricingReporter is implemented by providers whose on-demand prices come
// from a pricing API, with prices of their own to fall back on while it
// fails. ReportPricingTo sets the function told when the API stops
// answering (with its error) and when it answers again (with nil): once
// per change, not once per refresh. Call it once, before the first
// GetInstanceTypes.
type PricingReporter interface {
	ReportPricingTo(func(err error))
}
