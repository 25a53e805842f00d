package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known values of the API.
const (
	// ActiveProvisioningStrategy is the default and only strategy that
	// acts: the buffer's chunks are packed as if they were pending pods, so
	// that nodes are launched for them.
	ActiveProvisioningStrategy = "buffer.x-k8s.io/active-capacity"

	// ConditionReadyForProvisioning says whether the buffer's pod shape and
	// chunk count could be worked out.
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning says whether the buffer's chunks fit on
	// capacity that exists or is on its way.
	ConditionProvisioning = "Provisioning"
	// ConditionLimitedByQuotas is a condition type upstream reserves; no
	// quota limits buffers in stevedore, so it is never written.
	ConditionLimitedByQuotas = "LimitedByQuotas"

	// Reasons of ReadyForProvisioning.
	ReasonResolved            = "Resolved"
	ReasonScalableRefNotFound = "ScalableRefNotFound"
	ReasonPodTemplateNotFound = "PodTemplateNotFound"
	ReasonResolutionFailed    = "ResolutionFailed"

	// Reasons of Provisioning.
	ReasonFitsExistingCapacity    = "FitsExistingCapacity"
	ReasonRequiresNewCapacity     = "RequiresNewCapacity"
	ReasonNotReadyForProvisioning = "NotReadyForProvisioning"
	ReasonBufferEmpty             = "BufferEmpty"

	// Kinds a scalableRef may name, all in the apps group.
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindReplicaSet  = "ReplicaSet"
)

// CapacityBuffer keeps spare capacity provisioned ahead of pods: a number of
// placeholder pods, each shaped like a pod template, that the autoscaler
// packs as if they were pending, so that nodes are launched for them and are
// not removed while they hold room for them. Real pods may use that room; the
// buffer is then refilled.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb,categories=autoscaling
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="The strategy to be used."
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="The name of the PodTemplate used."
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="The actual number of buffer chunks."
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="List of all condition types."
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="List of all condition statuses."
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="List of all condition reasons."
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="The age of the CapacityBuffer."
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the spare capacity asked for.
	// +required
	Spec CapacityBufferSpec `json:"spec"`

	// status is what the autoscaler made of the spec.
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// Limits bound the total requests of a buffer's chunks.
type Limits corev1.ResourceList

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// name of the object.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ScalableRef names a workload in the buffer's namespace that has a scale
// subresource.
type ScalableRef struct {
	// apiGroup of the workload; empty means the core group. stevedore, as
	// Karpenter, reads Deployments, StatefulSets and ReplicaSets of the apps
	// group (an empty group is read as apps).
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// kind of the workload.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// name of the workload.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// CapacityBufferSpec is the spare capacity asked for: the shape of one chunk
// and how many chunks.
//
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="If podTemplateRef is set, replicas or limits must also be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="You must define either PodTemplateRef or ScalableRef, but not both"
type CapacityBufferSpec struct {
	// provisioningStrategy says how the buffer is kept.
	// "buffer.x-k8s.io/active-capacity", the default, launches capacity for
	// the chunks as if they were pending pods.
	// +default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`

	// podTemplateRef names a PodTemplate in the buffer's namespace whose pod
	// is the shape of one chunk. Set this or scalableRef, not both.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`

	// scalableRef names a workload in the buffer's namespace whose pod
	// template is the shape of one chunk, and whose replica count
	// percentage is taken of. Set this or podTemplateRef, not both.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`

	// replicas is the number of chunks. Without replicas and percentage, as
	// many chunks as fit within limits are kept.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:ExclusiveMinimum=false
	Replicas *int32 `json:"replicas,omitempty"`

	// percentage of the scalableRef's replicas to keep as chunks, rounded up,
	// at least 1 when both are above zero. Only read with scalableRef.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:ExclusiveMinimum=false
	Percentage *int32 `json:"percentage,omitempty"`

	// limits bound the chunks' total requests (cpu, memory, ...): the number
	// of chunks is at most what fits within them. Without replicas and
	// percentage, it is what fits within them.
	// +optional
	Limits Limits `json:"limits,omitempty"`
}

// CapacityBufferStatus is what the autoscaler made of a buffer's spec.
type CapacityBufferStatus struct {
	// podTemplateRef is the PodTemplate the chunks were shaped from, when the
	// spec names one.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`

	// replicas is the number of chunks kept.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// podTemplateGeneration is the generation of the PodTemplate the chunks
	// were shaped from.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`

	// conditions: ReadyForProvisioning (the shape and count were worked
	// out) and Provisioning (the chunks fit on capacity that exists or is
	// on its way).
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// provisioningStrategy is the strategy the status was worked out for.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
//
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}
