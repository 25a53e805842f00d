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
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

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

// HashVersion is the value of the ec2nodeclass-hash-version annotation
// that stevedore writes next to Hash.
//
// The hash is stevedore's own, not Karpenter's byte for byte. NodeClaims
// of a cluster that moves from Karpenter carry Karpenter's hash under
// Karpenter's version (v3 to v6). Had stevedore reused one of those version
// strings, every such NodeClaim would compare as a different hash and the
// whole fleet would drift at once. A version string of its own makes the
// versions differ instead, which skips the comparison and has the NodeClaims
// re-stamped with stevedore's hash (see NeedsRestamp). Bump the number when
// a default changes, a hashed field is added with a value already set, a
// field is removed from the hash, or a field changes type.
const HashVersion = wellknown.EC2NodeClassHashVersion

// hashed are the fields of an EC2NodeClass that feed the static hash. The
// selector terms are left out (their results drift through status), as are
// the literal amiFamily (the resolved family is hashed instead).
type hashed struct {
	Family                   awsv1.AMIFamily             `json:"family"`
	CABundle                 string                      `json:"caBundle,omitempty"`
	Role                     string                      `json:"role,omitempty"`
	InstanceProfile          *string                     `json:"instanceProfile,omitempty"`
	UserData                 *string                     `json:"userData,omitempty"`
	Tags                     map[string]string           `json:"tags,omitempty"`
	Kubelet                  *awsv1.KubeletConfiguration `json:"kubelet,omitempty"`
	BlockDeviceMappings      []awsv1.BlockDeviceMapping  `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy      *awsv1.InstanceStorePolicy  `json:"instanceStorePolicy,omitempty"`
	MetadataOptions          *awsv1.MetadataOptions      `json:"metadataOptions,omitempty"`
	AssociatePublicIPAddress *bool                       `json:"associatePublicIPAddress,omitempty"`
	DetailedMonitoring       *bool                       `json:"detailedMonitoring,omitempty"`
	Context                  *string                     `json:"context,omitempty"`
	// Karpenter v1.14's network, placement and CPU fields. They are hashed
	// only when set, so node classes without them keep their hash and no
	// version bump is needed. ipPrefixCount is left out, as in Karpenter:
	// it changes launch templates, not running nodes.
	NetworkInterfaces      []awsv1.NetworkInterface      `json:"networkInterfaces,omitempty"`
	PlacementGroupSelector *awsv1.PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	ConnectionTracking     *awsv1.ConnectionTracking     `json:"connectionTracking,omitempty"`
	CPUOptions             *awsv1.CPUOptions             `json:"cpuOptions,omitempty"`
}

// Hash returns the static hash of a node class: its hashed spec fields, the
// resolved AMI family and the cluster CA bundle, as a decimal string. Map
// keys are hashed in sorted order and empty maps and lists hash like absent
// ones, so the hash is the same for equal specs however they were written.
func Hash(nodeClass *awsv1.EC2NodeClass, caBundle string) string {
	spec := nodeClass.Spec
	h := hashed{
		Family:                   amifamily.ResolvedFamily(&spec),
		CABundle:                 caBundle,
		Role:                     spec.Role,
		InstanceProfile:          spec.InstanceProfile,
		UserData:                 spec.UserData,
		Kubelet:                  spec.Kubelet,
		InstanceStorePolicy:      spec.InstanceStorePolicy,
		MetadataOptions:          spec.MetadataOptions,
		AssociatePublicIPAddress: spec.AssociatePublicIPAddress,
		DetailedMonitoring:       spec.DetailedMonitoring,
		Context:                  spec.Context,
		PlacementGroupSelector:   spec.PlacementGroupSelector,
		ConnectionTracking:       spec.ConnectionTracking,
		CPUOptions:               spec.CPUOptions,
	}
	if len(spec.NetworkInterfaces) > 0 {
		// Order does not matter to the launch (interfaces are written in
		// card and device order), so it does not matter to the hash.
		h.NetworkInterfaces = slices.SortedFunc(slices.Values(spec.NetworkInterfaces), func(a, b awsv1.NetworkInterface) int {
			if a.NetworkCardIndex != b.NetworkCardIndex {
				return int(a.NetworkCardIndex - b.NetworkCardIndex)
			}
			return int(a.DeviceIndex - b.DeviceIndex)
		})
	}
	if len(spec.Tags) > 0 {
		h.Tags = spec.Tags
	}
	if len(spec.BlockDeviceMappings) > 0 {
		h.BlockDeviceMappings = spec.BlockDeviceMappings
	}
	if k := spec.Kubelet; k != nil && isZeroKubelet(k) {
		h.Kubelet = nil
	}
	data, err := json.Marshal(h)
	if err != nil {
		// The hashed types are plain data; marshalling cannot fail.
		panic(fmt.Sprintf("hashing EC2NodeClass %s: %v", nodeClass.Name, err))
	}
	sum := sha256.Sum256(data)
	return strconv.FormatUint(binary.BigEndian.Uint64(sum[:8]), 10)
}

func isZeroKubelet(k *awsv1.KubeletConfiguration) bool {
	b, _ := json.Marshal(k)
	return string(b) == "{}"
}

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

// NeedsRestamp reports whether a NodeClaim should be given the node class's
// current hash and version: its version differs from the node class's (an
// upgrade or a migration changed the algorithm) and it has not drifted
// already, so a new algorithm never drifts the fleet on its own.
func NeedsRestamp(nodeClaim *karpv1.NodeClaim, nodeClass *awsv1.EC2NodeClass) bool {
	classVersion, ok := nodeClass.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]
	if !ok || nodeClaim.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] == classVersion {
		return false
	}
	for _, c := range nodeClaim.Status.Conditions {
		if c.Type == karpv1.ConditionTypeDrifted && c.Status == "True" {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	as, bs := slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(as), slices.Compact(bs))
}
