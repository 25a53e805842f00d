package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOverlay changes, for the instance types and offerings its
// requirements match, the price stevedore compares them by or the extended
// resources it believes their nodes carry. Overlays change only stevedore's
// decisions (which type to launch, whether consolidation saves money, whether
// a pod that requests an extended resource fits); they change nothing in the
// cloud.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description=""
// +kubebuilder:subresource:status
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="!has(self.price) || !has(self.priceAdjustment)",message="price and priceAdjustment cannot both be set: price replaces the offering's price, priceAdjustment changes it; keep one"
	// +required
	Spec NodeOverlaySpec `json:"spec"`
	// +optional
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlaySpec says which instance types and offerings an overlay applies
// to and what it changes about them.
type NodeOverlaySpec struct {
	// Requirements select the instance types and offerings the overlay
	// applies to. They may name the instance types' well-known labels (for
	// example node.kubernetes.io/instance-type, karpenter.k8s.aws/instance-family,
	// topology.kubernetes.io/zone, karpenter.sh/capacity-type),
	// karpenter.sh/nodepool, and the labels of a NodePool's template. An
	// empty list matches everything.
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)",message="a requirement with operator NotIn needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",message="a requirement with operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",message="a requirement with operator Gt, Lt, Gte or Lte needs exactly one value, a whole number of at least 0"
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// PriceAdjustment changes the price of the matching offerings, by an
	// amount in the offering's currency per hour ("+0.1", "-0.05") or by a
	// percentage ("+10%", "-15%"). A price is never adjusted below 0; a
	// decrease is at most -100%.
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the price of the matching offerings, in the offering's
	// currency per hour (for example "0.25").
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// Capacity adds extended resources to the capacity (and allocatable) of
	// the matching instance types, for example a device that the cloud's
	// instance data does not list. It cannot change cpu, memory,
	// ephemeral-storage or pods.
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",message="capacity may only add extended resources; cpu, memory, ephemeral-storage and pods come from the instance type"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays that match the same offering or resource: the
	// highest weight applies. Without a weight an overlay weighs 0. Two
	// overlays of the same weight that would set the same offering's price,
	// or the same resource, conflict: the one whose name comes later in the
	// alphabet applies, and the other is marked as not validated and applies
	// nowhere.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is a requirement on one instance-type or node
// label.
type NodeSelectorRequirement struct {
	// Key is the label the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule=`self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.find('^([^/]+)').endsWith('karpenter.sh')`,message="keys in the karpenter.sh domain are reserved for stevedore: use karpenter.sh/capacity-type, karpenter.sh/nodepool, or a key in your own domain"
	// +kubebuilder:validation:XValidation:rule=`self != 'kubernetes.io/hostname'`,message="kubernetes.io/hostname cannot be required: an overlay describes instance types, which have no host name"
	// +required
	Key string `json:"key"`
	// Operator relates the label's value to Values: In, NotIn, Exists,
	// DoesNotExist, Gt (greater than), Lt (less than), Gte (greater than or
	// equal) or Lte (less than or equal).
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values are the label values the operator compares with. In and NotIn
	// take a list, Gt, Lt, Gte and Lte a single whole number, Exists and
	// DoesNotExist none.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}
