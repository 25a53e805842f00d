package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a NodePool. Its Ready condition (ConditionTypeReady) is
// True when ValidationSucceeded and NodeClassReady both are.
const (
	// ConditionTypeValidationSucceeded is False when the NodePool fails
	// checks that the CRD cannot express; the message says which.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeNodeClassReady mirrors the Ready condition of the node
	// class the NodePool references, or is False when it does not exist.
	ConditionTypeNodeClassReady = "NodeClassReady"
	// ConditionTypeNodeRegistrationHealthy is False when recent launches from
	// the NodePool failed to register as nodes, which usually means a
	// configuration problem that needs a person.
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
)

// NodePoolStatus is a NodePool's observed state.
type NodePoolStatus struct {
	// Resources is the total capacity of the NodePool's nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes the NodePool owns.
	// +optional
	Nodes int64 `json:"nodes"`
	// NodeClassObservedGeneration is the generation of the node class that
	// NodeRegistrationHealthy was judged against. When the node class
	// changes, that condition starts afresh.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// AllowedDisruptions is, per disruption reason, how many more of the
	// NodePool's nodes its budgets let stevedore disrupt right now, after
	// the nodes already being disrupted. It is stevedore's addition to the
	// Karpenter API, kept current by the NodePool status controller.
	// +listType=map
	// +listMapKey=reason
	// +optional
	AllowedDisruptions []AllowedDisruption `json:"allowedDisruptions,omitempty"`
	// Conditions report whether the NodePool can launch nodes.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AllowedDisruption is how many more of a NodePool's nodes may be disrupted
// now for one reason.
type AllowedDisruption struct {
	// Reason is the disruption reason: Underutilized, Empty or Drifted.
	// +required
	Reason DisruptionReason `json:"reason"`
	// Nodes is how many more nodes may be disrupted for the reason. When no
	// budget applies to the reason it is 2147483647 (unlimited).
	// +required
	Nodes int32 `json:"nodes"`
}
