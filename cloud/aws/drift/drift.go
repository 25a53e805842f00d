// Package drift decides whether an instance launched from an EC2NodeClass
// still matches it, and computes the EC2NodeClass static hash that the
// first of those checks compares.
//
// The checks run in a fixed order and the first hit wins:
//
//  1. NodeClassDrift: the node class's hashed spec fields changed since the
//     launch (compared only when the NodeClaim and the node class carry the
//     same hash version);
//  2. AMIDrift: the instance's image is not the one the node class now
//     selects for its instance type;
//  3. SecurityGroupDrift: the instance's security groups, as a set, differ
//     from the selected ones;
//  4. SubnetDrift: the instance's subnet is no longer selected;
//  5. PlacementGroupDrift: the NodeClaim's placement-group-id label is not
//     the placement group the node class now selects (or it has the label
//     and the node class selects none).
//
// Everything here is pure: the caller gathers the NodeClaim, the node class,
// the instance's image, subnet and security groups, and the labels of the
// instance type, and acts on the reason.
package drift

import (
	"errors"
	"fmt"
	"slices"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
)

// Drift reasons, in the order they are checked.
const (
	NodeClassDrift     cloud.DriftReason = "NodeClassDrift"
	AMIDrift           cloud.DriftReason = "AMIDrift"
	SecurityGroupDrift cloud.DriftReason = "SecurityGroupDrift"
	SubnetDrift        cloud.DriftReason = "SubnetDrift"
	// CapacityReservationDrift: the instance runs in a capacity reservation
	// the node class no longer selects.
	CapacityReservationDrift cloud.DriftReason = "CapacityReservationDrift"
	// PlacementGroupDrift is Karpenter's reason for an instance outside the
	// placement group its node class selects.
	PlacementGroupDrift cloud.DriftReason = "PlacementGroupDrift"
)

// Instance is what EC2 reports about a NodeClaim's instance.
type Instance struct {
	ImageID          string
	SubnetID         string
	SecurityGroupIDs []string
	// CapacityReservationID is the reservation the instance was launched
	// into by targeting it; empty for other instances, and for every
	// instance while the ReservedCapacity feature gate is off.
	CapacityReservationID string
}

// Input is everything the drift checks read.
type Input struct {
	// NodeClaim carries the hash annotations stamped at launch.
	NodeClaim *karpv1.NodeClaim
	// NodeClass carries the current hash annotations and the resolved
	// status (AMIs, subnets, security groups).
	NodeClass *awsv1.EC2NodeClass
	// Instance is the NodeClaim's instance.
	Instance Instance
	// InstanceTypeLabels are the labels of the NodeClaim's instance type as
	// currently offered; nil when the type is no longer offered.
	InstanceTypeLabels map[string]string
	// PlacementGroupID is the ID of the placement group the node class's
	// selector resolves to now; empty without a selector. With a selector
	// that resolves to nothing, the check is skipped: there is nothing to
	// compare with, and the node class is not Ready for replacements anyway.
	PlacementGroupID string
}

// ErrStatusIncomplete is returned when the node class's status lacks what
// a check needs; drift cannot be decided until the node class resolves.
var ErrStatusIncomplete = errors.New("node class status is incomplete")

