package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an EC2NodeClass. Ready is True when all the others that
// apply are True; NodePools that reference a node class that is not Ready
// launch nothing.
const (
	// ConditionTypeSubnetsReady is False when subnetSelectorTerms match no
	// subnet.
	ConditionTypeSubnetsReady = "SubnetsReady"
	// ConditionTypeSecurityGroupsReady is False when
	// securityGroupSelectorTerms match no security group.
	ConditionTypeSecurityGroupsReady = "SecurityGroupsReady"
	// ConditionTypeAMIsReady is False when amiSelectorTerms match no image,
	// or the alias is not supported for the cluster's Kubernetes version.
	ConditionTypeAMIsReady = "AMIsReady"
	// ConditionTypeInstanceProfileReady is True once the instance profile
	// exists (created for role, or found for instanceProfile).
	ConditionTypeInstanceProfileReady = "InstanceProfileReady"
	// ConditionTypeValidationSucceeded is False when a check that needs AWS
	// fails, for example a dry run of a launch that the IAM policy refuses;
	// the reason and message say which.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeCapacityReservationsReady is True once the capacity
	// reservation selectors have been resolved, even to nothing.
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	// ConditionTypeReady is True when every other condition is True.
	ConditionTypeReady = "Ready"
)

// CapacityReservationType is the kind of a capacity reservation.
//
// +kubebuilder:validation:Enum=default;capacity-block
type CapacityReservationType string

const (
	// CapacityReservationTypeDefault is an on-demand capacity reservation.
	CapacityReservationTypeDefault CapacityReservationType = "default"
	// CapacityReservationTypeCapacityBlock is a capacity block for ML, which
	// ends at a fixed time.
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState is the state of a capacity reservation.
//
// +kubebuilder:validation:Enum=active;expiring
type CapacityReservationState string

const (
	// CapacityReservationStateActive accepts launches.
	CapacityReservationStateActive CapacityReservationState = "active"
	// CapacityReservationStateExpiring is a capacity block close to its end:
	// no new launches, and its instances are about to be reclaimed.
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)

// EC2NodeClassStatus reports what an EC2NodeClass's selectors resolved to
// and whether it is ready for launches.
type EC2NodeClassStatus struct {
	// Subnets are the selected subnets, the ones with the most free
	// addresses first.
	// +listType=atomic
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups are the selected security groups.
	// +listType=atomic
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations are the selected capacity reservations.
	// +listType=atomic
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs are the selected machine images, newest first, each with the
	// instance type requirements it suits (architecture, GPU or not).
	// +listType=atomic
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the name of the instance profile used for launches:
	// the one stevedore manages for role, or spec.instanceProfile.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions report whether the node class is ready for launches.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a selected subnet.
type Subnet struct {
	// ID is the subnet ID.
	// +required
	ID string `json:"id"`
	// Zone is the subnet's availability zone, for example us-east-1a.
	// +required
	Zone string `json:"zone"`
	// ZoneID is the subnet's availability zone ID, for example use1-az1.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a selected security group.
type SecurityGroup struct {
	// ID is the security group ID.
	// +required
	ID string `json:"id"`
	// Name is the security group's name.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a selected machine image.
type AMI struct {
	// ID is the image ID.
	// +required
	ID string `json:"id"`
	// Name is the image name.
	// +optional
	Name string `json:"name,omitempty"`
	// Deprecated is true when the image is past its deprecation time. A
	// deprecated image is used only when no other image fits.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Requirements are the instance type labels the image suits, for example
	// kubernetes.io/arch In [arm64].
	// +listType=atomic
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// CapacityReservation is a selected capacity reservation.
type CapacityReservation struct {
	// ID is the capacity reservation ID.
	// +kubebuilder:validation:Pattern=`^cr-[0-9a-z]+$`
	// +required
	ID string `json:"id"`
	// AvailabilityZone is the zone the reservation is in.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// InstanceType is the instance type the reservation is for.
	// +required
	InstanceType string `json:"instanceType"`
	// OwnerID is the AWS account that owns the reservation.
	// +kubebuilder:validation:Pattern=`^[0-9]{12}$`
	// +required
	OwnerID string `json:"ownerID"`
	// InstanceMatchCriteria says whether the reservation accepts any matching
	// instance (open) or only instances that target it (targeted).
	// +kubebuilder:validation:Enum=open;targeted
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// ReservationType is default (an on-demand capacity reservation) or
	// capacity-block.
	// +kubebuilder:default=default
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// Interruptible is true when EC2 may reclaim the reservation's capacity.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
	// State is active, or expiring for a capacity block near its end.
	// +kubebuilder:default=active
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
	// EndTime is when the reservation ends, if it has an end.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
}
