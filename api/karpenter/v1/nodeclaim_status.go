package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a NodeClaim.
const (
	// ConditionTypeLaunched is True once the cloud instance exists.
	ConditionTypeLaunched = "Launched"
	// ConditionTypeRegistered is True once the instance's Node has joined the
	// cluster and been given the NodeClaim's labels and taints.
	ConditionTypeRegistered = "Registered"
	// ConditionTypeInitialized is True once the Node is Ready, its startup
	// taints are gone and every requested resource is allocatable.
	ConditionTypeInitialized = "Initialized"
	// ConditionTypeReady is True when Launched, Registered and Initialized
	// all are. It is also the ready condition of a NodePool (see
	// ConditionTypeValidationSucceeded and ConditionTypeNodeClassReady).
	ConditionTypeReady = "Ready"
	// ConditionTypeDrifted is True when the node no longer matches its
	// NodePool or node class; the reason says what changed.
	ConditionTypeDrifted = "Drifted"
	// ConditionTypeConsolidatable is True when the node has had no pod
	// scheduled or removed for the NodePool's consolidateAfter.
	ConditionTypeConsolidatable = "Consolidatable"
	// ConditionTypeDrained is True once every pod that must be evicted has
	// left the node during termination.
	ConditionTypeDrained = "Drained"
	// ConditionTypeVolumesDetached is True once every volume of the node's
	// pods has been detached during termination.
	ConditionTypeVolumesDetached = "VolumesDetached"
	// ConditionTypeInstanceTerminating is True once the cloud instance is
	// being terminated.
	ConditionTypeInstanceTerminating = "InstanceTerminating"
	// ConditionTypeConsistentStateFound is False when the Node disagrees with
	// what the NodeClaim promised, for example less capacity than expected.
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
	// ConditionTypeDisruptionReason is set while a disruption of the node is
	// in progress; its reason says why (for example Drifted or Underutilized).
	ConditionTypeDisruptionReason = "DisruptionReason"
)

// NodeClaimStatus is the observed state of a NodeClaim's node.
type NodeClaimStatus struct {
	// NodeName is the name of the Node object of the instance.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's ID of the instance, as on the Node
	// (for example aws:///us-east-1a/i-0123456789abcdef0).
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID identifies the machine image the node runs.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the node's full capacity, estimated at launch.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is what the node can give to pods, estimated at launch:
	// capacity less system and kubelet reservations and eviction thresholds.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions report the node's progress through its life.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is the last time a pod was scheduled to the node or
	// left it (including a pod turning terminal or terminating). It drives
	// consolidateAfter.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty,omitzero"`
}
