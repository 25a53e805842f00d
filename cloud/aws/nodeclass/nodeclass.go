// Package nodeclass resolves an EC2NodeClass against AWS into its status: the
// subnets, security groups, images and capacity reservations its selector
// terms match, the instance
// profile its nodes launch with, whether the controller is allowed to launch
// with all of that, and the conditions that say so.
//
// Each condition goes False only for an outcome that needs the user to act
// (nothing matches, a role does not exist, a permission is missing), with a
// stable reason and a message that names the fix. An AWS error that says
// nothing about the node class (throttling, a server error, a network
// failure) changes nothing: the part it hit keeps its previous values and
// condition, and Resolve returns the error so the caller retries.
package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// Reasons of False (and Unknown) conditions. They are stable: alerts and
// tools match on them.
const (
	ReasonSubnetsNotFound         = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound  = "SecurityGroupsNotFound"
	ReasonAMINotFound             = "AMINotFound"
	ReasonUnsupportedAlias        = "UnsupportedAlias"
	ReasonInvalidAMISelector      = "InvalidAMISelectorTerms"
	ReasonRoleNotFound            = "RoleNotFound"
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	ReasonInstanceProfileNoRole   = "InstanceProfileHasNoRole"
	// ReasonUnauthorized: the controller's own IAM policy lacks an action
	// needed to resolve the condition; the message names it.
	ReasonUnauthorized                = "Unauthorized"
	ReasonDependenciesNotReady        = "DependenciesNotReady"
	ReasonTagValidationFailed         = "TagValidationFailed"
	ReasonCreateFleetAuthCheckFailed  = "CreateFleetAuthCheckFailed"
	ReasonRunInstancesAuthCheckFailed = "RunInstancesAuthCheckFailed"
	ReasonPassRoleAuthCheckFailed     = "PassRoleAuthCheckFailed"
	ReasonDryRunDisabled              = "DryRunDisabled"
	ReasonReadinessUnknown            = "ReadinessUnknown"
	// ReasonNotConfigured: the part the condition is about is optional and
	// the spec does not use it (CapacityReservationsReady without
	// capacityReservationSelectorTerms). The condition is True.
	ReasonNotConfigured = "NotConfigured"
	// ReasonUserDataTooLarge: the user data stevedore would send for the
	// node class is over EC2's limit (ValidationSucceeded=False); the
	// message gives the sizes and the fix.
	ReasonUserDataTooLarge = cloud.ReasonUserDataTooLarge
	// ReasonCapacityReservationsNotFound: capacityReservationSelectorTerms
	// match no active reservation. CapacityReservationsReady stays True with
	// it, as nodes still launch on on-demand and spot capacity; the message
	// names the terms.
	ReasonCapacityReservationsNotFound = "CapacityReservationsNotFound"
)

// Options configure a Resolver.
type Options struct {
	// ClusterName is the EKS cluster's name; it appears in the managed
	// instance profiles' names and tags and in the dry-run launch tags.
	ClusterName string
	// Region is the AWS region; it is part of the managed instance
	// profiles' path and tags (IAM is global, clusters are regional).
	Region string
	// Clock stamps condition transitions and decides image deprecation.
	// Default: the real clock.
	Clock clock.PassiveClock
	// Cluster is the cluster's identity, which the user data carries: its
	// size is checked with it. Fields left empty are those of
	// launch.StandInCluster.
	Cluster launch.Cluster
	// DisableDryRun skips the dry-run launch checks; ValidationSucceeded is
	// then True as soon as its dependencies are.
	DisableDryRun bool
	// DisableCapacityReservations turns the ReservedCapacity feature gate
	// off: capacityReservationSelectorTerms are not resolved,
	// status.capacityReservations stays empty and the node class has no
	// CapacityReservationsReady condition, as in Karpenter with the gate off.
	DisableCapacityReservations bool
}

// Resolver computes EC2NodeClass statuses.
type Resolver struct {
	ec2  sdk.EC2
	ssm  sdk.SSM
	iam  sdk.IAM
	opts Options
	// userData remembers the user data checked, which is checked on
	// every pass.
	userData *launch.UserDataCache
}