// Check returns the first drift reason that applies, or cloud.NoDrift.
func Check(in Input) (cloud.DriftReason, error) {
	if in.NodeClaim == nil || in.NodeClass == nil {
		return cloud.NoDrift, fmt.Errorf("drift check needs a NodeClaim and its EC2NodeClass")
	}
	status := in.NodeClass.Status
	switch {
	case len(status.AMIs) == 0:
		return cloud.NoDrift, fmt.Errorf("%w: EC2NodeClass %s has no status.amis", ErrStatusIncomplete, in.NodeClass.Name)
	case len(status.Subnets) == 0:
		return cloud.NoDrift, fmt.Errorf("%w: EC2NodeClass %s has no status.subnets", ErrStatusIncomplete, in.NodeClass.Name)
	case len(status.SecurityGroups) == 0:
		return cloud.NoDrift, fmt.Errorf("%w: EC2NodeClass %s has no status.securityGroups", ErrStatusIncomplete, in.NodeClass.Name)
	}
	// Karpenter's fields, in the order the hash sees them: a change of a
	// hashed field is NodeClassDrift (see Hash).
	if HashDrifted(in.NodeClaim, in.NodeClass) {
		return NodeClassDrift, nil
	}
	if in.InstanceTypeLabels == nil {
		return cloud.NoDrift, fmt.Errorf("instance type %q of NodeClaim %s is no longer offered; cannot tell its image",
			in.NodeClaim.Labels[wellknown.LabelInstanceType], in.NodeClaim.Name)
	}
	ami, ok := amifamily.ImageFor(status.AMIs, in.InstanceTypeLabels)
	imageID := in.Instance.ImageID
	if imageID == "" {
		imageID = in.NodeClaim.Status.ImageID
	}
	if !ok || ami.ID != imageID {
		return AMIDrift, nil
	}
	want := make([]string, 0, len(status.SecurityGroups))
	for _, sg := range status.SecurityGroups {
		want = append(want, sg.ID)
	}
	if !sameSet(want, in.Instance.SecurityGroupIDs) {
		return SecurityGroupDrift, nil
	}
	if !slices.ContainsFunc(status.Subnets, func(s awsv1.Subnet) bool { return s.ID == in.Instance.SubnetID }) {
		return SubnetDrift, nil
	}
	// status.capacityReservations is resolved again every minute, which
	// stands for Karpenter's uncached look at EC2 before it reports this.
	if id := in.Instance.CapacityReservationID; id != "" &&
		!slices.ContainsFunc(status.CapacityReservations, func(cr awsv1.CapacityReservation) bool { return cr.ID == id }) {
		return CapacityReservationDrift, nil
	}
	unresolved := in.NodeClass.Spec.PlacementGroupSelector != nil && in.PlacementGroupID == ""
	if !unresolved && in.NodeClaim.Labels[wellknown.LabelPlacementGroupID] != in.PlacementGroupID {
		return PlacementGroupDrift, nil
	}
	return cloud.NoDrift, nil
}

// HashDrifted reports whether both objects carry a hash of the same version
// and the hashes differ.
func HashDrifted(nodeClaim *karpv1.NodeClaim, nodeClass *awsv1.EC2NodeClass) bool {
	claimHash, ok1 := nodeClaim.Annotations[wellknown.AnnotationEC2NodeClassHash]
	claimVersion, ok2 := nodeClaim.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]
	classHash, ok3 := nodeClass.Annotations[wellknown.AnnotationEC2NodeClassHash]
	classVersion, ok4 := nodeClass.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]
	if !ok1 || !ok2 || !ok3 || !ok4 || claimVersion != classVersion {
		return false
	}
	return claimHash != classHash
}

// Restamp says which hash annotations a NodeClaim is given when its node
// class's hash version changes to version: the node class's hash was
// computed by another algorithm, and so was the NodeClaim's, so comparing
// them would drift every node at once. A NodeClaim whose version differs
// gets the new version and the node class's new hash; one that has already
// drifted gets the new version but keeps its old hash, which then differs
// under the same version, so it stays drifted. This is Karpenter's rule
// too, so a NodeClaim ends up the same whichever controller re-stamped it.
func Restamp(nodeClaim *karpv1.NodeClaim, version string) (stampVersion, stampHash bool) {
	if nodeClaim.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] == version {
		return false, false
	}
	for _, c := range nodeClaim.Status.Conditions {
		if c.Type == karpv1.ConditionTypeDrifted && c.Status == "True" {
			return true, false
		}
	}
	return true, true
}

func sameSet(a, b []string) bool {
	as, bs := slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(as), slices.Compact(bs))
}
