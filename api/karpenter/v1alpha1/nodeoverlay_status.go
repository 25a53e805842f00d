package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types of a NodeOverlay, as Karpenter names them.
const (
	// ConditionTypeValidationSucceeded is True when the overlay passed the
	// checks the API server cannot do and conflicts with no overlay of the
	// same weight; only then does it apply.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeReady follows ValidationSucceeded.
	ConditionTypeReady = "Ready"
)

// Reasons of a False ValidationSucceeded condition, as Karpenter writes them.
const (
	// ReasonRuntimeValidation: a requirement or capacity the API server
	// accepted is not one stevedore can use.
	ReasonRuntimeValidation = "RuntimeValidation"
	// ReasonConflict: an overlay of the same weight sets the same offering's
	// price or the same resource, and wins.
	ReasonConflict = "Conflict"
)

// Annotations stevedore puts on a NodeClaim launched with overlaid instance
// types, as Karpenter does.
const (
	// AnnotationPriceOverlayApplied is "true" on a NodeClaim for which an
	// overlay changed the price of at least one of its instance types.
	AnnotationPriceOverlayApplied = "karpenter.sh/price-overlay-applied"
	// AnnotationCapacityOverlayApplied is "true" on a NodeClaim for which an
	// overlay added capacity to at least one of its instance types.
	AnnotationCapacityOverlayApplied = "karpenter.sh/capacity-overlay-applied"
)

// NodeOverlayStatus is what stevedore reports about a NodeOverlay.
type NodeOverlayStatus struct {
	// Conditions report whether the overlay is valid and applies.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