// NewResolver returns a Resolver that calls AWS through clients (EC2, SSM
// and IAM are used).
func NewResolver(clients sdk.Clients, opts Options) *Resolver {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Resolver{ec2: clients.EC2, ssm: clients.SSM, iam: clients.IAM, opts: opts, userData: launch.NewUserDataCache()}
}

// outcome is a decided condition.
type outcome struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func ok(conditionType string) outcome {
	return outcome{status: metav1.ConditionTrue, reason: conditionType}
}

func failed(reason, format string, args ...any) outcome {
	return outcome{status: metav1.ConditionFalse, reason: reason, message: fmt.Sprintf(format, args...)}
}

// Resolve returns nc's new status for a cluster running kubernetesVersion.
//
// The status is always safe to write. When an AWS call fails for a reason
// that says nothing about the node class, the part it hit (subnets, security
// groups, images, capacity reservations, instance profile or validation)
// keeps its values and condition from nc.Status, and the returned error says
// what failed; the caller should write the status and retry. Ready is
// recomputed every time: it is True only when every condition in
// readyDependencies is True for nc's generation.
func (r *Resolver) Resolve(ctx context.Context, nc *awsv1.EC2NodeClass, kubernetesVersion string) (awsv1.EC2NodeClassStatus, error) {
	st := *nc.Status.DeepCopy()
	now := metav1.NewTime(r.opts.Clock.Now())
	set := func(conditionType string, o outcome) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: conditionType, Status: o.status, Reason: o.reason, Message: o.message,
			ObservedGeneration: nc.Generation, LastTransitionTime: now,
		})
	}
	var errs []error
	kept := false

	if amis, o, err := r.resolveAMIs(ctx, nc, kubernetesVersion); err != nil {
		errs, kept = append(errs, fmt.Errorf("resolving amiSelectorTerms: %w", err)), true
	} else {
		st.AMIs = amis
		set(awsv1.ConditionTypeAMIsReady, o)
	}
	if subnets, o, err := r.resolveSubnets(ctx, nc.Spec.SubnetSelectorTerms); err != nil {
		errs, kept = append(errs, fmt.Errorf("resolving subnetSelectorTerms: %w", err)), true
	} else {
		st.Subnets = subnets
		set(awsv1.ConditionTypeSubnetsReady, o)
	}
	if groups, o, err := r.resolveSecurityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms); err != nil {
		errs, kept = append(errs, fmt.Errorf("resolving securityGroupSelectorTerms: %w", err)), true
	} else {
		st.SecurityGroups = groups
		set(awsv1.ConditionTypeSecurityGroupsReady, o)
	}
	// Validation does not launch into reservations, so a failure here does
	// not hold it back.
	if r.opts.DisableCapacityReservations {
		st.CapacityReservations = nil
		meta.RemoveStatusCondition(&st.Conditions, awsv1.ConditionTypeCapacityReservationsReady)
	} else if reservations, o, err := r.resolveCapacityReservations(ctx, nc.Spec.CapacityReservationSelectorTerms); err != nil {
		errs = append(errs, fmt.Errorf("resolving capacityReservationSelectorTerms: %w", err))
	} else {
		st.CapacityReservations = reservations
		set(awsv1.ConditionTypeCapacityReservationsReady, o)
	}
	var extraReady []string
	if sel := nc.Spec.PlacementGroupSelector; sel == nil {
		meta.RemoveStatusCondition(&st.Conditions, ConditionTypePlacementGroupReady)
	} else {
		extraReady = append(extraReady, ConditionTypePlacementGroupReady)
		o, err := r.resolvePlacementGroup(ctx, sel)
		if err != nil {
			errs = append(errs, fmt.Errorf("resolving placementGroupSelector: %w", err))
		}
		set(ConditionTypePlacementGroupReady, o)
	}
	profile, o, err := r.resolveInstanceProfile(ctx, nc)
	if err != nil {
		errs, kept = append(errs, fmt.Errorf("resolving the instance profile: %w", err)), true
	} else {
		st.InstanceProfile = profile.name
		set(awsv1.ConditionTypeInstanceProfileReady, o)
	}
	// Validation launches with what the other parts resolved; if one of
	// them could not be resolved now, there is nothing current to validate.
	if !kept {
		if o, err := r.validate(ctx, nc, &st, profile); err != nil {
			errs = append(errs, fmt.Errorf("validating launch permissions: %w", err))
		} else {
			set(awsv1.ConditionTypeValidationSucceeded, o)
		}
	}
	set(awsv1.ConditionTypeReady, readiness(st.Conditions, nc.Generation, extraReady...))
	return st, errors.Join(errs...)
}

// readyDependencies are the conditions Ready is the conjunction of, in the
// order their messages appear in Ready's.
//
// CapacityReservationsReady is not one of them. Reservations are an extra
// place to launch, not a requirement: without them the node class still
// launches on-demand and spot capacity, and nothing about them should stop
// those launches. The condition is True when nothing matches (as Karpenter
// has it), so counting it could only hold Ready back for a missing
// ec2:DescribeCapacityReservations permission (False) or a
// DescribeCapacityReservations outage after a spec change (evaluated for an
// older generation), and either would stop every launch of the node class
// for the sake of an optional feature. Karpenter counts it only while its
// reserved-capacity feature gate is on; stevedore leaves it out of Ready
// with the gate on too, and the condition's message, not Ready, is where a
// reservation problem shows.
var readyDependencies = []string{
	awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeSubnetsReady,
	awsv1.ConditionTypeSecurityGroupsReady,
	awsv1.ConditionTypeInstanceProfileReady,
	awsv1.ConditionTypeValidationSucceeded,
}

// readiness computes Ready. A dependency evaluated for an older generation
// counts as unknown: its verdict was about a spec that no longer exists.
//
// extra are further conditions that count while the node class uses the
// feature they describe (PlacementGroupReady while a placement group is
// selected).
func readiness(conditions []metav1.Condition, generation int64, extra ...string) outcome {
	var falseReason string
	var falses, unknowns []string
	for _, t := range append(slices.Clip(readyDependencies), extra...) {
		c := meta.FindStatusCondition(conditions, t)
		switch {
		case c == nil:
			unknowns = append(unknowns, t+" has not been evaluated yet")
		case c.ObservedGeneration < generation:
			unknowns = append(unknowns, fmt.Sprintf("%s was last evaluated for generation %d", t, c.ObservedGeneration))
		case c.Status == metav1.ConditionFalse:
			if t == awsv1.ConditionTypeValidationSucceeded && c.Reason == ReasonDependenciesNotReady && len(falses) > 0 {
				continue // it only repeats the conditions already listed
			}
			if falseReason == "" {
				falseReason = c.Reason
			}
			falses = append(falses, fmt.Sprintf("%s=False (%s): %s", t, c.Reason, c.Message))
		case c.Status != metav1.ConditionTrue:
			unknowns = append(unknowns, fmt.Sprintf("%s is %s", t, c.Status))
		}
	}
	switch {
	case len(falses) > 0:
		return outcome{status: metav1.ConditionFalse, reason: falseReason, message: strings.Join(falses, "; ")}
	case len(unknowns) > 0:
		return outcome{status: metav1.ConditionUnknown, reason: ReasonReadinessUnknown, message: strings.Join(unknowns, "; ")}
	}
	return ok(awsv1.ConditionTypeReady)
}

// apiErrorCode returns the AWS error code of err, or "".
func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func apiErrorMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	return err.Error()
}

// isUnauthorized reports whether err is the controller's IAM policy refusing
// the call.
func isUnauthorized(err error) bool {
	switch apiErrorCode(err) {
	case "UnauthorizedOperation", "AccessDenied", "AccessDeniedException":
		return true
	}
	return false
}

// unauthorized is the outcome for a call the controller may not make.
func unauthorized(action string, err error) outcome {
	return failed(ReasonUnauthorized, "the controller is not allowed to call %s (%s); grant %s to the controller's IAM role",
		action, apiErrorCode(err), action)
}
